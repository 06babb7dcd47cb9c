/**
 * The cluster tool's commands (run as `bash scripts/cluster.sh COMMAND`, which compiles this folder and runs it with
 * node): a real Temporal cluster on this machine, the way production runs one: PostgreSQL 15 and Temporal server
 * v1.32.0 (built from the Go module proxy), with frontend, history, matching and worker as four separate processes.
 * Everything it writes lives in one git-ignored folder (.data/cluster/), except PostgreSQL's data when PostgreSQL's
 * user cannot enter that folder (dataFolder.ts); the Go build lives in a cache outside the clone, so a second clone
 * on the same machine reuses it. docs/operations.md describes every step.
 */
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { findProjectRoot } from '../../src/devserver/binaries';
import { binariesReady, build } from './build';
import {
  envLines,
  HOST,
  NAMESPACE,
  POSTGRES_MAJOR,
  PROCESSES,
  SERVICES,
  settingsFrom,
  TEMPORAL_SERVER_VERSION,
} from './plan';
import type { ClusterProcess, Settings } from './plan';
import { findPostgres, pgRunning, postgresDown, postgresUp, restartPostgres, schemaUp } from './postgres';
import { ClusterError, elapsed, isAlive, run, say, signal, sleep, UsageError } from './proc';
import { temporalCli, waitReady } from './ready';
import { logFile, pidFile, servicePid, servicesUp, stopPid, writeConfig } from './services';
import { parseTlsStart, TLS_USAGE, tlsFrontendStart, tlsFrontendStop } from './tlsFrontend';

const USAGE = `\
usage: scripts/cluster.sh COMMAND

  up        build if needed, start what is not running, wait until the cluster serves (idempotent)
  down      stop what \`up\` started (by pid files), PostgreSQL last; PostgreSQL's data is kept,
            unless it lives outside the state folder (then it is deleted)
  status    one line per part; exit 0 when every part runs, 1 otherwise
  env       the cluster's address, ports and versions as KEY=VALUE lines (no side effects)
  build     only the Go build (or check that it is cached)
  kill SERVICE        SIGKILL one Temporal service (fault tests; \`up\` starts it again)
  restart-postgres    \`pg_ctl restart -m immediate\` (fault tests)
  tls-frontend start CERT_DIR [--client-auth] [--jwks URL]
                      (re)start a fifth process: a frontend of the same cluster that serves TLS on its own port
                      (CERT_DIR: ca.pem, server.pem, server-key.pem; with --client-auth it requires client
                      certificates signed by ca.pem (mTLS) and probes with client.pem/client-key.pem; with --jwks it
                      checks API keys: JWTs signed by a key of that JWKS); \`tls-frontend stop\` or \`down\` stops it

Environment knobs:
  AGENT_SESSIONS_CACHE               cache folder outside the clone (default ~/.cache/agent-sessions); the Go
                                     build goes to <cache>/go (GOPATH, GOCACHE, GOMODCACHE)
  AGENT_SESSIONS_CLUSTER_DIR         state folder: PostgreSQL data, config, logs, pid files (default .data/cluster);
                                     PostgreSQL's data moves to /var/tmp when its user cannot enter this folder
  AGENT_SESSIONS_CLUSTER_PORT_OFFSET added to Temporal's and PostgreSQL's standard ports (default 10000:
                                     frontend 17233, PostgreSQL 15432); keeps clear of a dev server on 7233 and
                                     of the ports the OS hands out to tests (32768 and up)
  AGENT_SESSIONS_CLUSTER_SEARCH_ATTRIBUTES  extra search attributes to register, "Name=Type,Name=Type"
  AGENT_SESSIONS_CLUSTER_READY_TIMEOUT      seconds \`up\` waits for the cluster to serve (default 120)
  AGENT_SESSIONS_PG_BIN              folder of initdb/pg_ctl/psql (default /usr/lib/postgresql/15/bin, then PATH)
  TEMPORAL_CLI_PATH                  the Temporal CLI used for namespace, search attributes and probes (default the
                                     project venv's, installed by \`npm run setup\`, then PATH)
`;

/** Set (to the state folder) in the re-run of a command under the state folder's lock. */
const LOCK_HELD = 'AGENT_SESSIONS_CLUSTER_LOCK_HELD';

/**
 * `up`, `down` and `tls-frontend` hold <state>/.lock, so two of them never interleave: the command runs again under
 * flock(1), which holds the lock without handing it to the processes the command starts (-o). Returns the exit
 * code of that run, or undefined when this is that run.
 */
async function underLock(s: Settings, argv: readonly string[]): Promise<number | undefined> {
  if (process.env[LOCK_HELD] === s.dir) return undefined;
  mkdirSync(s.dir, { recursive: true });
  const lock = path.join(s.dir, '.lock');
  const ran = await run(
    'flock',
    ['-o', '-w', '600', '-E', '75', lock, process.execPath, __filename, ...argv],
    {
      env: { ...process.env, [LOCK_HELD]: s.dir },
      stdout: 'inherit',
      stderr: 'inherit',
    },
  );
  if (ran.code === 75)
    throw new ClusterError(`another scripts/cluster.sh up or down has held ${lock} for 10 minutes`);
  return ran.code;
}

async function up(s: Settings): Promise<number> {
  const start = Date.now();
  await build(s);
  const pg = await postgresUp(s);
  await schemaUp(pg);
  await writeConfig(s);
  const started = await servicesUp(s, pg);
  await waitReady(s, pg, started, start);
  say(`up in ${elapsed(start)}: TEMPORAL_ADDRESS=${s.address} (scripts/cluster.sh down stops it)`);
  return 0;
}

async function down(s: Settings): Promise<number> {
  const running: [ClusterProcess, number][] = [];
  for (const p of ['frontend-tls', ...SERVICES] as const) {
    const pid = servicePid(s, p);
    if (pid !== undefined) running.push([p, pid]);
    else if (rmIfExists(pidFile(s, p))) say(`${p}: not running (stale pid file removed)`);
  }
  for (const [, pid] of running) signal(pid, 'SIGTERM');
  for (const [p, pid] of running) {
    await stopPid(pid, p);
    rmSync(pidFile(s, p), { force: true });
    say(`${p}: stopped (pid ${pid})`);
  }
  const pg = await findPostgres(s);
  const kept = pg ? await postgresDown(pg) : `data kept in ${s.dir}; delete that folder for a fresh cluster`;
  say(`down (${kept})`);
  return 0;
}

function rmIfExists(file: string): boolean {
  try {
    rmSync(file);
    return true;
  } catch {
    return false;
  }
}

async function status(s: Settings): Promise<number> {
  let ok = true;
  const pg = await findPostgres(s);
  if (!pg) {
    say(`postgres: PostgreSQL ${POSTGRES_MAJOR} not installed`);
    ok = false;
  } else if (await pgRunning(pg)) {
    const version = (await run(path.join(pg.bin, 'postgres'), ['--version'])).stdout.trim();
    say(`postgres: running on ${HOST}:${s.plan.postgres}, data ${pg.loc.data} (${version})`);
  } else {
    say(`postgres: stopped (data ${pg.loc.data})`);
    ok = false;
  }
  for (const service of SERVICES) {
    const pid = servicePid(s, service);
    if (pid === undefined) {
      say(`${service}: stopped`);
      ok = false;
    } else
      say(
        `${service}: running, pid ${pid}, grpc ${HOST}:${s.plan.processes[service].grpc}, log ${logFile(s, service)}`,
      );
  }
  // Optional: not part of the exit status.
  const tlsPid = servicePid(s, 'frontend-tls');
  if (tlsPid !== undefined)
    say(`frontend-tls: running, pid ${tlsPid}, grpc+TLS ${s.tlsAddress}, log ${logFile(s, 'frontend-tls')}`);
  if (await binariesReady(s)) say(`binaries: Temporal server v${TEMPORAL_SERVER_VERSION} in ${s.bindir}`);
  else say('binaries: not built (scripts/cluster.sh build)');
  if (ok) {
    if ((await temporalCli(s)('operator', 'namespace', 'describe', '-n', NAMESPACE)).code === 0)
      say(`frontend: answers at ${s.address}, namespace ${NAMESPACE} registered`);
    else {
      say(`frontend: does not answer at ${s.address} (or namespace ${NAMESPACE} is missing)`);
      ok = false;
    }
  }
  return ok ? 0 : 1;
}

/** SIGKILL one process (fault tests); `up` starts it again. */
async function kill(s: Settings, p: string | undefined): Promise<number> {
  const target = PROCESSES.find((name) => name === p);
  if (!target) throw new ClusterError(`kill takes one of: ${PROCESSES.join(' ')}`);
  const pid = servicePid(s, target);
  if (pid === undefined) throw new ClusterError(`${target} is not running`);
  signal(pid, 'SIGKILL');
  while (isAlive(pid)) await sleep(50);
  say(`${target}: killed (SIGKILL, pid ${pid}); scripts/cluster.sh up starts it again`);
  return 0;
}

async function main(argv: string[]): Promise<number> {
  const root = findProjectRoot(__dirname);
  if (!root) throw new ClusterError(`no agent-sessions project above ${__dirname}`);
  const s = settingsFrom(process.env, root);
  const [command, ...args] = argv;
  switch (command) {
    case 'up':
      return (await underLock(s, argv)) ?? (await up(s));
    case 'down':
      return (await underLock(s, argv)) ?? (await down(s));
    case 'status':
      return status(s);
    case 'env':
      console.log(envLines(s).join('\n'));
      return 0;
    case 'build':
      await build(s);
      return 0;
    case 'kill':
      return kill(s, args[0]);
    case 'restart-postgres': {
      const pg = await findPostgres(s);
      if (!pg) throw new ClusterError(`PostgreSQL ${POSTGRES_MAJOR} not found`);
      await restartPostgres(pg);
      return 0;
    }
    case 'tls-frontend':
      if (args[0] === 'start') {
        const tls = parseTlsStart(args.slice(1));
        return (await underLock(s, argv)) ?? (await tlsFrontendStart(s, tls), 0);
      }
      if (args[0] === 'stop') return (await underLock(s, argv)) ?? (await tlsFrontendStop(s), 0);
      throw new ClusterError(TLS_USAGE);
    default:
      process.stderr.write(USAGE);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof ClusterError) {
      console.error(err instanceof UsageError ? `cluster: ${err.message}` : `cluster: error: ${err.message}`);
      process.exit(err.exitCode);
    }
    console.error(err);
    process.exit(1);
  },
);
