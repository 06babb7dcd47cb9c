/**
 * The worker factory and entry. `createSessionWorker` builds a Temporal worker that runs the agentSession workflow
 * and its activities on one task queue; `runWorkerFromEnv` is what `npx agent-sessions worker` runs. This file is
 * the public entry of src/worker for everything that loads the Temporal worker package (the CLI's `dev` and
 * `worker`, src/testing, the package root); `./config` is the light one (environment and connection options).
 * Not deterministic (does I/O); never imported by workflow code.
 */
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities } from '../activities';
import { HookRegistry, type HookDefinition } from '../activities/hooks';
import type { ModelProvider, ScriptedRecorder } from '../activities/model';
import { PROVIDER_SETUP } from '../activities/providers';
import { ToolRegistry, type ToolDefinition } from '../activities/tools';
import { DEFAULT_TASK_QUEUE } from '../contract';
import { formatModelRef, type ModelSpec } from '../domain/wire';
import { connectionOptions, loadConfig, type Config } from './config';
import { hooksFromFile } from './hooks';
import { modelsFromConfig } from './providers';
import { toolsFromToolsets } from './toolsets';

export { modelsFromConfig, providersFromEnv, localModelStatus, preloadLocalModel } from './providers';
export { hooksFromConfig, hooksFromFile } from './hooks';
export { toolsFromToolsets } from './toolsets';

export interface SessionWorkerOptions {
  connection: NativeConnection;
  namespace?: string;
  taskQueue?: string;
  tools?: ToolDefinition[];
  /** Hooks sessions may select by name (function, HTTP or command hooks). */
  hooks?: HookDefinition[];
  /** Model providers by name besides `scripted` (see `providersFromConfig`). */
  providers?: Record<string, ModelProvider>;
  /** The model of sessions that name none (default: the scripted model). Its provider must be registered. */
  defaultModel?: ModelSpec;
  scriptedRecorder?: ScriptedRecorder;
  /** A prebuilt workflow bundle (tests bundle once per run). */
  workflowBundle?: WorkerOptions['workflowBundle'];
  /** A workflows module to bundle (default: ours). Users with pre-step listeners point this at their module. */
  workflowsPath?: string;
  /** Extra Temporal worker options (concurrency limits, cache size…). */
  worker?: Partial<WorkerOptions>;
}

/** Path of our workflows module, from src/ (tests) or dist/ (built). */
export const DEFAULT_WORKFLOWS_PATH = path.join(__dirname, '..', 'workflows', 'index');

/** Builds the worker. Throws when a tool or hook is registered twice or the default model's provider is missing. */
export async function createSessionWorker(opts: SessionWorkerOptions): Promise<Worker> {
  const provider = opts.defaultModel?.provider;
  if (provider && provider !== 'scripted' && !opts.providers?.[provider]) {
    throw new Error(
      `the default model needs the ${provider} provider: ${PROVIDER_SETUP[provider] ?? 'register it'}`,
    );
  }
  const activities = createActivities({
    tools: new ToolRegistry(opts.tools ?? []),
    hooks: new HookRegistry(opts.hooks ?? []),
    ...(opts.providers ? { providers: opts.providers } : {}),
    ...(opts.defaultModel ? { defaultModel: opts.defaultModel } : {}),
    ...(opts.scriptedRecorder ? { scriptedRecorder: opts.scriptedRecorder } : {}),
  });
  return Worker.create({
    connection: opts.connection,
    namespace: opts.namespace ?? 'default',
    taskQueue: opts.taskQueue ?? DEFAULT_TASK_QUEUE,
    activities,
    ...workflowSource(opts),
    // Heartbeats carry cancellation to running calls; send them at least every second so a cancel lands promptly.
    maxHeartbeatThrottleInterval: '1 second',
    ...opts.worker,
  });
}

/** The worker's connection to Temporal at `address`, with the configuration's TLS and API key. */
export function connectWorker(config: Config, address: string): Promise<NativeConnection> {
  return NativeConnection.connect(connectionOptions(config, address));
}

/**
 * The worker option naming the workflow code, for running and for replaying it: a prebuilt bundle when given, else
 * the workflows module at `workflowsPath` (default: ours). Throws when that module does not exist.
 */
export function workflowSource(opts: {
  workflowBundle?: WorkerOptions['workflowBundle'];
  workflowsPath?: string;
}): Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'> {
  return opts.workflowBundle
    ? { workflowBundle: opts.workflowBundle }
    : { workflowsPath: resolveWorkflowsPath(opts.workflowsPath ?? DEFAULT_WORKFLOWS_PATH) };
}

/** Runs a worker configured by the environment until SIGINT/SIGTERM. `address` overrides TEMPORAL_ADDRESS. */
export async function runWorkerFromEnv(
  env: NodeJS.ProcessEnv = process.env,
  address?: string,
): Promise<void> {
  const config = loadConfig(env);
  const target = address ?? config.address;
  if (!target)
    throw new Error('TEMPORAL_ADDRESS is not set: point the worker at a Temporal server (host:port)');
  const connection = await connectWorker(config, target);
  const models = modelsFromConfig(config);
  const hooks = config.hooksFile ? hooksFromFile(config.hooksFile) : [];
  const worker = await createSessionWorker({
    connection,
    namespace: config.namespace,
    taskQueue: config.taskQueue,
    tools: toolsFromToolsets(config.toolsets),
    hooks,
    ...models,
  });
  const model = models.defaultModel;
  console.error(
    `agent-sessions worker: ${target} namespace=${config.namespace} task-queue=${config.taskQueue} toolsets=${config.toolsets.join(',') || 'none'} ` +
      `providers=${['scripted', ...Object.keys(models.providers)].join(',')} default-model=${model ? formatModelRef(model) : 'scripted'} ` +
      `hooks=${hooks.map((h) => h.name).join(',') || 'none'}`,
  );
  try {
    await worker.run();
  } finally {
    await connection.close();
  }
}

/**
 * A workflows module path the bundler can read: as given when it exists, else with `.ts` or `.js` appended (our
 * default path has no extension and is `.ts` under src/, `.js` under dist/; `require.resolve` alone misses `.ts`
 * when tests run through vitest). Throws naming the path.
 */
function resolveWorkflowsPath(p: string): string {
  for (const candidate of [p, `${p}.ts`, `${p}.js`]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return path.resolve(candidate);
  }
  try {
    return require.resolve(p);
  } catch {
    throw new Error(`workflows module not found: ${p}`);
  }
}
