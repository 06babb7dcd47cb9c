/**
 * The Temporal processes of the cluster: their config files (serverConfig.ts), starting each in its own session
 * (it outlives the shell or test that ran `up`), finding them again by pid file, stopping them, and their rows in
 * the `cluster_membership` table. Not deterministic: spawns and signals processes.
 */
import { spawn } from 'node:child_process';
import {
  appendFileSync,
  closeSync,
  mkdirSync,
  openSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { type Pg, query } from './postgres';
import { HOST, SERVICES, type ClusterProcess, type Service, type Settings } from './plan';
import { ClusterError, failIfPortBusy, isAlive, run, say, signal, sleep, tail, waitUntil } from './proc';
import { baseConfig, serviceConfig, yamlFile } from './serverConfig';

export const pidFile = (s: Settings, p: ClusterProcess): string => path.join(s.rundir, `${p}.pid`);
export const logFile = (s: Settings, p: ClusterProcess): string => path.join(s.logdir, `${p}.log`);
/** The Temporal service a process runs: frontend-tls is a frontend with its own config file. */
const roleOf = (p: ClusterProcess): Service => (p === 'frontend-tls' ? 'frontend' : p);

/**
 * config/base.yaml and config/<service>.yaml (rewritten on every `up`), and the dynamic config file checked by the
 * server itself.
 */
export async function writeConfig(s: Settings): Promise<void> {
  mkdirSync(s.confdir, { recursive: true });
  const base = path.join(s.confdir, 'base.yaml');
  writeFileSync(
    `${base}.new`,
    yamlFile(
      `Written by scripts/cluster.sh (rewritten on every up): Temporal v1.32.0's config/development-postgres12.yaml with this cluster's ports, PostgreSQL, dynamic config and public client.`,
      baseConfig(s),
    ),
  );
  renameSync(`${base}.new`, base);
  for (const service of SERVICES)
    writeFileSync(
      path.join(s.confdir, `${service}.yaml`),
      yamlFile(
        `Written by scripts/cluster.sh: what differs for the ${service} process (merged over base.yaml).`,
        serviceConfig(s, service),
      ),
    );
  mkdirSync(s.logdir, { recursive: true });
  const check = await run(s.serverBin, ['validate-dynamic-config', s.dynamicConfig]);
  writeFileSync(path.join(s.logdir, 'dynamicconfig.log'), check.stdout + check.stderr);
  if (check.code !== 0) {
    process.stderr.write(check.stdout + check.stderr);
    throw new ClusterError(`${s.dynamicConfig} is not valid dynamic config`);
  }
}

/**
 * The pid of a process we started and that still runs (the pid file's process runs our server binary with this
 * process's config file and role; a stale or reused pid is left alone), or undefined.
 */
export function servicePid(s: Settings, p: ClusterProcess): number | undefined {
  try {
    const text = readFileSync(pidFile(s, p), 'utf8').trim();
    if (!/^[0-9]+$/.test(text)) return undefined;
    if (readlinkSync(`/proc/${text}/exe`) !== realpathSync(s.serverBin)) return undefined;
    const cmdline = readFileSync(`/proc/${text}/cmdline`, 'utf8').replaceAll('\0', ' ');
    if (!cmdline.includes(` --env ${p} `) || !cmdline.includes(` --service=${roleOf(p)}`)) return undefined;
    return Number(text);
  } catch {
    return undefined;
  }
}

/** Starts one process in its own session, output appended to logs/<process>.log, pid in run/<process>.pid. */
export async function startService(s: Settings, p: ClusterProcess): Promise<number> {
  const ports = s.plan.processes[p];
  for (const port of [ports.grpc, ports.membership]) await failIfPortBusy(port, p);
  const log = logFile(s, p);
  rmSync(pidFile(s, p), { force: true });
  appendFileSync(
    log,
    `--- ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')} started by scripts/cluster.sh\n`,
  );
  const out = openSync(log, 'a');
  // Global flags go before `start` (after it they are ignored, and the server exits 0).
  const args = [
    '--root',
    s.dir,
    '--config',
    'config',
    '--env',
    p,
    '--allow-no-auth',
    'start',
    `--service=${roleOf(p)}`,
  ];
  const child = spawn(s.serverBin, args, { cwd: s.dir, detached: true, stdio: ['ignore', out, out] });
  closeSync(out);
  child.once('error', () => undefined);
  child.unref();
  if (child.pid === undefined) throw new ClusterError(`${p} did not start (log: ${log})`);
  writeFileSync(pidFile(s, p), `${child.pid}\n`);
  return child.pid;
}

/** SIGTERM, then wait; SIGKILL after 30 s. */
export async function stopPid(pid: number, what: string): Promise<void> {
  if (!signal(pid, 'SIGTERM')) return;
  for (let tries = 1; isAlive(pid); tries++) {
    if (tries === 300) {
      say(`${what} (pid ${pid}) did not stop within 30 s: SIGKILL`);
      signal(pid, 'SIGKILL');
    }
    await sleep(100);
  }
}

/** Fails, with the end of its log, when a process this command started has exited. */
export function checkAlive(s: Settings, started: readonly ClusterProcess[]): void {
  for (const p of started) {
    if (servicePid(s, p) !== undefined) continue;
    process.stderr.write(tail(logFile(s, p), 20));
    throw new ClusterError(`${p} exited (log: ${logFile(s, p)})`);
  }
}

/**
 * Starts each service that does not run; returns those it started. On a fresh database every process tries to
 * insert the cluster's metadata row at start, and all but one fail ("Failed to apply cluster metadata", exit): the
 * first process writes it alone, the others start after.
 */
export async function servicesUp(s: Settings, pg: Pg): Promise<Service[]> {
  mkdirSync(s.rundir, { recursive: true });
  mkdirSync(s.logdir, { recursive: true });
  const started: Service[] = [];
  for (const service of SERVICES) {
    const running = servicePid(s, service);
    if (running !== undefined) {
      say(`${service}: running (pid ${running})`);
      continue;
    }
    const pid = await startService(s, service);
    started.push(service);
    say(
      `${service}: started (pid ${pid}, grpc ${HOST}:${s.plan.processes[service].grpc}, log ${logFile(s, service)})`,
    );
    await waitUntil(
      async () =>
        Number((await query(pg, 'temporal', 'SELECT count(*) FROM cluster_metadata_info')) ?? 0) > 0,
      {
        everyMs: 100,
        deadline: Date.now() + 60_000,
        check: () => {
          if (servicePid(s, service) !== undefined) return;
          process.stderr.write(tail(logFile(s, service), 20));
          throw new ClusterError(
            `${service} exited before it wrote the cluster metadata (log: ${logFile(s, service)})`,
          );
        },
        timeout: () =>
          new ClusterError(
            `${service} did not write the cluster metadata within 60 s (log: ${logFile(s, service)})`,
          ),
      },
    );
  }
  return started;
}

/**
 * Membership roles (1 frontend … 4 worker) with a heartbeat in the last 20 s (the server's own health cutoff) and a
 * session that began at most `sinceSeconds` ago.
 */
export async function liveRoles(pg: Pg, sinceSeconds: number): Promise<Set<number>> {
  const roles = await query(
    pg,
    'temporal',
    `SELECT string_agg(DISTINCT role::text, ',' ORDER BY role::text) FROM cluster_membership
     WHERE last_heartbeat > (now() AT TIME ZONE 'UTC') - interval '20 seconds'
       AND session_start >= (now() AT TIME ZONE 'UTC') - interval '1 second' * ${sinceSeconds}`,
  );
  return new Set((roles ?? '').split(',').filter(Boolean).map(Number));
}
