/**
 * Starting the Temporal CLI dev server (`temporal server start-dev`) on 127.0.0.1 with a SQLite file, so workflows
 * survive a server restart. Not deterministic (processes, sockets, files); never import from workflow code. Importing
 * this module does no I/O.
 *
 * Two ways:
 * - `startDevServer`: through `@temporalio/testing`'s `TestWorkflowEnvironment.createLocal`. The SDK gives the server
 *   about 5 s to accept connections and kills it with SIGKILL on `stop()`.
 * - `spawnDevServer`: a plain child process we own, with its own readiness wait (connect and describe the namespace
 *   until it works) and `stop({signal})`, so tests can SIGKILL it and start it again on the same file and port.
 */
import { SEARCH_ATTRIBUTE_FLAGS } from '../contract/searchAttributes';
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { resolveTemporalCli, type ResolvedExecutable } from './binaries';

/** Dynamic config the SDK itself passes to the dev server (updates enabled, no version check). */
export const DEV_SERVER_DYNAMIC_CONFIG: readonly string[] = [
  'frontend.enableServerVersionCheck=false',
  'frontend.enableUpdateWorkflowExecution=true',
  'frontend.enableUpdateWorkflowExecutionAsyncAccepted=true',
];

/**
 * Settings a single machine wants (docs/operations.md has the figures): the history service's transfer queue polls
 * at most ~20 times a second per shard by default, so once its burst is spent every workflow task of a busy session
 * waits ~33 ms for it; at 1000 a step's latency stays flat (measured: 5.3 → 14.6 steps/s for one session).
 */
export const DEV_SERVER_TUNING: readonly string[] = ['history.transferProcessorMaxPollRPS=1000'];

export const DEFAULT_DB_BASENAME = 'temporal.sqlite';

/** The dev server binds to loopback only. */
const HOST = '127.0.0.1';

export interface DevServerOptions {
  /** Folder of the SQLite file `temporal.sqlite` (created if missing). Default `.data` under the working folder. */
  dataDir?: string;
  /** Exact SQLite file; overrides `dataDir`. */
  dbFilename?: string;
  /** gRPC port; default a free port. */
  port?: number;
  /** Namespace created at start (`default` always exists). Default `default`. */
  namespace?: string;
  /** Serve the Web UI on this port. Without it the server is headless. */
  uiPort?: number;
  /** The CLI binary; default `resolveTemporalCli()`. */
  executable?: ResolvedExecutable;
}

export interface EmbeddedDevServer {
  /** host:port for clients and workers. */
  address: string;
  namespace: string;
  dbFilename: string;
  uiUrl?: string;
  /** The SDK environment: `client`, `connection` and `nativeConnection` to this server. */
  env: TestWorkflowEnvironment;
  /** Kills the server (SIGKILL, by the SDK) and closes the connections. */
  stop(): Promise<void>;
}

/** SQLite path for options, creating its folder. */
export function devServerDbFilename(options: Pick<DevServerOptions, 'dataDir' | 'dbFilename'> = {}): string {
  const file = path.resolve(options.dbFilename ?? path.join(options.dataDir ?? '.data', DEFAULT_DB_BASENAME));
  mkdirSync(path.dirname(file), { recursive: true });
  return file;
}

/**
 * Starts the dev server through the SDK. Throws when the CLI cannot be found (see `resolveTemporalCli`) or the server
 * does not accept connections within the SDK's wait.
 */
export async function startDevServer(options: DevServerOptions = {}): Promise<EmbeddedDevServer> {
  const dbFilename = devServerDbFilename(options);
  const namespace = options.namespace ?? 'default';
  const env = await startingAgain(3, () =>
    TestWorkflowEnvironment.createLocal({
      server: {
        executable: options.executable ?? resolveTemporalCli(),
        dbFilename,
        ip: HOST,
        port: options.port,
        namespace,
        ...(options.uiPort !== undefined ? { ui: true, uiPort: options.uiPort } : { ui: false }),
      },
    }),
  );
  return {
    address: env.address,
    namespace,
    dbFilename,
    ...(options.uiPort !== undefined ? { uiUrl: `http://${HOST}:${options.uiPort}` } : {}),
    env,
    stop: () => env.teardown(),
  };
}

export interface SpawnDevServerOptions extends DevServerOptions {
  /** Keep workflows in memory only (no SQLite file). Default false. */
  inMemory?: boolean;
  /** Extra dynamic config values (`key=json`), e.g. `limit.historySize.error=209715200`. */
  dynamicConfig?: readonly string[];
  /** How long to wait for the server to answer. Default 30 s. */
  readyTimeoutMs?: number;
  /** Port of the HTTP API; default a free port. */
  httpPort?: number;
  /**
   * Starts when the server exits before it is ready. Each start after the first takes fresh free ports where the
   * caller fixed none: between our choice of a free port and the server's bind, another process may take it (the
   * server then fails to listen, or panics doing so). Default 3.
   */
  attempts?: number;
  /** Chooses a free port (tests use it to hand out a taken one). Default: the OS picks one. */
  pickPort?: () => Promise<number>;
}

export type DevServerExit = { code: number | null; signal: NodeJS.Signals | null };

export interface DevServerProcess {
  address: string;
  port: number;
  namespace: string;
  dbFilename?: string;
  pid: number;
  /** Resolves when the process has exited. */
  exited: Promise<DevServerExit>;
  /** The last output of the server (stdout and stderr), for error messages. */
  output(): string;
  /**
   * Stops the server with `signal` (default SIGTERM) and resolves once it has exited. After `timeoutMs`
   * (default 10 s) without exit, SIGKILL follows.
   */
  stop(options?: { signal?: 'SIGTERM' | 'SIGKILL'; timeoutMs?: number }): Promise<void>;
}

/**
 * Spawns `temporal server start-dev` as a child process and waits until the namespace answers. Throws when the port
 * is already taken, and with the server's output when it exits early on every attempt (see `attempts`) or is not
 * ready within `readyTimeoutMs` (the process is killed then). The child is SIGKILLed if this Node process exits
 * first.
 */
export async function spawnDevServer(options: SpawnDevServerOptions = {}): Promise<DevServerProcess> {
  const executable = options.executable ?? resolveTemporalCli({ allowDownload: false });
  if (executable.type !== 'existing-path') {
    throw new Error('spawnDevServer needs an existing Temporal CLI binary (run `npm run setup`)');
  }
  const pickPort = options.pickPort ?? getFreePort;
  const attempts = options.port !== undefined && options.httpPort !== undefined ? 1 : (options.attempts ?? 3);
  for (let attempt = 1; ; attempt++) {
    const port = options.port ?? (await pickPort());
    // Otherwise the readiness probe could talk to whatever already listens there.
    if (await canConnect(port)) {
      if (options.port === undefined && attempt < attempts) continue;
      throw new Error(`cannot start the temporal dev server: ${HOST}:${port} is in use`);
    }
    const httpPort = options.httpPort ?? (await pickPort());
    try {
      return await spawnOnce(options, executable.path, port, httpPort);
    } catch (err) {
      if (!(err instanceof EarlyExit) || attempt >= attempts) {
        if (attempt === 1) throw err;
        throw new Error(`attempt ${attempt} of ${attempts}: ${(err as Error).message}`);
      }
    }
  }
}

/** The server exited before it was ready (its output in the message). */
class EarlyExit extends Error {}

async function spawnOnce(
  options: SpawnDevServerOptions,
  executablePath: string,
  port: number,
  httpPort: number,
): Promise<DevServerProcess> {
  const namespace = options.namespace ?? 'default';
  const dbFilename = options.inMemory ? undefined : devServerDbFilename(options);
  const args = ['server', 'start-dev', '--ip', HOST, '--port', String(port), '--namespace', namespace];
  args.push('--http-port', String(httpPort));
  args.push('--log-format', 'text', '--log-level', 'warn');
  for (const value of [...DEV_SERVER_DYNAMIC_CONFIG, ...DEV_SERVER_TUNING, ...(options.dynamicConfig ?? [])])
    args.push('--dynamic-config-value', value);
  // The session search attributes, so `agent-sessions list` and the Temporal UI can find sessions.
  for (const flag of SEARCH_ATTRIBUTE_FLAGS) args.push('--search-attribute', flag);
  if (dbFilename) args.push('--db-filename', dbFilename);
  if (options.uiPort !== undefined) args.push('--ui-port', String(options.uiPort));
  else args.push('--headless');

  const child = spawn(executablePath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let tail = '';
  // A Go crash prints its reason first and then every goroutine's stack, which pushes the reason out of the tail:
  // the first such reason is kept apart.
  let crash = '';
  const keep = (chunk: Buffer | string) => {
    const text = chunk.toString();
    if (!crash) {
      const at = text.search(/^(panic|fatal error): /m);
      if (at >= 0) crash = text.slice(at, at + 4_000);
    }
    tail = (tail + text).slice(-8_000);
  };
  const output = () => (crash && !tail.includes(crash) ? `${crash}\n…\n${tail}` : tail);
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  let exitInfo: DevServerExit | undefined;
  const exited = new Promise<DevServerExit>((resolve) => {
    const finish = (info: DevServerExit) => {
      process.removeListener('exit', killOnExit);
      resolve((exitInfo ??= info));
    };
    child.once('exit', (code, signal) => finish({ code, signal }));
    child.once('error', (err) => {
      keep(`${err.message}\n`);
      finish({ code: null, signal: null });
    });
  });

  const stop: DevServerProcess['stop'] = async ({ signal = 'SIGTERM', timeoutMs = 10_000 } = {}) => {
    if (exitInfo) return;
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    await exited;
    clearTimeout(timer);
  };

  const address = `${HOST}:${port}`;
  try {
    await waitUntilReady(port, namespace, options.readyTimeoutMs ?? 30_000, () => exitInfo);
  } catch (err) {
    const early = exitInfo !== undefined;
    await stop({ signal: 'SIGKILL' });
    const message = `${(err as Error).message}\n--- temporal server output ---\n${output()}`;
    throw early ? new EarlyExit(message) : new Error(message);
  }
  return {
    address,
    port,
    namespace,
    ...(dbFilename ? { dbFilename } : {}),
    pid: child.pid ?? -1,
    exited,
    output,
    stop,
  };
}

/** Polls until `namespace` answers DescribeNamespace on the port. Throws on timeout or when the process exits. */
async function waitUntilReady(
  port: number,
  namespace: string,
  timeoutMs: number,
  exitInfo: () => DevServerExit | undefined,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError = 'the port never accepted connections';
  while (Date.now() < deadline) {
    const exit = exitInfo();
    if (exit) {
      throw new Error(
        `temporal dev server exited before it was ready (code ${exit.code}, signal ${exit.signal})`,
      );
    }
    // A plain TCP probe first: a gRPC channel that meets a closed port backs off for a second before retrying.
    if (await canConnect(port)) {
      let connection: Connection | undefined;
      try {
        connection = await Connection.connect({ address: `${HOST}:${port}`, connectTimeout: 2_000 });
        await connection.workflowService.describeNamespace({ namespace });
        return;
      } catch (err) {
        lastError = (err as Error).message;
      } finally {
        await connection?.close();
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`temporal dev server on ${HOST}:${port} was not ready after ${timeoutMs} ms: ${lastError}`);
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: HOST, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** A TCP port that was free on 127.0.0.1 a moment ago (the OS picks it). */
export function getFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, HOST, () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Runs `start` up to `attempts` times until it succeeds. The SDK chooses a free port and hands it to the server, which
 * fails to start when another process has taken it in between (or one of the ports the server picks itself): the
 * next start chooses again.
 */
export async function startingAgain<T>(attempts: number, start: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (err) {
      if (attempt >= attempts) throw err;
    }
  }
}
