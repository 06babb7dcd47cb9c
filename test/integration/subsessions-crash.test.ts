/**
 * A worker killed with SIGKILL while a sub-session's turn runs (docs/protocol.md "Sub-sessions", rule 32): real
 * `agent-sessions worker` processes against a dev server. The child's model call is retried on a new worker, the
 * child's turn completes once, and the parent's delegate call commits the child's answer once.
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
import { textOf } from '../../src/domain/messages';
import { assertLogValid } from '../../src/testing';
import { eventually } from '../support/eventually';
import {
  killWorker,
  ROOT,
  startWorker as startCliWorker,
  type WorkerProcess,
} from '../support/workerProcess';

const taskQueue = `crash-sub-${randomUUID()}`;
const STARTED = temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED;

let dataDir: string;
let server: DevServerProcess;
let connection: Connection;
let sessions: SessionClient;
const workers = new Set<WorkerProcess>();

/** Starts `agent-sessions worker` (testing and subsessions toolsets) and resolves once it is polling. */
function startWorker(): Promise<WorkerProcess> {
  return startCliWorker(
    {
      TEMPORAL_ADDRESS: server.address,
      TEMPORAL_NAMESPACE: 'default',
      TASK_QUEUE: taskQueue,
      AGENT_SESSIONS_TOOLSETS: 'testing,subsessions',
    },
    workers,
    30_000,
  );
}

function killAll(): void {
  for (const w of workers) w.child.kill('SIGKILL');
}

beforeAll(async () => {
  if (!existsSync(path.join(ROOT, 'dist/cli/main.js')))
    throw new Error('dist/ is missing: run `npm run build` first (npm test does it in pretest)');
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'agent-sessions-crash-sub-'));
  server = await spawnDevServer({ dataDir });
  connection = await Connection.connect({ address: server.address });
  sessions = new SessionClient({ client: new Client({ connection }), taskQueue });
  process.once('exit', killAll);
});

afterAll(async () => {
  killAll();
  await Promise.all([...workers].map((w) => w.exited));
  await connection?.close();
  await server?.stop({ signal: 'SIGKILL' });
  process.removeListener('exit', killAll);
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

const count = (events: readonly SessionEvent[], type: SessionEvent['type']) =>
  events.filter((e) => e.type === type).length;

describe('a worker killed with SIGKILL during a sub-session', { timeout: 90_000 }, () => {
  it("a new worker completes the child's turn; the parent commits its answer once", async () => {
    const first = await startWorker();
    const id = `crash-parent-${randomUUID()}`;
    const child = `${id}/sub/call_0_0`;
    await sessions.start(id, {
      tools: ['delegate'],
      model: {
        provider: 'scripted',
        steps: [
          {
            toolCalls: [
              {
                name: 'delegate',
                args: { task: 'survive', script: [{ text: 'child answer after the crash', delayMs: 3_000 }] },
              },
            ],
          },
          { text: 'parent done' },
        ],
      },
    });
    await sessions.followup(id, { id: 'm-P', content: 'P' });
    await eventually(
      () => sessions.handle(child).describe(),
      (d) =>
        (d.raw.pendingActivities ?? []).some(
          (a) => a.activityType?.name === 'modelStep' && a.state === STARTED,
        ),
      "the sub-session's model call to run",
      20_000,
    );
    await killWorker(first);
    await startWorker();

    await eventually(
      () => sessions.state(id),
      (s) => s.status === 'idle' && s.turn >= 1,
      'the parent turn to end',
      60_000,
    );
    const events = await sessions.allEvents(id);
    assertLogValid(events);
    expect(events.flatMap((e) => (e.type === 'turn/end' ? [e.data.reason.kind] : []))).toEqual(['completed']);
    for (const type of ['subsession/started', 'subsession/ended', 'tool/result'] as const)
      expect(count(events, type)).toBe(1);
    const result = events.find((e) => e.type === 'tool/result');
    expect(result?.type === 'tool/result' && textOf(result.data.content)).toBe(
      'child answer after the crash',
    );

    await sessions.handle(child).result();
    const childEvents = await sessions.allEvents(child);
    assertLogValid(childEvents);
    expect(count(childEvents, 'user/message')).toBe(1);
    expect(count(childEvents, 'assistant/message')).toBe(1);
    expect(childEvents.at(-1)?.type).toBe('session/disposed');
    // The kill really hit the child's running model call: it completed on a later attempt.
    const history = await sessions.handle(child).fetchHistory();
    const attempts = (history.events ?? []).flatMap((e) =>
      e.activityTaskStartedEventAttributes ? [e.activityTaskStartedEventAttributes.attempt ?? 0] : [],
    );
    expect(Math.max(...attempts)).toBeGreaterThanOrEqual(2);
    await sessions.dispose(id);
  });
});
