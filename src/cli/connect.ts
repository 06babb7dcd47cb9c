/**
 * How client commands reach Temporal. Address: `--address`, else TEMPORAL_ADDRESS, else the address file of a running
 * `agent-sessions dev` in the data folder, else 127.0.0.1:7233. Namespace and task queue likewise from
 * `--namespace` / TEMPORAL_NAMESPACE and `--task-queue` / TASK_QUEUE (or the running dev's). Nothing listening gives
 * a one-line error that says what to start. With an encryption key configured (AGENT_SESSIONS_ENCRYPTION_KEY), the
 * client encrypts what it sends and decrypts what it reads, like the workers.
 */
import net from 'node:net';
import { Connection } from '@temporalio/client';
import { SessionClient } from '../client';
import { encryptionDataConverter } from '../codec';
import { clientTracingInterceptors, startTracing } from '../telemetry';
import { connectionOptions, loadConfig, tlsHint, type Config } from '../worker/config';
import { stringOpt, type OptionSpec, type Parsed } from './args';
import { readDevFile } from './devfile';
import { CliError } from './errors';

export const DEFAULT_ADDRESS = '127.0.0.1:7233';

/** The connection options every client command accepts. */
export const CONNECTION_OPTIONS: OptionSpec = {
  address: { type: 'string' },
  namespace: { type: 'string' },
  'task-queue': { type: 'string' },
};

export const CONNECTION_HELP = [
  'connection:',
  '  --address HOST:PORT   Temporal frontend (env TEMPORAL_ADDRESS; default: a running `agent-sessions dev`, else 127.0.0.1:7233)',
  '  --namespace NAME      Temporal namespace (env TEMPORAL_NAMESPACE; default "default")',
  '  --task-queue NAME     task queue of new sessions (env TASK_QUEUE; default: a running `agent-sessions dev`\'s, else "agent-sessions")',
].join('\n');

export interface Target {
  address: string;
  namespace: string;
  taskQueue: string;
  /** Where the address came from, for error messages. */
  from: 'flag' | 'env' | 'dev' | 'default';
  config: Config;
}

/**
 * Resolves where to connect. `devTaskQueue: false` keeps the task queue of a running dev out (the `worker` command:
 * a worker of one's own next to `agent-sessions dev` must not poll the dev chat's queue with other tools). Throws an
 * Error naming a bad environment variable.
 */
export function resolveTarget(
  p: Parsed,
  env: NodeJS.ProcessEnv = process.env,
  opts: { devTaskQueue?: boolean } = {},
): Target {
  const config = loadConfig(env);
  const flag = stringOpt(p, 'address');
  const dev = flag || config.address ? undefined : readDevFile(config.dataDir);
  const address = flag ?? config.address ?? dev?.address ?? DEFAULT_ADDRESS;
  const from = flag ? 'flag' : config.address ? 'env' : dev ? 'dev' : 'default';
  const namespace =
    stringOpt(p, 'namespace') ??
    (env.TEMPORAL_NAMESPACE?.trim() ? config.namespace : (dev?.namespace ?? config.namespace));
  const devQueue = opts.devTaskQueue === false ? undefined : dev?.taskQueue;
  const taskQueue =
    stringOpt(p, 'task-queue') ??
    (env.TASK_QUEUE?.trim() ? config.taskQueue : (devQueue ?? config.taskQueue));
  return { address, namespace, taskQueue, from, config };
}

/** Connects a SessionClient; the caller closes `connection`. Throws CliError when nothing answers at the address. */
export async function connectSessions(
  target: Target,
): Promise<{ sessions: SessionClient; close(): Promise<void> }> {
  await probe(target);
  const connection = await Connection.connect(connectionOptions(target.config, target.address)).catch(
    (err: unknown) => {
      throw new CliError(handshakeProblem(target, err));
    },
  );
  // With OTEL_* set, client calls start traces that the workers continue (docs/observability.md).
  const tracing = startTracing('agent-sessions-cli');
  const sessions = new SessionClient({
    connection,
    namespace: target.namespace,
    taskQueue: target.taskQueue,
    ...(target.config.encryption ? { dataConverter: encryptionDataConverter(target.config.encryption) } : {}),
    ...(tracing ? { interceptors: clientTracingInterceptors(tracing) } : {}),
  });
  return {
    sessions,
    async close() {
      await connection.close();
      await tracing?.shutdown();
    },
  };
}

/** A TCP probe, so a missing server is reported at once instead of after the gRPC client's retries. */
async function probe(target: Target): Promise<void> {
  const { host, port } = splitAddress(target.address);
  const problem = await new Promise<string | undefined>((resolve) => {
    const socket = net.connect({ host, port });
    const done = (p: string | undefined) => {
      socket.destroy();
      resolve(p);
    };
    socket.setTimeout(3_000, () => done('timed out'));
    socket.once('connect', () => done(undefined));
    socket.once('error', (err: NodeJS.ErrnoException) =>
      done(err.code === 'ECONNREFUSED' ? 'connection refused' : err.message),
    );
  });
  if (!problem) return;
  const hint =
    target.from === 'default'
      ? 'start one with `agent-sessions dev` (or `npm start`), or set TEMPORAL_ADDRESS'
      : target.from === 'dev'
        ? 'the `agent-sessions dev` that wrote it may have stopped'
        : `check ${target.from === 'flag' ? '--address' : 'TEMPORAL_ADDRESS'}`;
  throw new CliError(`cannot reach Temporal at ${target.address} (${problem}): ${hint}`);
}

/** Why a connection to an address that accepts TCP failed, and what to check (./worker/config.ts tlsHint). */
function handshakeProblem(target: Target, err: unknown): string {
  const why = err instanceof Error ? err.message : String(err);
  return `cannot connect to Temporal at ${target.address}: it accepts connections but did not complete a Temporal (gRPC) handshake (${why}); ${tlsHint(target.config)}`;
}

function splitAddress(address: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(address);
  if (!m) throw new CliError(`invalid Temporal address "${address}": write host:port`);
  return { host: m[1] ?? m[2] ?? '127.0.0.1', port: Number(m[3]) };
}

/** Runs `fn` with a connected client and closes the connection afterwards. */
export async function withSessions<T>(
  p: Parsed,
  fn: (sessions: SessionClient, target: Target) => Promise<T>,
): Promise<T> {
  const target = resolveTarget(p);
  const { sessions, close } = await connectSessions(target);
  try {
    return await fn(sessions, target);
  } finally {
    await close();
  }
}
