/**
 * The `workerStart` bench group: how long `agent-sessions worker` takes from process spawn to serving, with the
 * workflow bundle built at start (`AGENT_SESSIONS_WORKFLOW_BUNDLE=off`, what every start did before the bundle was
 * prebuilt) and with the bundle `npm run build` writes (dist/workflow-bundle.js, the default from dist/). A session
 * waits on a fresh task queue before the worker is spawned, so its first workflow task is the worker's first poll
 * that finds work; the figure is spawn → that task's WorkflowTaskCompleted (server time, same machine clock). Also
 * spawn → the worker's start line, and how many stderr lines the start printed. Runs the built CLI (dist/).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { SessionClient } from '../src/client';
import { spawnDevServer } from '../src/devserver';

const EventType = temporal.api.enums.v1.EventType;

export type WorkerStartMode = 'bundled' | 'prebuilt';

interface StartSample {
  toStartLineMs: number;
  toFirstWorkflowTaskMs: number;
  stderrLines: number;
  /** What the worker's start line says it loaded (`prebuilt` or `bundled`; null before the line said it). */
  workflows: string | null;
}

/** One worker start on a fresh task queue with one session waiting; the worker is stopped afterwards. */
async function sampleStart(
  root: string,
  address: string,
  client: Client,
  mode: WorkerStartMode,
  n: number,
): Promise<StartSample> {
  const taskQueue = `bench-worker-start-${mode}-${n}-${Date.now()}`;
  const sessions = new SessionClient({ client, taskQueue, searchAttributes: 'off' });
  const id = `${taskQueue}-session`;
  await sessions.start(id, {});
  await sessions.followup(id, 'hello');
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/tmp',
    TEMPORAL_ADDRESS: address,
    TASK_QUEUE: taskQueue,
    ...(mode === 'bundled' ? { AGENT_SESSIONS_WORKFLOW_BUNDLE: 'off' } : {}),
  };
  const spawnedAt = Date.now();
  const child = spawn(process.execPath, [path.join(root, 'bin/agent-sessions.js'), 'worker'], {
    cwd: root,
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  let startLineAt: number | undefined;
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
    if (startLineAt === undefined && stderr.includes('agent-sessions worker:')) startLineAt = Date.now();
  });
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  try {
    const deadline = Date.now() + 120_000;
    for (;;) {
      const events = (await client.workflow.getHandle(id).fetchHistory()).events ?? [];
      const done = events.find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
      if (done && startLineAt !== undefined) {
        const at = Number(done.eventTime?.seconds ?? 0) * 1000 + Number(done.eventTime?.nanos ?? 0) / 1e6;
        return {
          toStartLineMs: startLineAt - spawnedAt,
          toFirstWorkflowTaskMs: Math.round(at - spawnedAt),
          stderrLines: stderr.split('\n').filter((l) => l.trim()).length,
          workflows: /workflows=(\w+)/.exec(stderr)?.[1] ?? null,
        };
      }
      if (Date.now() > deadline)
        throw new Error(`bench: the ${mode} worker did not complete a workflow task; stderr:\n${stderr}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    child.kill('SIGINT');
    await exited;
    await sessions
      .handle(id)
      .terminate('bench done')
      .catch(() => undefined);
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/**
 * Starts `rounds` workers of each mode, alternating, on its own in-memory dev server. Writes the medians to `report`
 * (`workerStartMs: {bundled, prebuilt}`) and every sample to `raw.workerStart`.
 */
export async function workerStartGroup(
  root: string,
  report: Record<string, unknown>,
  raw: Record<string, unknown>,
  rounds: number,
): Promise<void> {
  const server = await spawnDevServer({ inMemory: true });
  const connection = await Connection.connect({ address: server.address });
  const client = new Client({ connection });
  const samples: Record<WorkerStartMode, StartSample[]> = { bundled: [], prebuilt: [] };
  try {
    for (let n = 0; n < rounds; n++) {
      for (const mode of ['bundled', 'prebuilt'] as const)
        samples[mode].push(await sampleStart(root, server.address, client, mode, n));
    }
  } finally {
    await connection.close();
    await server.stop({ signal: 'SIGKILL' });
  }
  const figure = (mode: WorkerStartMode, key: 'toStartLineMs' | 'toFirstWorkflowTaskMs' | 'stderrLines') =>
    median(samples[mode].map((s) => s[key]));
  report.workerStartMs = {
    bundled: figure('bundled', 'toFirstWorkflowTaskMs'),
    prebuilt: figure('prebuilt', 'toFirstWorkflowTaskMs'),
  };
  raw.workerStart = {
    what: 'process spawn → first WorkflowTaskCompleted of a waiting session (median); startLine: spawn → the worker start line',
    rounds,
    startLineMs: {
      bundled: figure('bundled', 'toStartLineMs'),
      prebuilt: figure('prebuilt', 'toStartLineMs'),
    },
    stderrLines: {
      bundled: figure('bundled', 'stderrLines'),
      prebuilt: figure('prebuilt', 'stderrLines'),
    },
    samples,
  };
}
