/**
 * Attempt budgets with real processes (issue 14; src/activities/attempts.ts): losing a worker does not use up the
 * attempts meant for a call's own failures. A dev server on a SQLite file, session workers that are the real CLI
 * (`node bin/agent-sessions.js worker`, dist/) killed with SIGKILL, and for the model a local OpenAI-compatible
 * server (test/providers/fakeModelServer.ts) answering 503 or holding a response open.
 *
 * - A tool call whose worker is killed three times — as many times as the tool had attempts before — still
 *   completes on the fourth attempt, and commits one result.
 * - A model call that fails with its own retryable error 5 times, with a worker kill among them, fails after those
 *   5 genuine attempts, not 5 attempts in all: the provider saw 6 requests, the turn ends MODEL_UNAVAILABLE with the
 *   provider's message, and the 7th scripted answer is never asked for. This also shows the SDK delivers the last
 *   heartbeat of a failed attempt, and a killed attempt's last heartbeat, to the next attempt.
 *
 * Timing: each kill costs the 10 s heartbeat timeout (src/workflows/activities.ts) plus the retry backoff; a retried
 * 503 carries `retry-after-ms: 1`, so genuine failures retry at once. Needs `npm run build` and the Temporal CLI.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionClient } from '../../src/client';
import { spawnDevServer, type DevServerProcess } from '../../src/devserver';
import type { SessionEvent } from '../../src/domain/events';
import { assertLogValid } from '../../src/testing';
import { FakeModelServer } from '../providers/fakeModelServer';
import { eventually } from '../support/eventually';
import {
  killWorker,
  ROOT,
  startWorker as startCliWorker,
  type WorkerProcess,
} from '../support/workerProcess';

const taskQueue = `budget-${randomUUID()}`;
const STARTED = temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED;

let dataDir: string;
let server: DevServerProcess;
let connection: Connection;
let sessions: SessionClient;
let model: FakeModelServer;
const workers = new Set<WorkerProcess>();

/** Starts `agent-sessions worker` (testing toolset, the fake model as openai-compatible); resolves once it polls. */
function startWorker(): Promise<WorkerProcess> {
  return startCliWorker(
    {
      TEMPORAL_ADDRESS: server.address,
      TEMPORAL_NAMESPACE: 'default',
      TASK_QUEUE: taskQueue,
      OPENAI_COMPATIBLE_BASE_URL: model.url,
    },
    workers,
    30_000,
  );
}

/** SIGKILLs the worker and starts another at once (it polls by the time the heartbeat timeout fires). */
async function killAndReplace(worker: WorkerProcess): Promise<WorkerProcess> {
  await killWorker(worker);
  return startWorker();
}

/** Resolves once attempt `attempt` of the session's activity of `type` runs on a worker. */
function attemptRunning(id: string, type: 'modelStep' | 'executeTool', attempt: number) {
  return eventually(
    () => sessions.handle(id).describe(),
    (d) =>
      (d.raw.pendingActivities ?? []).some(
        (a) => a.activityType?.name === type && a.state === STARTED && a.attempt === attempt,
      ),
    `attempt ${attempt} of ${type} of ${id} to run`,
    40_000,
  );
}

async function settledLog(id: string, turns: number): Promise<SessionEvent[]> {
  await eventually(
    () => sessions.state(id),
    (s) => s.status === 'idle' && s.turn >= turns,
    `${turns} turn(s) of ${id} to end`,
    60_000,
  );
  const events = await sessions.allEvents(id);
  assertLogValid(events);
  return events;
}

/** The attempt numbers with which the session's activities of `type` finally ran, from the history. */
async function finalAttempts(id: string, type: string): Promise<number[]> {
  const history = await sessions.handle(id).fetchHistory();
  const scheduled = new Set<string>();
  const attempts: number[] = [];
  for (const e of history.events ?? []) {
    if (e.activityTaskScheduledEventAttributes?.activityType?.name === type) scheduled.add(String(e.eventId));
    const started = e.activityTaskStartedEventAttributes;
    if (started && scheduled.has(String(started.scheduledEventId))) attempts.push(started.attempt ?? 0);
  }
  return attempts;
}

beforeAll(async () => {
  if (!existsSync(path.join(ROOT, 'dist/cli/main.js'))) {
    throw new Error('dist/ is missing: run `npm run build` first (npm test does it in pretest)');
  }
  model = await FakeModelServer.start('openai');
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'agent-sessions-budget-'));
  server = await spawnDevServer({ dataDir });
  connection = await Connection.connect({ address: server.address });
  sessions = new SessionClient({ client: new Client({ connection }), taskQueue });
  process.once('exit', killAll);
});

function killAll(): void {
  for (const w of workers) w.child.kill('SIGKILL');
}

afterAll(async () => {
  const all = [...workers];
  killAll();
  await Promise.all(all.map((w) => w.exited));
  await connection?.close();
  await server?.stop({ signal: 'SIGKILL' });
  await model?.close();
  process.removeListener('exit', killAll);
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('worker loss does not use up the retry budget', { timeout: 120_000 }, () => {
  it('a tool call whose worker is SIGKILLed three times completes on its fourth attempt', async () => {
    let worker = await startWorker();
    const id = `budget-tool-${randomUUID()}`;
    await sessions.start(id, {
      tools: ['sleep'],
      model: {
        provider: 'scripted',
        steps: [{ toolCalls: [{ name: 'sleep', args: { ms: 2_000 } }] }, { text: 'slept' }],
      },
    });
    await sessions.followup(id, 'P');
    // Three tool attempts in all was the whole budget before: each kill here took one.
    for (const attempt of [1, 2, 3]) {
      await attemptRunning(id, 'executeTool', attempt);
      worker = await killAndReplace(worker);
    }
    const events = await settledLog(id, 1);
    const results = events.flatMap((e) => (e.type === 'tool/result' ? [e.data] : []));
    expect(results).toEqual([
      expect.objectContaining({ content: [{ type: 'text', text: 'slept 2000 ms' }] }),
    ]);
    expect(results[0]!.error).toBeUndefined();
    expect(events.flatMap((e) => (e.type === 'turn/end' ? [e.data.reason.kind] : []))).toEqual(['completed']);
    expect(await finalAttempts(id, 'executeTool')).toEqual([4]);
  });

  it('a model call still fails after 5 genuine failures, a worker kill among them not counted', async () => {
    const failed = { status: 503, headers: { 'retry-after-ms': '1' } };
    model.script(failed, failed, { chunks: ['partial answer'], hold: true }, failed, failed, failed, {
      chunks: ['a seventh attempt must not happen'],
    });
    let worker = [...workers][0] ?? (await startWorker());
    const id = `budget-model-${randomUUID()}`;
    await sessions.start(id, { model: { provider: 'openai-compatible', model: 'fake-model' } });
    await sessions.followup(id, 'P');
    // Attempts 1 and 2 fail with 503; attempt 3 streams and holds: its worker is killed mid-answer.
    await attemptRunning(id, 'modelStep', 3);
    await eventually(
      async () => model.streamed.length,
      (n) => n > 0,
      'the third request to stream',
      20_000,
    );
    worker = await killAndReplace(worker);
    const events = await settledLog(id, 1);
    const ends = events.flatMap((e) => (e.type === 'turn/end' ? [e.data.reason] : []));
    expect(ends).toEqual([
      {
        kind: 'error',
        error: { code: 'MODEL_UNAVAILABLE', message: 'openai-compatible failed (503): error 503' },
      },
    ]);
    expect(model.requests).toHaveLength(6);
    expect(await finalAttempts(id, 'modelStep')).toEqual([6]);
    expect(events.filter((e) => e.type === 'assistant/message')).toEqual([]);
    expect(worker.child.exitCode).toBeNull();
  });
});
