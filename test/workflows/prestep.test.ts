/**
 * Semantics C on the time-skipping server: claims, the pre-step waterfall, reject, listener failure and empty enter.
 * Scenarios 6, 7, 8, 9, 10 of docs/semantics.md and rules 10, 11, 12, 15, 16, 17, with the workflow variants of
 * test/fixtures/workflows.ts.
 *
 * A pre-step "in flight" is the hold variant's one-hour workflow timer: the test waits until the claim splices are in
 * the log, sends its input, then skips workflow time with `env.sleep`. Input that must arrive "in one go" is sent to
 * a task queue no worker polls yet; the worker is started afterwards, so its first workflow task sees it all.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionClient } from '../../src/client';
import type { SessionEvent, SpliceData } from '../../src/domain/events';
import { spliceShape } from '../../src/domain/inbox';
import type { ModelSpec, ScriptedStep } from '../../src/domain/wire';
import {
  withoutWorkerYet,
  newId,
  settle,
  startSessionTestEnv,
  summarize,
  userTexts,
  waitUntil,
  type SessionTestEnv,
} from '../support/sessionEnv';

let t: SessionTestEnv;
beforeAll(async () => {
  t = await startSessionTestEnv();
});
afterAll(async () => {
  await t?.teardown();
});

const scripted = (...steps: ScriptedStep[]): ModelSpec => ({ provider: 'scripted', steps });
const plugin = (name: string) => ({ kind: 'plugin', plugin: name });

const claims = (events: readonly SessionEvent[]): SpliceData[] =>
  events.flatMap((e) =>
    e.type === 'agent/inbox/spliced' && spliceShape(e.data) === 'claim' ? [e.data] : [],
  );

/** Waits until `n` claim splices are in the log (pre-step of that boundary has started). */
const claimed = (s: SessionClient, id: string, n = 1) =>
  waitUntil(
    () => s.allEvents(id),
    (events) => claims(events).length >= n,
    `${n} claim splice(s) in the log of ${id}`,
  );

const turnEnds = (events: readonly SessionEvent[]) =>
  events.flatMap((e) => (e.type === 'turn/end' ? [e.data.reason] : []));
const enteredTexts = (events: readonly SessionEvent[]) =>
  events.flatMap((e) =>
    e.type === 'user/message' ? [e.data.message.content.map((b) => b.text).join('')] : [],
  );

describe('claim before pre-step (rules 10, 11)', () => {
  it('11: turn/start, then the claim splices (pure deletions, next-step first), then pre-step, then step/start', async () => {
    const s = t.sessions('agentSessionHold');
    const id = newId();
    await s.start(id);
    await s.inject(id, { content: 'A', source: plugin('watcher') });
    await s.followup(id, 'hold P');
    // Pre-step is in flight (held on its timer): the claims are logged, no step has started.
    const held = await claimed(s, id, 2);
    expect(summarize(held)).toEqual([
      'insert next-step A',
      'insert next-turn hold P',
      'turn/start 1',
      'claim next-step 1',
      'claim next-turn 1',
    ]);
    expect(claims(held)).toEqual([
      { target: 'next-step', start: 0, removedCount: 1, inserted: [] },
      { target: 'next-turn', start: 0, removedCount: 1, inserted: [] },
    ]);
    expect(await s.state(id)).toMatchObject({
      status: 'running',
      turn: 1,
      step: 0,
      pending: { nextTurn: [], nextStep: [] },
    });
    expect(t.recorder.requests(id)).toHaveLength(0);
    await t.env.sleep('2 hours');
    const events = await settle(s, id);
    expect(summarize(events)).toEqual([
      'insert next-step A',
      'insert next-turn hold P',
      'turn/start 1',
      'claim next-step 1',
      'claim next-turn 1',
      'step/start 1.1',
      'user/message A',
      'user/message hold P',
      'assistant/message echo: hold P',
      'step/end 1.1',
      'turn/end 1 completed',
    ]);
    expect(userTexts(t.recorder.requests(id)[0]!)).toEqual(['A', 'hold P']);
  });
});

describe('input while pre-step runs (scenarios 6, 9; rule 12)', () => {
  it('6: an inject while pre-step is in flight is not in that batch; it enters at step 2 of the same turn', async () => {
    const s = t.sessions('agentSessionHold');
    const id = newId();
    await s.start(id);
    await s.followup(id, 'hold P');
    await claimed(s, id);
    await s.inject(id, { content: 'A', source: plugin('watcher') });
    await waitUntil(
      () => s.state(id),
      (st) => st.pending.nextStep.length === 1,
      'A to be pending',
    );
    await t.env.sleep('2 hours');
    const events = await settle(s, id);
    expect(summarize(events)).toEqual([
      'insert next-turn hold P',
      'turn/start 1',
      'claim next-turn 1',
      'insert next-step A',
      'step/start 1.1',
      'user/message hold P',
      'assistant/message echo: hold P',
      'step/end 1.1',
      'claim next-step 1',
      'step/start 1.2',
      'user/message A',
      'assistant/message echo: A',
      'step/end 1.2',
      'turn/end 1 completed',
    ]);
    expect(t.recorder.requests(id).map(userTexts)).toEqual([['hold P'], ['hold P', 'A']]);
  });

  it('6 (reject): an inject while pre-step is in flight stays pending when pre-step rejects', async () => {
    const s = t.sessions('agentSessionHold');
    const id = newId();
    await s.start(id);
    await s.followup(id, 'hold reject');
    await claimed(s, id);
    const a = await s.inject(id, { content: 'A', source: plugin('watcher') });
    await waitUntil(
      () => s.state(id),
      (st) => st.pending.nextStep.length === 1,
      'A to be pending',
    );
    await t.env.sleep('2 hours');
    const events = await settle(s, id);
    expect(summarize(events)).toEqual([
      'insert next-turn hold reject',
      'turn/start 1',
      'claim next-turn 1',
      'insert next-step A',
      'turn/end 1 blocked',
    ]);
    expect(await s.state(id)).toMatchObject({
      status: 'idle',
      turn: 1,
      pending: { nextTurn: [], nextStep: [a] },
    });
    expect(t.recorder.requests(id)).toHaveLength(0);
  });

  it('9: inject A and steer S during pre-step 1, then reject → next-step [A, S] pending; followup(W) enters [A, S, W]', async () => {
    const s = t.sessions('agentSessionHold');
    const id = newId();
    await s.start(id);
    await s.followup(id, 'hold reject');
    await claimed(s, id);
    const a = await s.inject(id, { content: 'A', source: plugin('watcher') });
    const st = await s.steer(id, 'S');
    await waitUntil(
      () => s.state(id),
      (v) => v.pending.nextStep.length === 2,
      'A and S to be pending',
    );
    await t.env.sleep('2 hours');
    const first = await settle(s, id);
    expect(summarize(first)).toEqual([
      'insert next-turn hold reject',
      'turn/start 1',
      'claim next-turn 1',
      'insert next-step A',
      'insert next-step S',
      'turn/end 1 blocked',
    ]);
    // The steer arrived during the turn that was then blocked: it waits with A for the next waking message.
    expect(await s.state(id)).toMatchObject({
      status: 'idle',
      turn: 1,
      pending: { nextTurn: [], nextStep: [a, st] },
    });
    expect(t.recorder.requests(id)).toHaveLength(0);
    await s.followup(id, 'W');
    const events = await settle(s, id, 2);
    expect(summarize(events).slice(first.length)).toEqual([
      'insert next-turn W',
      'turn/start 2',
      'claim next-step 2',
      'claim next-turn 1',
      'step/start 2.1',
      'user/message A',
      'user/message S',
      'user/message W',
      'assistant/message echo: W',
      'step/end 2.1',
      'turn/end 2 completed',
    ]);
    expect(t.recorder.requests(id).map(userTexts)).toEqual([['A', 'S', 'W']]);
  });
});

describe('what listeners decide (scenarios 7, 8, 10; rules 13, 15, 16)', () => {
  it('7: a listener that adds context X after the downstream batch enters it in step 1 and R[0] has it', async () => {
    const s = t.sessions('agentSessionContext');
    const id = newId();
    await s.start(id, {
      model: scripted({ toolCalls: [{ name: 'echo', args: { text: 'e' } }] }),
      tools: ['echo'],
    });
    await s.followup(id, 'P');
    const first = await settle(s, id);
    expect(summarize(first)).toEqual([
      'insert next-turn P',
      'turn/start 1',
      'claim next-turn 1',
      'step/start 1.1',
      'user/message P',
      'user/message context X for turn 1',
      'assistant/message  +1 calls',
      'tool/call echo call_0_0',
      'tool/result call_0_0',
      'step/end 1.1',
      'step/start 1.2',
      'assistant/message echo: context X for turn 1',
      'step/end 1.2',
      'turn/end 1 completed',
    ]);
    const x = first.flatMap((e) => (e.type === 'user/message' ? [e.data.message] : []))[1]!;
    expect(x).toMatchObject({
      role: 'user',
      source: plugin('x-provider'),
      content: [{ type: 'text', text: 'context X for turn 1' }],
    });
    const [r0] = t.recorder.requests(id);
    expect(r0!.messages).toEqual([
      expect.objectContaining({
        role: 'user',
        content: [{ type: 'text', text: 'P' }],
        source: { kind: 'user' },
      }),
      { role: 'user', id: x.id, content: x.content, source: plugin('x-provider') },
    ]);
    // Each turn's first step gets its own context, after that turn's batch.
    await s.followup(id, 'Q');
    const events = await settle(s, id, 2);
    expect(summarize(events).slice(first.length)).toEqual([
      'insert next-turn Q',
      'turn/start 2',
      'claim next-turn 1',
      'step/start 2.1',
      'user/message Q',
      'user/message context X for turn 2',
      'assistant/message echo: context X for turn 2',
      'step/end 2.1',
      'turn/end 2 completed',
    ]);
    expect(userTexts(t.recorder.requests(id)[2]!)).toEqual([
      'P',
      'context X for turn 1',
      'Q',
      'context X for turn 2',
    ]);
  });

  it('8: followup(secret), followup(safe) in one go → turn 1 blocked without a step; safe waits for W, then runs in its own turn', async () => {
    const late = withoutWorkerYet(t, 'agentSessionGuard');
    const { s } = late;
    const id = newId();
    try {
      await s.start(id);
      await s.followup(id, 'secret');
      const safe = await s.followup(id, 'safe');
      await late.startWorker();
      const first = await settle(s, id);
      expect(summarize(first)).toEqual([
        'insert next-turn secret',
        'insert next-turn safe',
        'turn/start 1',
        'claim next-turn 1',
        'turn/end 1 blocked',
      ]);
      expect(turnEnds(first)[0]!.kind).toBe('blocked');
      // The claimed batch is neither re-queued nor reported as discarded; safe stays pending, no turn starts.
      expect(await s.state(id)).toMatchObject({
        status: 'idle',
        turn: 1,
        pending: { nextTurn: [safe], nextStep: [] },
      });
      expect(t.recorder.requests(id)).toHaveLength(0);
      await s.followup(id, 'W');
      const events = await settle(s, id, 3);
      expect(summarize(events).slice(first.length)).toEqual([
        'insert next-turn W',
        'turn/start 2',
        'claim next-turn 1',
        'step/start 2.1',
        'user/message safe',
        'assistant/message echo: safe',
        'step/end 2.1',
        'turn/end 2 completed',
        'turn/start 3',
        'claim next-turn 1',
        'step/start 3.1',
        'user/message W',
        'assistant/message echo: W',
        'step/end 3.1',
        'turn/end 3 completed',
      ]);
      expect(enteredTexts(events)).not.toContain('secret');
      expect(t.recorder.requests(id).map(userTexts)).toEqual([['safe'], ['safe', 'W']]);
    } finally {
      await late.stop();
    }
  });

  it('10: a pre-step that fails with P1, P2 queued ends turn 1 in error with no step; P1 is gone, P2 runs after W', async () => {
    const late = withoutWorkerYet(t, 'agentSessionFailOnce');
    const { s } = late;
    const id = newId();
    try {
      await s.start(id);
      const p1 = await s.followup(id, 'P1');
      const p2 = await s.followup(id, 'P2');
      await late.startWorker();
      const first = await settle(s, id);
      expect(summarize(first)).toEqual([
        'insert next-turn P1',
        'insert next-turn P2',
        'turn/start 1',
        'claim next-turn 1',
        'turn/end 1 error',
      ]);
      expect(turnEnds(first)).toEqual([
        { kind: 'error', error: { code: 'PRE_STEP_FAILED', message: 'pre-step hook failed' } },
      ]);
      const state = await s.state(id);
      expect(state).toMatchObject({ status: 'idle', turn: 1, pending: { nextTurn: [p2], nextStep: [] } });
      expect(state.pending.nextTurn).not.toContain(p1);
      expect(t.recorder.requests(id)).toHaveLength(0);
      await s.followup(id, 'W');
      const events = await settle(s, id, 3);
      expect(summarize(events).slice(first.length)).toEqual([
        'insert next-turn W',
        'turn/start 2',
        'claim next-turn 1',
        'step/start 2.1',
        'user/message P2',
        'assistant/message echo: P2',
        'step/end 2.1',
        'turn/end 2 completed',
        'turn/start 3',
        'claim next-turn 1',
        'step/start 3.1',
        'user/message W',
        'assistant/message echo: W',
        'step/end 3.1',
        'turn/end 3 completed',
      ]);
      // P1 was claimed and never entered, re-queued or discarded.
      expect(enteredTexts(events)).toEqual(['P2', 'W']);
      expect(t.recorder.requests(id).map(userTexts)).toEqual([['P2'], ['P2', 'W']]);
      const history = await s.handle(id).fetchHistory();
      expect((history.events ?? []).filter((e) => e.workflowTaskFailedEventAttributes)).toHaveLength(0);
    } finally {
      await late.stop();
    }
  });
});

describe('empty enter (rule 17)', () => {
  it('before any step: the turn ends completed with no step and no model call; the session stays awake', async () => {
    const s = t.sessions('agentSessionDrop');
    const id = newId();
    await s.start(id);
    await s.followup(id, 'drop it');
    const first = await settle(s, id);
    expect(summarize(first)).toEqual([
      'insert next-turn drop it',
      'turn/start 1',
      'claim next-turn 1',
      'turn/end 1 completed',
    ]);
    expect(t.recorder.requests(id)).toHaveLength(0);
    expect(await s.state(id)).toMatchObject({
      status: 'idle',
      turn: 1,
      pending: { nextTurn: [], nextStep: [] },
    });
    await s.followup(id, 'Q');
    const events = await settle(s, id, 2);
    expect(summarize(events).slice(first.length)).toEqual([
      'insert next-turn Q',
      'turn/start 2',
      'claim next-turn 1',
      'step/start 2.1',
      'user/message Q',
      'assistant/message echo: Q',
      'step/end 2.1',
      'turn/end 2 completed',
    ]);
    expect(t.recorder.requests(id).map(userTexts)).toEqual([['Q']]);
  });

  it('after a completed step: the turn ends without another step', async () => {
    const s = t.sessions('agentSessionDrop');
    const id = newId();
    await s.start(id, { model: scripted({ text: 'a', delayMs: 1000 }) });
    await s.followup(id, 'P');
    await waitUntil(
      async () => t.recorder.requests(id).length,
      (n) => n >= 1,
      'R[0]',
    );
    await s.inject(id, { content: 'drop A', source: plugin('watcher') });
    const events = await settle(s, id);
    expect(summarize(events)).toEqual([
      'insert next-turn P',
      'turn/start 1',
      'claim next-turn 1',
      'step/start 1.1',
      'user/message P',
      'insert next-step drop A',
      'assistant/message a',
      'step/end 1.1',
      'claim next-step 1',
      'turn/end 1 completed',
    ]);
    expect(t.recorder.requests(id)).toHaveLength(1);
  });

  it('while tools still owe the model a request: the continuation step opens without messages', async () => {
    const s = t.sessions('agentSessionDrop');
    const id = newId();
    await s.start(id, {
      model: scripted({
        toolCalls: [{ name: 'emit_context', args: { contexts: [{ content: 'drop ctx' }] } }],
      }),
      tools: ['emit_context'],
    });
    await s.followup(id, 'P');
    const events = await settle(s, id);
    expect(summarize(events)).toEqual([
      'insert next-turn P',
      'turn/start 1',
      'claim next-turn 1',
      'step/start 1.1',
      'user/message P',
      'assistant/message  +1 calls',
      'tool/call emit_context call_0_0',
      'tool/result call_0_0',
      'insert next-step drop ctx',
      'step/end 1.1',
      'claim next-step 1',
      'step/start 1.2',
      'assistant/message echo: P',
      'step/end 1.2',
      'turn/end 1 completed',
    ]);
    const r1 = t.recorder.requests(id)[1]!;
    expect(r1.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
  });
});
