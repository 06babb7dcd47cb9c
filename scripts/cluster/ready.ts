/**
 * When `up` is done: the started services in the membership, the namespace and the search attributes registered,
 * and a real round trip through every service. `temporal operator cluster health` is not a readiness check: it
 * answers SERVING as soon as the frontend runs, even with no history. Not deterministic: runs the Temporal CLI.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { resolveTemporalCli } from '../../src/devserver/binaries';
import {
  NAMESPACE,
  NAMESPACE_RETENTION,
  ROLE,
  readyTimeoutSeconds,
  searchAttributes,
  type Service,
  type Settings,
} from './plan';
import { type Pg } from './postgres';
import { ClusterError, elapsed, run, say, tail, waitUntil, type Ran } from './proc';
import { checkAlive, liveRoles } from './services';

/**
 * The Temporal CLI at `address`: the project venv's (`npm run setup`), TEMPORAL_CLI_PATH, or PATH. It ignores the
 * caller's TEMPORAL_* variables and CLI profiles: TEMPORAL_API_KEY or TEMPORAL_TLS_SERVER_NAME meant for another
 * server would otherwise reach this one.
 */
export function temporalCli(s: Settings, address = s.address): (...args: string[]) => Promise<Ran> {
  let found: ReturnType<typeof resolveTemporalCli>;
  try {
    found = resolveTemporalCli({ allowDownload: false, env: s.env, projectRoot: s.root });
  } catch (err) {
    throw new ClusterError((err as Error).message);
  }
  const cli = found.type === 'existing-path' ? found.path : 'temporal';
  const flags = [
    '--address',
    address,
    '--command-timeout',
    '5s',
    '--disable-config-env',
    '--disable-config-file',
  ];
  return (...args) => run(cli, [...args, ...flags]);
}

/** Waits until the services started by this `up` (at `upStarted`) joined the membership: roles alive since then. */
export async function waitJoined(
  s: Settings,
  pg: Pg,
  started: readonly Service[],
  upStarted: number,
  deadline: number,
): Promise<void> {
  const sinceSeconds = Math.floor((Date.now() - upStarted) / 1000) + 2;
  let missing: Service[] = [...started];
  await waitUntil(
    async () => {
      const live = await liveRoles(pg, sinceSeconds);
      missing = started.filter((service) => !live.has(ROLE[service]));
      return missing.length === 0;
    },
    {
      everyMs: 200,
      deadline,
      check: () => checkAlive(s, started),
      timeout: () =>
        new ClusterError(`not in the membership after ${readyTimeoutSeconds(s)} s: ${missing.join(' ')}`),
    },
  );
}

/**
 * Waits for (1) each started process to join the membership, (2) the namespace and search attributes, (3) a round
 * trip through every service: a task queue described (matching) and a probe workflow started, signalled,
 * terminated and deleted (history, matching, persistence), on a task queue no worker polls.
 */
export async function waitReady(
  s: Settings,
  pg: Pg,
  started: readonly Service[],
  upStarted: number,
): Promise<void> {
  const timeout = readyTimeoutSeconds(s);
  const attributes = searchAttributes(s);
  const cli = temporalCli(s);
  const start = Date.now();
  const deadline = start + timeout * 1000;
  const check = () => checkAlive(s, started);
  if (started.length > 0) {
    await waitJoined(s, pg, started, upStarted, deadline);
    say(`membership: ${started.join(' ')} joined (${elapsed(start)})`);
  }

  let last: Ran | undefined;
  await waitUntil(
    async () => {
      if ((await cli('operator', 'namespace', 'describe', '-n', NAMESPACE)).code === 0) return true;
      last = await cli(
        'operator',
        'namespace',
        'create',
        '-n',
        NAMESPACE,
        '--retention',
        NAMESPACE_RETENTION,
      );
      if (last.code !== 0) return false;
      say(`namespace ${NAMESPACE} registered (retention ${NAMESPACE_RETENTION})`);
      return (await cli('operator', 'namespace', 'describe', '-n', NAMESPACE)).code === 0;
    },
    {
      everyMs: 500,
      deadline,
      check,
      timeout: () =>
        new ClusterError(
          `namespace ${NAMESPACE} could not be registered within ${timeout} s: ${output(last)}`,
        ),
    },
  );

  // Retried: right after the namespace is registered, the frontend may not know it yet ("Namespace default is not
  // found") until its namespace cache refreshes.
  const log = path.join(s.logdir, 'search-attributes.log');
  await waitUntil(
    async () => {
      const failed = await registerSearchAttributes(cli, attributes);
      writeFileSync(log, failed ?? '');
      return failed === undefined;
    },
    {
      everyMs: 500,
      deadline,
      check,
      timeout: () =>
        new ClusterError(
          `the search attributes could not be registered within ${timeout} s: ${tail(log, 3)}`,
        ),
    },
  );

  await waitUntil(
    async () => {
      last = await probe(cli);
      return last.code === 0;
    },
    {
      everyMs: 500,
      deadline,
      check,
      timeout: () =>
        new ClusterError(`the cluster did not serve a workflow within ${timeout} s: ${output(last)}`),
    },
  );
  say(`ready: ${s.address} namespace ${NAMESPACE} (${elapsed(start)} of checks)`);
}

const output = (ran: Ran | undefined) => (ran ? (ran.stdout + ran.stderr).trim() : '');

/** Creates the search attributes the namespace lacks; returns the error output of the first failure, if any. */
async function registerSearchAttributes(
  cli: ReturnType<typeof temporalCli>,
  attributes: { name: string; type: string }[],
): Promise<string | undefined> {
  const list = await cli('operator', 'search-attribute', 'list', '-n', NAMESPACE, '-o', 'json');
  if (list.code !== 0) return list.stderr;
  for (const { name, type } of attributes) {
    if (list.stdout.includes(`"${name}"`)) continue;
    const created = await cli(
      'operator',
      'search-attribute',
      'create',
      '-n',
      NAMESPACE,
      '--name',
      name,
      '--type',
      type,
    );
    if (created.code !== 0) return created.stderr;
    say(`search attribute ${name} (${type}) created`);
  }
  return undefined;
}

/**
 * One round trip through every service, on a task queue no worker polls: describe the task queue (matching), then
 * start, signal, terminate and delete a probe workflow (history, matching, persistence). A fresh id per attempt.
 */
async function probe(cli: ReturnType<typeof temporalCli>): Promise<Ran> {
  const id = `cluster-probe-${Date.now()}`;
  const steps = [
    ['task-queue', 'describe', '-n', NAMESPACE, '--task-queue', 'cluster-probe'],
    [
      'workflow',
      'start',
      '-n',
      NAMESPACE,
      '--type',
      'ClusterProbe',
      '--task-queue',
      'cluster-probe',
      '-w',
      id,
    ],
    ['workflow', 'signal', '-n', NAMESPACE, '-w', id, '--name', 'probe'],
    ['workflow', 'terminate', '-n', NAMESPACE, '-w', id, '--reason', 'scripts/cluster.sh readiness probe'],
    ['workflow', 'delete', '-n', NAMESPACE, '-w', id, '--yes'],
  ];
  let ran: Ran = { code: 0, stdout: '', stderr: '' };
  for (const step of steps) {
    ran = await cli(...step);
    if (ran.code !== 0) return ran;
  }
  return ran;
}
