/**
 * The worker factory and entry. `createSessionWorker` builds a Temporal worker that runs the agentSession workflow
 * and its activities on one task queue; `runWorkerFromEnv` is what `npx agent-sessions worker` runs.
 * Not deterministic (does I/O); never imported by workflow code.
 */
import path from 'node:path';
import { Worker, type NativeConnection, type WorkerOptions } from '@temporalio/worker';
import { createActivities } from '../activities';
import type { ModelProvider, ScriptedRecorder } from '../activities/model';
import { ToolRegistry, type ToolDefinition } from '../activities/tools';
import { DEFAULT_TASK_QUEUE } from '../contract';
import { loadConfig } from './config';
import { connectWorker } from './connection';
import { toolsFromToolsets } from './toolsets';

export interface SessionWorkerOptions {
  connection: NativeConnection;
  namespace?: string;
  taskQueue?: string;
  tools?: ToolDefinition[];
  providers?: Record<string, ModelProvider>;
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

export async function createSessionWorker(opts: SessionWorkerOptions): Promise<Worker> {
  const activities = createActivities({
    tools: new ToolRegistry(opts.tools ?? []),
    ...(opts.providers ? { providers: opts.providers } : {}),
    ...(opts.scriptedRecorder ? { scriptedRecorder: opts.scriptedRecorder } : {}),
  });
  const workflowSource = opts.workflowBundle
    ? { workflowBundle: opts.workflowBundle }
    : { workflowsPath: require.resolve(opts.workflowsPath ?? DEFAULT_WORKFLOWS_PATH) };
  return Worker.create({
    connection: opts.connection,
    namespace: opts.namespace ?? 'default',
    taskQueue: opts.taskQueue ?? DEFAULT_TASK_QUEUE,
    activities,
    ...workflowSource,
    // Heartbeats carry cancellation to running calls; send them at least every second so a cancel lands promptly.
    maxHeartbeatThrottleInterval: '1 second',
    ...opts.worker,
  });
}

/** Runs a worker configured by the environment until SIGINT/SIGTERM. `address` overrides TEMPORAL_ADDRESS. */
export async function runWorkerFromEnv(env: NodeJS.ProcessEnv = process.env, address?: string): Promise<void> {
  const config = loadConfig(env);
  const target = address ?? config.address;
  if (!target) throw new Error('TEMPORAL_ADDRESS is not set: point the worker at a Temporal server (host:port)');
  const connection = await connectWorker(config, target);
  const worker = await createSessionWorker({
    connection,
    namespace: config.namespace,
    taskQueue: config.taskQueue,
    tools: toolsFromToolsets(config.toolsets),
  });
  console.error(
    `agent-sessions worker: ${target} namespace=${config.namespace} task-queue=${config.taskQueue} toolsets=${config.toolsets.join(',') || 'none'}`,
  );
  try {
    await worker.run();
  } finally {
    await connection.close();
  }
}
