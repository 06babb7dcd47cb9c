/**
 * The `agent-sessions dev` program: the embedded Temporal dev server on its SQLite file (our own child process from
 * the project's Temporal CLI binary), or the server at TEMPORAL_ADDRESS / --address; an in-process worker with the
 * testing and demo toolsets on the dev chat's own task queue (./devSession.ts); and the interactive chat on one
 * session (default `demo`), answered by the local model when no provider key is set (src/cli/demo.ts). Quitting
 * leaves the session in the SQLite file; running again resumes it. SDK logs go to `<data dir>/dev.log`, not to the
 * screen.
 */
import { createWriteStream, mkdirSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import {
  DefaultLogger,
  makeTelemetryFilterString,
  NativeConnection,
  Runtime,
  type Worker,
} from '@temporalio/worker';
import { SessionClient } from '../client';
import { resolveTemporalCli, spawnDevServer, startDevServer, type DevServerOptions } from '../devserver';
import { runSetup, setupTarget } from '../devserver/setup';
import {
  connectWorker,
  createSessionWorker,
  hooksFromFile,
  localModelStatus,
  McpTools,
  mcpServersFromFile,
  modelsFromConfig,
  resultCapsFromConfig,
  preloadLocalModel,
  toolsFromToolsets,
} from '../worker';
import { encryptionDataConverter } from '../codec';
import { clientTracingInterceptors, startTracing } from '../telemetry';
import { connectionOptions, loadConfig } from '../worker/config';
import { runChat } from './chat';
import { out } from './command';
import { demoConfig, demoModel, describeModel } from './demo';
import { PREFERRED_PORT, removeDevFile, writeDevFile } from './devfile';
import { devTaskQueue, ensureSession, findSession } from './devSession';
import { useColor } from './tty';

export interface DevOptions {
  sessionId: string;
  dataDir?: string;
  port?: number;
  uiPort?: number;
  address?: string;
}

/** Runs dev until the chat ends; returns the exit code. */
export async function runDev(opts: DevOptions, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const { sessionId, port, uiPort } = opts;
  const config = loadConfig(env);
  const dataDir = path.resolve(opts.dataDir ?? config.dataDir);
  const address = opts.address ?? config.address;
  // The worker's providers, default model and hooks come from the environment, as for `agent-sessions worker`.
  const models = modelsFromConfig(config);
  const hooks = config.hooksFile ? hooksFromFile(config.hooksFile) : [];
  const tools = toolsFromToolsets(['testing', 'demo']);
  // MCP servers of AGENT_SESSIONS_MCP_FILE: the worker offers their tools, and the start lists them.
  const mcp = config.mcpFile
    ? new McpTools(
        mcpServersFromFile(config.mcpFile, env),
        tools.map((t) => t.name),
      )
    : undefined;
  // First use of the embedded server: install the Temporal CLI and the local model (never done by an install script).
  if (!address) await setupOnFirstUse();
  const available = ['scripted', ...Object.keys(models.providers)];
  // With no provider key the demo runs the local model when setup installed it (or LOCAL_MODEL_PATH) and
  // node-llama-cpp, the package's optional peer, is installed to run it.
  const local = localModelStatus(config);
  const localInstalled = local.installed && local.runtime;
  const model = demoModel(env, available, localInstalled);
  mkdirSync(dataDir, { recursive: true });
  installQuietRuntime(path.join(dataDir, 'dev.log'));

  const cleanup: Array<() => Promise<void>> = [];
  // Encrypted history and tracing, as the environment configures them for the worker and the CLI.
  const tracing = startTracing('agent-sessions-dev', env);
  const clientExtras = {
    ...(config.encryption ? { dataConverter: encryptionDataConverter(config.encryption) } : {}),
    ...(tracing ? { interceptors: clientTracingInterceptors(tracing) } : {}),
  };
  if (tracing) cleanup.push(() => tracing.shutdown());
  const closeAll = async () => {
    for (const step of cleanup.reverse()) await step().catch(() => undefined);
  };
  try {
    let nativeConnection: NativeConnection;
    let client: Client;
    let serverAddress: string;
    let where = '';
    if (address) {
      out(`agent-sessions dev · Temporal at ${address}`);
      serverAddress = address;
      nativeConnection = await connectWorker(config, address);
      cleanup.push(() => nativeConnection.close());
      const connection = await Connection.connect(connectionOptions(config, address));
      cleanup.push(() => connection.close());
      client = new Client({ connection, namespace: config.namespace, ...clientExtras });
    } else {
      out(`agent-sessions dev · starting the Temporal dev server (SQLite in ${shortPath(dataDir)})…`);
      const chosen = port ?? ((await portIsFree(PREFERRED_PORT)) ? PREFERRED_PORT : undefined);
      const server = await startServer({
        dataDir,
        namespace: config.namespace,
        ...(chosen ? { port: chosen } : {}),
        ...(uiPort ? { uiPort } : {}),
      });
      cleanup.push(server.stop);
      serverAddress = server.address;
      where = ` · SQLite ${shortPath(server.dbFilename)}${uiPort ? ` · Web UI http://127.0.0.1:${uiPort}` : ''}`;
      nativeConnection = await NativeConnection.connect({ address: server.address });
      cleanup.push(() => nativeConnection.close());
      const connection = await Connection.connect({ address: server.address });
      cleanup.push(() => connection.close());
      client = new Client({ connection, namespace: config.namespace, ...clientExtras });
    }

    // The dev chat's own task queue (a running session keeps its own): ./devSession.ts.
    const found = await findSession(client, sessionId);
    const taskQueue = devTaskQueue(found, env);
    // Load the local model while the worker starts, so the first answer does not wait for it.
    if (model.provider === 'local' && !model.model) void preloadLocalModel(config);
    out('starting the worker…');
    const worker: Worker = await createSessionWorker({
      connection: nativeConnection,
      namespace: config.namespace,
      taskQueue,
      tools,
      ...(mcp ? { mcpTools: mcp } : {}),
      hooks,
      ...resultCapsFromConfig(config),
      ...models,
      ...(config.encryption ? { encryption: config.encryption } : {}),
      ...(tracing ? { tracing } : {}),
      // Unversioned: the dev chat's code changes between runs on a server that persists, and its session must
      // follow the code at once (docs/upgrades.md).
      versioning: false,
    });
    const running = worker.run();
    cleanup.push(async () => {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
    });
    if (mcp) cleanup.push(() => mcp.close());
    let workerError: Error | undefined;
    running.catch((err: Error) => {
      workerError = err;
    });

    const sessions = new SessionClient({ client, taskQueue });
    const status = await ensureSession(sessions, sessionId, found, demoConfig(model));
    writeDevFile(dataDir, {
      address: serverAddress,
      namespace: config.namespace,
      taskQueue,
      pid: process.pid,
      session: sessionId,
    });
    cleanup.push(async () => removeDevFile(dataDir));

    out(`Temporal ${serverAddress}${where} · task queue ${taskQueue}`);
    out(`session ${sessionId} (${status.note}) · model ${describeModel(status.model)}`);
    if (mcp) for (const line of await mcpLines(mcp)) out(line);
    if (status.model?.provider === 'scripted' && !localInstalled && !env.AGENT_SESSIONS_DEMO_MODEL?.trim())
      out(
        local.installed
          ? '(node-llama-cpp, which runs the local model, is not installed: `npm install node-llama-cpp` for a real offline model)'
          : `(the local model is not installed at ${shortPath(local.path ?? setupTarget())}: run \`agent-sessions setup\` for a real offline model)`,
      );
    out(
      'Type a message: a plain line is a followup when idle and a steer while a turn runs. /help for commands, /quit to leave.',
    );

    const end = await runChat({
      sessions,
      sessionId,
      input: process.stdin,
      output: process.stdout,
      color: useColor(process.stdout),
    });
    await closeAll();
    if (workerError) throw workerError;
    out(end === 'quit' ? `bye: session ${sessionId} stays in ${dataDir}; run again to resume it` : '');
    exitSoon();
    return end === 'error' ? 1 : 0;
  } catch (err) {
    await closeAll();
    exitSoon();
    throw err;
  }
}

/** One line per MCP server of the worker: its tools as the model sees them, or why it is unavailable. */
async function mcpLines(mcp: McpTools): Promise<string[]> {
  return Promise.all(
    mcp.servers().map(async (server) => {
      try {
        const names = [...(await mcp.tools(server)).keys()];
        return `MCP ${server}: ${names.length} tool${names.length === 1 ? '' : 's'} (${names.join(', ')}) · sessions select them with tools: ['mcp:${server}']`;
      } catch (err) {
        return `MCP ${server}: unavailable now (${err instanceof Error ? err.message : String(err)})`;
      }
    }),
  );
}

interface RunningServer {
  address: string;
  dbFilename: string;
  stop(): Promise<void>;
}

/**
 * The embedded server as our own child process (its output kept off the screen, stopped with SIGTERM so SQLite
 * closes cleanly); when no Temporal CLI binary is installed locally, through the SDK, which can download one.
 */
async function startServer(options: DevServerOptions): Promise<RunningServer> {
  let local = true;
  try {
    resolveTemporalCli({ allowDownload: false });
  } catch {
    local = false;
  }
  if (local) {
    const server = await spawnDevServer(options);
    return { address: server.address, dbFilename: server.dbFilename ?? '', stop: () => server.stop() };
  }
  const server = await startDevServer(options);
  return { address: server.address, dbFilename: server.dbFilename, stop: () => server.stop() };
}

/** Runs `agent-sessions setup` when no Temporal CLI is installed; on failure the SDK's own download is the fallback. */
async function setupOnFirstUse(): Promise<void> {
  try {
    resolveTemporalCli({ allowDownload: false });
    return;
  } catch {
    // not installed yet: set up below
  }
  out(
    `agent-sessions dev · first use: installing the Temporal CLI and the local model into ${shortPath(setupTarget())}…`,
  );
  const code = await runSetup();
  if (code !== 0)
    out(`agent-sessions dev · setup failed (exit ${code}); trying the Temporal SDK's own download`);
}

function shortPath(file: string): string {
  const rel = path.relative(process.cwd(), file);
  return rel && !rel.startsWith('..') ? rel : file;
}

/** SDK and core logs to a file, so they do not scribble over the chat. Must run before any connection exists. */
function installQuietRuntime(file: string): void {
  const log = createWriteStream(file, { flags: 'a' });
  Runtime.install({
    logger: new DefaultLogger('INFO', (entry) => {
      const meta = entry.meta && Object.keys(entry.meta).length ? ` ${safeJson(entry.meta)}` : '';
      log.write(
        `${new Date(Number(entry.timestampNanos / 1_000_000n)).toISOString()} ${entry.level} ${entry.message}${meta}\n`,
      );
    }),
    telemetryOptions: {
      logging: { filter: makeTelemetryFilterString({ core: 'WARN', other: 'ERROR' }), forward: {} },
    },
  });
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  } catch {
    return '';
  }
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** The SDK's native runtime can keep the event loop alive a little after everything closed; do not wait on it. */
function exitSoon(): void {
  setTimeout(() => process.exit(process.exitCode ?? 0), 3_000).unref();
}
