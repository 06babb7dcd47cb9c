/**
 * A session a worker refuses at its start (issue 35, part 4), on the dev server: the refusal names the worker (its
 * identity and task queue) and says why, and the session does not stay behind idle — it disposes itself, so `list`
 * shows it only among the disposed. A session whose names were accepted before (a later run, after continue-as-new)
 * keeps living when a worker without its tools refuses a turn.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { defineHook } from '../../src/activities/hooks';
import { DeliveryRejectedError, SessionClient, SessionDisposedError } from '../../src/client';
import type { SessionEvent } from '../../src/domain/events';
import { createSessionWorker } from '../../src/worker';
import { testingTools } from '../../src/activities/testingTools';
import { newId, settle, startSessionTestEnv, waitUntil, type SessionTestEnv } from '../support/sessionEnv';

let t: SessionTestEnv;
beforeAll(async () => {
  t = await startSessionTestEnv('dev', [], {
    hooks: [defineHook({ name: 'noop', kind: 'pre-step', run: () => ({}) })],
    worker: { identity: 'demo-worker@laptop' },
  });
});
afterAll(async () => {
  await t?.teardown();
});

const WHY = (kind: string) =>
  `every worker polling a task queue must register the same ${kind}s, so give a worker with other ${kind}s its own task queue`;

const disposedState = (s: SessionClient, id: string) =>
  waitUntil(
    () => s.state(id),
    (state) => state.status === 'disposed',
    `session ${id} to dispose itself`,
  );

const types = (events: readonly SessionEvent[]) => events.map((e) => e.type);

describe('a session refused at its start', () => {
  it('deliverWithStart: the rejection names the worker and its queue; the session disposes itself and leaves the live list', async () => {
    const s = t.sessions();
    const id = newId('refused');
    const label = `refused-${randomUUID().slice(0, 8)}`;
    const attempt = s.deliverWithStart(id, 'followup', 'where is my order?', {
      tools: ['echo', 'order_status'],
      labels: [label],
    });
    const err = await attempt.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DeliveryRejectedError);
    const message = (err as Error).message;
    expect(message).toContain(
      `session names tool "order_status" that worker demo-worker@laptop on task queue "${t.taskQueue}" does not register (registered: `,
    );
    expect(message).toContain(WHY('tool'));

    expect(await disposedState(s, id)).toMatchObject({ status: 'disposed', turn: 0 });
    expect(types(await s.allEvents(id))).toEqual(['session/disposed']);
    await expect(s.deliver(id, 'followup', 'again')).rejects.toBeInstanceOf(SessionDisposedError);
    // Not among the live sessions; listed as disposed.
    await waitUntil(
      async () => (await s.list({ label, status: 'disposed' })).sessions,
      (rows) => rows.length === 1 && rows[0]!.status === 'disposed',
      'the refused session listed as disposed',
    );
    expect((await s.list({ label })).sessions).toEqual([]);
  });

  it('a plain start: turn 1 ends in error naming the worker, then the session disposes itself', async () => {
    const s = t.sessions();
    const id = newId('refused');
    await s.start(id, { hooks: ['noop', 'ghost'] });
    await s.followup(id, 'hi');
    await s.followup(id, 'queued behind it');
    await disposedState(s, id);
    const events = await settle(s, id);
    const ends = events.flatMap((e) => (e.type === 'turn/end' ? [e.data.reason] : []));
    expect(ends).toEqual([
      {
        kind: 'error',
        error: {
          code: 'UNKNOWN_HOOK',
          message: `session names hook "ghost" that worker demo-worker@laptop on task queue "${t.taskQueue}" does not register (registered: noop); ${WHY('hook')}`,
        },
      },
    ]);
    expect(types(events).slice(-1)).toEqual(['session/disposed']);
    expect(types(events)).not.toContain('step/start');
    expect(t.recorder.requests(id)).toHaveLength(0);
  });
});

describe('a session whose names a worker accepted before', () => {
  it('keeps living in a later run when a worker without its tool refuses a turn', async () => {
    const taskQueue = `later-${randomUUID()}`;
    const s = new SessionClient({ client: t.env.client, taskQueue });
    const start = (tools: typeof testingTools) =>
      createSessionWorker({
        connection: t.env.nativeConnection,
        taskQueue,
        tools,
        workflowBundle: { codePath: inject('workflowBundlePath') },
      }).then((worker) => ({ worker, running: worker.run() }));

    const id = newId('later');
    const withEcho = await start(testingTools);
    await s.start(id, { tools: ['echo'], continueAsNewAfterEvents: 10 });
    await s.followup(id, 'one');
    await settle(s, id, 1);
    await s.followup(id, 'two');
    await settle(s, id, 2);
    // Two turns are over 10 events: the session continued as new, and its next run checks its names again.
    await waitUntil(
      async () => (await s.events(id)).previousRunId,
      (prev) => prev !== undefined,
      'the second run',
    );
    withEcho.worker.shutdown();
    await withEcho.running;
    const without = await start([]);
    try {
      await s.followup(id, 'three');
      const events = await settle(s, id, 3);
      const last = events.filter((e) => e.type === 'turn/end').at(-1);
      expect(last).toMatchObject({ data: { reason: { kind: 'error', error: { code: 'UNKNOWN_TOOL' } } } });
      expect(await s.state(id)).toMatchObject({ status: 'idle', turn: 3 });
    } finally {
      without.worker.shutdown();
      await without.running;
    }
  });
});
