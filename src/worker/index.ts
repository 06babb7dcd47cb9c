/**
 * The worker factory and entry. `createSessionWorker` builds a Temporal worker that runs the agentSession workflow
 * and its activities on one task queue; `runWorkerFromEnv` is what `npx agent-sessions worker` runs. This file is
 * the public entry of src/worker for everything that loads the Temporal worker package (the CLI's `dev` and
 * `worker`, src/testing, the package root); `./config` is the light one (environment and connection options).
 * Workflow code comes from the bundle `npm run build` writes when running from dist/ (./bundle.ts); payloads are
 * encrypted when a keyring is given (src/codec); log lines carry session, run, turn and step (./logging.ts).
 * The worker runs as a version of a Worker Deployment unless told not to (./versioning.ts, docs/upgrades.md).
 * Not deterministic (does I/O); never imported by workflow code.
 */
import type { DataConverter } from '@temporalio/common';
import {
  NativeConnection,
  Runtime,
  Worker,
  type InjectedSinks,
  type WorkerOptions,
} from '@temporalio/worker';
import { createActivities } from '../activities';
import { EntryStore } from '../activities/entryStore';
import { HookRegistry, type HookDefinition } from '../activities/hooks';
import type { ModelProvider, ScriptedRecorder } from '../activities/model';
import { PROVIDER_SETUP } from '../activities/providers';
import { ToolRegistry, type ToolDefinition } from '../activities/tools';
import { resolveMcpServers, mcpServersFromFile, type McpServerConfig } from '../activities/mcp/config';
import { McpTools } from '../activities/mcp/tools';
import { encryptionDataConverter, type EncryptionKeyring } from '../codec';
import { DEFAULT_TASK_QUEUE, type TranscriptRefSinks } from '../contract';
import { formatModelRef, type ModelPrices, type ModelSpec } from '../domain/wire';
import type { SessionRefPolicy } from '../domain/sessionRefs';
import {
  bundleWorkflows,
  PREBUILT_TRACED_WORKFLOW_BUNDLE,
  prebuiltWorkflowBundle,
  workflowCodeFromConfig,
} from './bundle';
import { connectionOptions, loadConfig, tlsHint, type Config } from './config';
import { hooksFromFile } from './hooks';
import { activityLogAttributes, installWorkerLogging } from './logging';
import { modelsFromConfig } from './providers';
import { startTracing, type Tracing } from '../telemetry';
import { metricsFromEnv, workerTelemetryOptions } from './telemetry';
import { toolsFromToolsets } from './toolsets';
import {
  deploymentOptions,
  takeCurrentOnRun,
  versioningFromConfig,
  versionLabel,
  versionOnServer,
  type WorkerVersioningOptions,
} from './versioning';

export { modelsFromConfig, providersFromEnv, localModelStatus, preloadLocalModel } from './providers';
export { hooksFromConfig, hooksFromFile } from './hooks';
export { toolsFromToolsets } from './toolsets';
export { mcpServersFromFile, resolveMcpServers, type McpServerConfig } from '../activities/mcp/config';
export { McpTools } from '../activities/mcp/tools';
export {
  bundleWorkflows,
  DEFAULT_WORKFLOWS_PATH,
  PREBUILT_WORKFLOW_BUNDLE,
  prebuiltWorkflowBundle,
  SESSION_PAYLOAD_CONVERTER_PATH,
  WORKFLOW_INTERCEPTOR_MODULES,
  workflowSource,
  type BundleOptions,
} from './bundle';
export { bundleBuildId, type DeploymentVersion, type WorkerVersioningOptions } from './versioning';
export { metricsFromEnv, workerTelemetryOptions, OTEL_WORKFLOW_INTERCEPTORS } from './telemetry';
export {
  activityLogAttributes,
  createWorkerLogger,
  installWorkerLogging,
  type WorkerLogger,
  type WorkerLoggerOptions,
} from './logging';

export interface SessionWorkerOptions {
  connection: NativeConnection;
  namespace?: string;
  taskQueue?: string;
  tools?: ToolDefinition[];
  /**
   * MCP servers whose tools sessions may select (`mcp:<server>`, `mcp:<server>/<tool>`), by server name: stdio
   * `{command, args?, env?, cwd?}` or streamable HTTP `{url, headers?}`; `${VAR}` in `env` and `headers` values reads
   * the worker's environment. Connected lazily, on first use; a server that is down does not stop the worker.
   * The worker closes the connections (stopping stdio servers) when it stops running.
   */
  mcpServers?: Record<string, McpServerConfig>;
  /**
   * The worker's MCP tools already built (`new McpTools(servers)`), instead of `mcpServers`: for callers that list
   * its tools themselves (the `dev` demo). The caller closes it.
   */
  mcpTools?: McpTools;
  /** Hooks sessions may select by name (function, HTTP or command hooks). */
  hooks?: HookDefinition[];
  /** Model providers by name besides `scripted` (see `providersFromConfig`). */
  providers?: Record<string, ModelProvider>;
  /** The model of sessions that name none (default: the scripted model). Its provider must be registered. */
  defaultModel?: ModelSpec;
  /**
   * Prices by model label (`provider:model`): currency units per million input and output tokens. A priced answer's
   * usage carries `costMicros`, which `SessionConfig.budget.costMicros` limits.
   */
  modelPrices?: ModelPrices;
  scriptedRecorder?: ScriptedRecorder;
  /**
   * Most sessions whose model-visible transcript the worker keeps between model requests (default 1,000). A session
   * the cache lacks is read from its runs' history, so a smaller cache trades memory for reads; 0 reads every time.
   */
  transcriptCacheSessions?: number;
  /**
   * Cross-session references (docs/protocol.md): who may read whom, `(reader, source) => true | reason` over the
   * sessions' ids and labels (default: both have the same `tenant=<name>` label).
   */
  sessionRefPolicy?: SessionRefPolicy;
  /** Most UTF-8 bytes of one reference's snapshot (default 65,536; at most 262,144); a larger one is refused. */
  maxSessionRefBytes?: number;
  /**
   * Most UTF-8 bytes of one model answer: its text, reasoning and tool-call arguments together (default 1 MiB, at most
   * 1,966,080). A streamed answer is cut there and the turn ends `MODEL_ANSWER_TOO_LARGE` (docs/protocol.md, "Sizes").
   */
  maxAnswerBytes?: number;
  /**
   * Most bytes of one tool result's JSON (default 1.5 MiB, at most 1,966,080); a larger result becomes a
   * `TOOL_RESULT_TOO_LARGE` error the model reads.
   */
  maxToolResultBytes?: number;
  /**
   * The store of transcript entries the sessions on this worker send by reference (the worker's `transcriptRefs`
   * sink fills it; default: a new one). Tests pass their own to empty it, as a restart would.
   */
  entryStore?: EntryStore;
  /**
   * A workflow bundle built beforehand, instead of `workflowsPath`: for test suites that bundle once per run (it
   * must include SESSION_PAYLOAD_CONVERTER_PATH as its payload converter). Not the documented way to name the code.
   */
  workflowBundle?: WorkerOptions['workflowBundle'];
  /**
   * The workflow code, named one way: the path of a workflows module (default: ours — from dist/, the bundle
   * `npm run build` wrote; from src/, bundled at start). Users with pre-step listeners point this at their module,
   * which re-exports ours wrapped with `defineAgentSession` (agent-sessions/workflows).
   */
  workflowsPath?: string;
  /**
   * Encrypt every payload with AES-256-GCM (src/codec): the current key encrypts, every key decrypts by the id a
   * payload names. Clients of these sessions need the same keys (`SessionClient`'s `dataConverter`).
   */
  encryption?: EncryptionKeyring;
  /**
   * Trace workflows and activities with OpenTelemetry (`startTracing()`; docs/observability.md). The worker then
   * loads the traced prebuilt bundle (or bundles Temporal's OpenTelemetry workflow interceptors in); a given
   * `workflowBundle` must include them itself.
   */
  tracing?: Tracing;
  /**
   * Worker Versioning (docs/upgrades.md): by default the worker runs as a version of the Worker Deployment named like
   * its task queue, its build id a hash of its workflow bundle, and sessions are pinned to their version; a worker
   * whose deployment has no current version makes its own current. `false` runs it unversioned (as does a server
   * without Worker Deployments, e.g. the time-skipping test server).
   */
  versioning?: false | WorkerVersioningOptions;
  /**
   * Extra Temporal worker options (concurrency limits, cache size…). Interceptors are added to ours; a data
   * converter's codecs run before the encryption codec.
   */
  worker?: Partial<WorkerOptions>;
}

/** Where a worker's workflow code comes from: given by the caller, the build's bundle, or bundled at start. */
export type WorkflowCodeSource = 'given' | 'prebuilt' | 'bundled';

/** Which workflow code `createSessionWorker` loads for these options (see {@link SessionWorkerOptions}). */
export function workflowCodeSource(opts: {
  workflowBundle?: WorkerOptions['workflowBundle'];
  workflowsPath?: string;
  /** Whether the worker traces (it then needs the traced bundle). */
  traced?: boolean;
}): WorkflowCodeSource {
  if (opts.workflowBundle) return 'given';
  return !opts.workflowsPath && prebuiltBundle(opts.traced) ? 'prebuilt' : 'bundled';
}

/** The build's bundle for a worker that traces or not, when it exists and is current. */
function prebuiltBundle(traced: boolean | undefined): string | undefined {
  return prebuiltWorkflowBundle(traced ? PREBUILT_TRACED_WORKFLOW_BUNDLE : undefined);
}

/** How often a worker sends an activity's latest heartbeat at most: the streaming latency's main part. */
export const STREAM_THROTTLE = '200 milliseconds';

/**
 * Builds the worker. Throws when a tool or hook is registered twice, the default model's provider is missing, the
 * encryption keyring is malformed, or the workflow code does not bundle.
 */
export async function createSessionWorker(opts: SessionWorkerOptions): Promise<Worker> {
  const provider = opts.defaultModel?.provider;
  if (provider && provider !== 'scripted' && !opts.providers?.[provider]) {
    throw new Error(
      `the default model needs the ${provider} provider: ${PROVIDER_SETUP[provider] ?? 'register it'}`,
    );
  }
  const entries = opts.entryStore ?? new EntryStore();
  const tools = new ToolRegistry(opts.tools ?? []);
  const ownMcp =
    opts.mcpServers && Object.keys(opts.mcpServers).length
      ? new McpTools(resolveMcpServers(opts.mcpServers), tools.names())
      : undefined;
  const mcp = ownMcp ?? opts.mcpTools;
  const activities = createActivities({
    entries,
    tools,
    ...(mcp ? { mcp } : {}),
    hooks: new HookRegistry(opts.hooks ?? []),
    ...(opts.providers ? { providers: opts.providers } : {}),
    ...(opts.defaultModel ? { defaultModel: opts.defaultModel } : {}),
    ...(opts.modelPrices ? { prices: opts.modelPrices } : {}),
    ...(opts.scriptedRecorder ? { scriptedRecorder: opts.scriptedRecorder } : {}),
    ...(opts.transcriptCacheSessions !== undefined
      ? { transcriptCacheSessions: opts.transcriptCacheSessions }
      : {}),
    ...(opts.maxAnswerBytes !== undefined ? { maxAnswerBytes: opts.maxAnswerBytes } : {}),
    ...(opts.maxToolResultBytes !== undefined ? { maxToolResultBytes: opts.maxToolResultBytes } : {}),
    sessionRefs: {
      ...(opts.sessionRefPolicy ? { policy: opts.sessionRefPolicy } : {}),
      ...(opts.maxSessionRefBytes !== undefined ? { maxBytes: opts.maxSessionRefBytes } : {}),
    },
  });
  const {
    interceptors,
    dataConverter,
    bundlerOptions,
    workflowBundle: givenBundle,
    workflowsPath: givenPath,
    ...workerOptions
  } = opts.worker ?? {};
  const { workflowModules, ...otherInterceptors } = interceptors ?? {};
  const converter = withEncryption(dataConverter, opts.encryption);
  const telemetry = workerTelemetryOptions(opts.tracing);
  const traced = opts.tracing !== undefined;
  const bundledModules = [...(telemetry.interceptors?.workflowModules ?? []), ...(workflowModules ?? [])];
  // The top-level options win over the same ones in `worker`.
  const code = {
    ...((opts.workflowBundle ?? givenBundle) ? { workflowBundle: opts.workflowBundle ?? givenBundle } : {}),
    ...((opts.workflowsPath ?? givenPath) ? { workflowsPath: opts.workflowsPath ?? givenPath } : {}),
  };
  let workflowBundle: WorkerOptions['workflowBundle'];
  const source = workflowCodeSource({ ...code, traced });
  if (source === 'given') workflowBundle = code.workflowBundle;
  else if (source === 'prebuilt') workflowBundle = { codePath: prebuiltBundle(traced)! };
  else
    workflowBundle = await bundleWorkflows({
      ...(code.workflowsPath ? { workflowsPath: code.workflowsPath } : {}),
      ...(bundledModules.length ? { workflowInterceptorModules: bundledModules } : {}),
      ...(bundlerOptions ? { bundlerOptions } : {}),
      ...(converter ? { dataConverter: converter } : {}),
      logger: Runtime.instance().logger,
    });
  const namespace = opts.namespace ?? 'default';
  const taskQueue = opts.taskQueue ?? DEFAULT_TASK_QUEUE;
  const logger = Runtime.instance().logger;
  const version = await versionOnServer(opts, namespace, taskQueue, workflowBundle!, logger);
  const worker = await Worker.create({
    connection: opts.connection,
    namespace,
    taskQueue,
    activities,
    // Heartbeats carry cancellation to running calls, and a streaming model call's text so far to its watchers: the
    // latest details go out at most every STREAM_THROTTLE (docs/decisions/2026-12-03-streaming.md).
    maxHeartbeatThrottleInterval: STREAM_THROTTLE,
    ...workerOptions,
    workflowBundle,
    interceptors: {
      ...otherInterceptors,
      // Bundled in when we bundle; with a given bundle the SDK says they are ignored (they belong in that bundle).
      ...(source === 'given' && workflowModules ? { workflowModules } : {}),
      activity: [
        activityLogAttributes,
        ...(telemetry.interceptors?.activity ?? []),
        ...(otherInterceptors.activity ?? []),
      ],
    },
    sinks: { ...workerOptions.sinks, ...telemetry.sinks, ...transcriptRefSinks(entries) },
    ...(converter ? { dataConverter: converter } : {}),
    ...(version ? { workerDeploymentOptions: deploymentOptions(version) } : {}),
  });
  if (version) takeCurrentOnRun(worker, opts.connection, namespace, version, logger);
  if (ownMcp) {
    // MCP connections (and the stdio servers' processes) live as long as the worker runs.
    const run = worker.run.bind(worker);
    worker.run = () => run().finally(() => ownMcp.close());
  }
  return worker;
}

/**
 * The sink the workflow hands the entries of each model request it sends by reference through (src/contract
 * `TranscriptRefSinks`). Called during replay too, so a worker that replays a session (after an eviction or a
 * restart) fills its store again; calls for the same request give the same entries.
 */
export function transcriptRefSinks(store: EntryStore): InjectedSinks<TranscriptRefSinks> {
  return {
    transcriptRefs: {
      remember: {
        fn: (info, entries) => store.remember(info.firstExecutionRunId, entries),
        callDuringReplay: true,
      },
    },
  };
}

/** The worker's data converter with the encryption codec last (it sees what the other codecs produced). */
function withEncryption(
  converter: DataConverter | undefined,
  keyring: EncryptionKeyring | undefined,
): DataConverter | undefined {
  if (!keyring) return converter;
  const encrypting = encryptionDataConverter(keyring);
  return { ...converter, payloadCodecs: [...(converter?.payloadCodecs ?? []), ...encrypting.payloadCodecs!] };
}

/** The worker's connection to Temporal at `address`, with the configuration's TLS and API key. */
export function connectWorker(config: Config, address: string): Promise<NativeConnection> {
  return NativeConnection.connect(connectionOptions(config, address)).catch((err: unknown) => {
    const why = err instanceof Error ? err.message : String(err);
    // A refused connection needs no TLS hint: nothing listens there.
    const hint = /refused/i.test(why) ? '' : `; ${tlsHint(config)}`;
    throw new Error(`cannot connect to Temporal at ${address}: ${why}${hint}`, { cause: err });
  });
}

/**
 * Runs a worker configured by the environment until SIGINT/SIGTERM. `address` overrides TEMPORAL_ADDRESS. Installs
 * the SDK Runtime with the worker logger (LOG_LEVEL, LOG_FORMAT) unless the process has one; a start prints one
 * line (address, namespace, task queue, toolsets, providers…) and nothing else at INFO.
 */
export async function runWorkerFromEnv(
  env: NodeJS.ProcessEnv = process.env,
  address?: string,
): Promise<void> {
  const config = loadConfig(env);
  // Read before anything opens a connection or starts telemetry, so a bad file stops the worker at once (after
  // either, the open handles would keep the process alive).
  const mcpServers = config.mcpFile ? mcpServersFromFile(config.mcpFile, env) : {};
  const hooks = config.hooksFile ? hooksFromFile(config.hooksFile) : [];
  const target = address ?? config.address;
  if (!target)
    throw new Error('TEMPORAL_ADDRESS is not set: point the worker at a Temporal server (host:port)');
  const metrics = metricsFromEnv(env);
  const logger = installWorkerLogging({
    level: config.logLevel,
    format: config.logFormat ?? (process.stderr.isTTY ? 'pretty' : 'json'),
    ...(metrics ? { metrics } : {}),
  });
  const tracing = startTracing('agent-sessions-worker', env);
  const code = workflowCodeFromConfig(config.workflowBundle);
  const connection = await connectWorker(config, target);
  const models = modelsFromConfig(config);
  const worker = await createSessionWorker({
    connection,
    namespace: config.namespace,
    taskQueue: config.taskQueue,
    tools: toolsFromToolsets(config.toolsets),
    hooks,
    mcpServers,
    ...(config.modelPrices ? { modelPrices: config.modelPrices } : {}),
    ...resultCapsFromConfig(config),
    ...models,
    ...code,
    ...(config.encryption ? { encryption: config.encryption } : {}),
    ...(tracing ? { tracing } : {}),
    versioning: versioningFromConfig(config),
  });
  const model = models.defaultModel;
  const start = {
    address: target,
    namespace: config.namespace,
    taskQueue: config.taskQueue,
    toolsets: config.toolsets,
    providers: ['scripted', ...Object.keys(models.providers)],
    defaultModel: model ? formatModelRef(model) : 'scripted',
    hooks: hooks.map((h) => h.name),
    mcpServers: Object.keys(mcpServers),
    workflows: workflowCodeSource({ ...code, traced: tracing !== undefined }),
    version: versionLabel(worker),
    tracing: tracing ? 'otlp' : 'off',
    metrics: metrics ? metrics.metrics.prometheus.bindAddress : 'off',
    ...(config.encryption ? { encryptionKey: config.encryption.current.id } : {}),
  };
  logger.notice(
    `agent-sessions worker: ${target} namespace=${start.namespace} task-queue=${start.taskQueue} toolsets=${start.toolsets.join(',') || 'none'} ` +
      `providers=${start.providers.join(',')} default-model=${start.defaultModel} hooks=${start.hooks.join(',') || 'none'} mcp=${start.mcpServers.join(',') || 'none'} ` +
      `workflows=${start.workflows} version=${start.version} tracing=${start.tracing} metrics=${start.metrics}` +
      `${config.encryption ? ` encryption=${config.encryption.current.id}` : ''}`,
    start,
  );
  try {
    await worker.run();
  } finally {
    await connection.close();
    await tracing?.shutdown();
  }
}

/** AGENT_SESSIONS_MAX_ANSWER_BYTES and AGENT_SESSIONS_MAX_TOOL_RESULT_BYTES as worker options (unset: defaults). */
export function resultCapsFromConfig(
  config: Config,
): Pick<SessionWorkerOptions, 'maxAnswerBytes' | 'maxToolResultBytes'> {
  return {
    ...(config.maxAnswerBytes !== undefined ? { maxAnswerBytes: config.maxAnswerBytes } : {}),
    ...(config.maxToolResultBytes !== undefined ? { maxToolResultBytes: config.maxToolResultBytes } : {}),
  };
}
