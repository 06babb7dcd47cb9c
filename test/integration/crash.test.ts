/**
 * Durability with real processes (rule 32, scenario 21): a Temporal dev server on a SQLite file, and session workers
 * that are the real CLI (`node bin/agent-sessions.js worker`, compiled code from dist/) as child processes. A worker
 * is killed with SIGKILL during a model call, during a tool call and between workflow tasks; a second worker
 * finishes every session. Then the dev server itself is killed with SIGKILL in the middle of a turn and started
 * again on the same file and port; the turn completes. Every log passes assertLogValid and holds no doubled
 * user/message, assistant/message or tool/result.
 *
 * Timing: a killed worker's running activity is retried after its heartbeat timeout (10 s, src/workflows/
 * activities.ts) plus the first retry interval (1 s); a workflow task sent to the dead worker's sticky queue moves
 * to the shared queue after the sticky schedule-to-start timeout (10 s). Scripted delays are 3 s. Needs `npm run
 * build` (npm test runs it first) and the Temporal CLI (`npm run setup`).
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
import { eventually } from '../support/eventually';
import {
  killWorker,
  ROOT,
  startWorker as startCliWorker,
  type WorkerProcess,
} from '../support/workerProcess';

const taskQueue = `crash-${randomUUID()}`;
const STARTED = temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED;

let dataDir: string;
let server: DevServerProcess;
let connection: Connection;
let sessions: SessionClient;
const workers = new Set<WorkerProcess>();

/** Starts `agent-sessions worker` against the dev server and resolves once it is polling. */
function startWorker(): Promise<WorkerProcess> {
  return startCliWorker(
    { TEMPORAL_ADDRESS: server.address, TEMPORAL_NAMESPACE: 'default', TASK_QUEUE: taskQueue },
    workers,
    30_000,
  );
}

async function ensureWorker(): Promise<WorkerProcess> {
  return [...workers][0] ?? startWorker();
}

/** Resolves once an activity of `type` of the session is running on a worker (not merely scheduled). */
function activityRunning(id: string, type: 'modelStep' | 'executeTool' | 'compactTranscript') {
  return eventually(
    () => sessions.handle(id).describe(),
    (d) => (d.raw.pendingActivities ?? []).some((a) => a.activityType?.name === type && a.state === STARTED),
    `a running ${type} activity of ${id}`,
    20_000,
  );
}

/** Waits (up to `timeoutMs`) until `turns` turns have ended and the session is idle, then returns the checked log. */
async function settleWithin(id: string, turns: number, timeoutMs: number): Promise<SessionEvent[]> {
  await eventually(
    () => sessions.state(id),
    (s) => s.status === 'idle' && s.turn >= turns,
    `${turns} turn(s) of ${id} to end`,
    timeoutMs,
  );
  const events = await sessions.allEvents(id);
  assertLogValid(events);
  return events;
}

/** Rule 32: nothing doubled. One user/message per message id, one assistant/message per step, one result per call. */
function expectNothingDoubled(events: readonly SessionEvent[]): void {
  const userIds = events.flatMap((e) => (e.type === 'user/message' ? [e.data.message.id] : []));
  const assistantSteps = events.flatMap((e) =>
    e.type === 'assistant/message' ? [`${e.data.turn}.${e.data.step}`] : [],
  );
  const assistantIds = events.flatMap((e) => (e.type === 'assistant/message' ? [e.data.message.id] : []));
  const resultIds = events.flatMap((e) => (e.type === 'tool/result' ? [e.data.callId] : []));
  const callIds = events.flatMap((e) => (e.type === 'tool/call' ? [e.data.callId] : []));
  for (const list of [userIds, assistantSteps, assistantIds, resultIds, callIds])
    expect(new Set(list).size).toBe(list.length);
}

const turnEnds = (events: readonly SessionEvent[]) =>
  events.flatMap((e) => (e.type === 'turn/end' ? [e.data.reason.kind] : []));

/** Attempt numbers with which the session's activities of `type` finally ran (from the workflow history). */
async function attemptsOf(id: string, type: string): Promise<number[]> {
  const history = await sessions.handle(id).fetchHistory();
  const scheduled = new Set<string>();
  const attempts: number[] = [];
  for (const e of history.events ?? []) {
    const s = e.activityTaskScheduledEventAttributes;
    if (s?.activityType?.name === type) scheduled.add(String(e.eventId));
    const started = e.activityTaskStartedEventAttributes;
    if (started && scheduled.has(String(started.scheduledEventId))) attempts.push(started.attempt ?? 0);
  }
  return attempts;
}

beforeAll(async () => {
  if (!existsSync(path.join(ROOT, 'dist/cli/main.js'))) {
    throw new Error('dist/ is missing: run `npm run build` first (npm test does it in pretest)');
  }
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'agent-sessions-crash-'));
  server = await spawnDevServer({ dataDir });
  connection = await Connection.connect({ address: server.address });
  sessions = new SessionClient({ client: new Client({ connection }), taskQueue });
  process.once('exit', killAll);
});

function killAll(): void {
  for (const w of workers) w.child.kill('SIGKILL');
}

afterAll(async () => {
  killAll();
  await Promise.all([...workers].map((w) => w.exited));
  await connection?.close();
  await server?.stop({ signal: 'SIGKILL' });
  process.removeListener('exit', killAll);
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('a worker killed with SIGKILL', { timeout: 90_000 }, () => {
  it('21: during a model call → a new worker completes the turn; one user/message and one assistant/message', async () => {
    const first = await ensureWorker();
    const id = `crash-model-${randomUUID()}`;
    await sessions.start(id, {
      model: { provider: 'scripted', steps: [{ text: 'answer after the crash', delayMs: 3_000 }] },
    });
    await sessions.followup(id, { id: 'm-P', content: 'P' });
    await activityRunning(id, 'modelStep');
    await killWorker(first);
    await startWorker();
    const events = await settleWithin(id, 1, 45_000);
    expectNothingDoubled(events);
    expect(turnEnds(events)).toEqual(['completed']);
    expect(events.filter((e) => e.type === 'user/message')).toHaveLength(1);
    const assistant = events.filter((e) => e.type === 'assistant/message');
    expect(assistant).toHaveLength(1);
    expect(assistant[0]!.type === 'assistant/message' && assistant[0]!.data.message.content).toEqual([
      { type: 'text', text: 'answer after the crash' },
    ]);
    // The kill really hit the running call: it completed on a later attempt.
    expect((await attemptsOf(id, 'modelStep'))[0]).toBeGreaterThanOrEqual(2);
  });

  it('during a tool call → the call is retried on the new worker and commits one tool/result', async () => {
    const first = await ensureWorker();
    const id = `crash-tool-${randomUUID()}`;
    await sessions.start(id, {
      tools: ['sleep'],
      model: {
        provider: 'scripted',
        steps: [{ toolCalls: [{ name: 'sleep', args: { ms: 3_000 } }] }, { text: 'slept' }],
      },
    });
    await sessions.followup(id, 'P');
    await activityRunning(id, 'executeTool');
    await killWorker(first);
    await startWorker();
    const events = await settleWithin(id, 1, 45_000);
    expectNothingDoubled(events);
    expect(turnEnds(events)).toEqual(['completed']);
    const results = events.flatMap((e) => (e.type === 'tool/result' ? [e.data] : []));
    expect(results).toHaveLength(1);
    expect(results[0]!.error).toBeUndefined();
    expect(results[0]!.content).toEqual([{ type: 'text', text: 'slept 3000 ms' }]);
    expect((await attemptsOf(id, 'executeTool'))[0]).toBeGreaterThanOrEqual(2);
  });

  it('during a compaction → it is retried on the new worker; one compaction/summary, and the turn completes', async () => {
    const first = await ensureWorker();
    const id = `crash-compaction-${randomUUID()}`;
    const long = (tag: string) => Array.from({ length: 40 }, (_, i) => `${tag}${i}`).join(' ');
    await sessions.start(id, {
      context: {
        maxTokens: 256,
        compactAt: 0.3,
        keepRecent: 1,
        model: { provider: 'scripted', steps: [{ text: 'the gist of turn 1', delayMs: 3_000 }] },
      },
    });
    await sessions.followup(id, { id: 'm-1', content: long('a') });
    await settleWithin(id, 1, 20_000);
    // The second request would pass 30 % of 256 tokens: the loop compacts first.
    await sessions.followup(id, { id: 'm-2', content: long('b') });
    await activityRunning(id, 'compactTranscript');
    await killWorker(first);
    await startWorker();
    const events = await settleWithin(id, 2, 45_000);
    expectNothingDoubled(events);
    expect(turnEnds(events)).toEqual(['completed', 'completed']);
    const summaries = events.filter((e) => e.type === 'compaction/summary');
    expect(summaries).toHaveLength(1);
    expect(summaries[0]).toMatchObject({ data: { summary: 'the gist of turn 1', turn: 2, step: 1 } });
    expect((await attemptsOf(id, 'compactTranscript'))[0]).toBeGreaterThanOrEqual(2);
  });

  it('between workflow tasks → a follow-up sent while no worker runs starts its turn on the next worker', async () => {
    const first = await ensureWorker();
    const id = `crash-idle-${randomUUID()}`;
    await sessions.start(id);
    await sessions.followup(id, { id: 'm-1', content: 'one' });
    await settleWithin(id, 1, 20_000);
    await killWorker(first);
    await sessions.followup(id, { id: 'm-2', content: 'two' });
    await startWorker();
    const events = await settleWithin(id, 2, 45_000);
    expectNothingDoubled(events);
    expect(turnEnds(events)).toEqual(['completed', 'completed']);
    const assistantTexts = events.flatMap((e) =>
      e.type === 'assistant/message' ? [e.data.message.content.map((b) => b.text).join('')] : [],
    );
    expect(assistantTexts).toEqual(['echo: one', 'echo: two']);
  });
});

describe('the dev server killed with SIGKILL', { timeout: 90_000 }, () => {
  it('during a model call, then started again on the same SQLite file and port → the turn completes', async () => {
    const worker = await ensureWorker();
    const id = `crash-server-${randomUUID()}`;
    await sessions.start(id, {
      model: { provider: 'scripted', steps: [{ text: 'survived the server', delayMs: 3_000 }] },
    });
    await sessions.followup(id, { id: 'm-S', content: 'S' });
    await activityRunning(id, 'modelStep');
    const { port, dbFilename } = server;
    await server.stop({ signal: 'SIGKILL' });
    server = await spawnDevServer({ port, ...(dbFilename ? { dbFilename } : {}) });
    const events = await settleWithin(id, 1, 60_000);
    expectNothingDoubled(events);
    expect(turnEnds(events)).toEqual(['completed']);
    const assistant = events.flatMap((e) => (e.type === 'assistant/message' ? [e.data.message.content] : []));
    expect(assistant).toEqual([[{ type: 'text', text: 'survived the server' }]]);
    // The same worker process lived through the outage.
    expect(worker.child.exitCode).toBeNull();
  });
});
