/**
 * Semantics F on the time-skipping server: cancel and dispose (rules 27–31, scenarios 16–20).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionDisposedError } from '../../src/client';
import {
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

const ctx = (text: string) => ({ content: text, source: { kind: 'plugin', plugin: 'watcher' } });
const hasEvent = (type: string) => (events: { type: string }[]) => events.some((e) => e.type === type);

describe('cancel (rules 27–30)', () => {
  it('16: cancel during a model call discards Q and A, keeps the visible text as interrupted, aborts the turn', async () => {
    const s = t.sessions();
    const id = newId();
    await s.start(id, {
      model: { provider: 'scripted', steps: [{ text: 'partial answer', delayMs: 30_000 }] },
    });
    await s.followup(id, 'P');
    await waitUntil(() => s.allEvents(id), hasEvent('step/start'), 'step 1.1');
    await s.followup(id, 'Q');
    await s.inject(id, ctx('A'));
    await waitUntil(
      () => s.state(id),
      (st) => st.pending.nextStep.length === 1 && st.pending.nextTurn.length === 1,
      'Q and A pending',
    );
    await s.cancel(id);
    const events = await settle(s, id);
    expect(summarize(events)).toEqual([
      'insert next-turn P',
      'turn/start 1',
      'claim next-turn 1',
      'step/start 1.1',
      'user/message P',
      'insert next-turn Q',
      'insert next-step A',
      'cancel next-step 1',
      'cancel next-turn 1',
      'assistant/message partial answer',
      'step/end 1.1',
      'turn/end 1 aborted',
    ]);
    const assistant = events.find((e) => e.type === 'assistant/message');
    expect(assistant?.type === 'assistant/message' && assistant.data.interrupted).toBe(true);
    const end = events.at(-1)!;
    expect(end.type === 'turn/end' && end.data.reason).toEqual({ kind: 'aborted', reason: { kind: 'user' } });
    const state = await s.state(id);
    expect(state.pending).toEqual({ nextTurn: [], nextStep: [] });
    expect(state.turn).toBe(1);
  });

  it('17: cancel with keepInbox keeps A and Q; a later followup(W) runs [A, Q] in one turn, then W', async () => {
    const s = t.sessions();
    const id = newId();
    await s.start(id, { model: { provider: 'scripted', steps: [{ delayMs: 30_000 }] } });
    await s.followup(id, 'P');
    await waitUntil(() => s.allEvents(id), hasEvent('step/start'), 'step 1.1');
    await s.followup(id, 'Q');
    await s.inject(id, ctx('A'));
    await waitUntil(
      () => s.state(id),
      (st) => st.pending.nextStep.length + st.pending.nextTurn.length === 2,
      'Q and A pending',
    );
    await s.cancel(id, { keepInbox: true });
    await settle(s, id);
    // Pending work waits for the next waking message.
    expect((await s.state(id)).pending.nextTurn).toHaveLength(1);
    expect((await s.state(id)).status).toBe('idle');
    await s.followup(id, 'W');
    const events = await settle(s, id, 3);
    const turns = events
      .filter((e) => e.type === 'turn/end')
      .map((e) => e.type === 'turn/end' && e.data.reason.kind);
    expect(turns).toEqual(['aborted', 'completed', 'completed']);
    const requests = t.recorder.requests(id);
    // No assistant text was visible when the cancel came, so turn 1 left no assistant/message.
    expect(events.filter((e) => e.type === 'assistant/message')).toHaveLength(2);
    expect(userTexts(requests[1]!)).toEqual(['P', 'A', 'Q']);
    expect(userTexts(requests[2]!)).toEqual(['P', 'A', 'Q', 'W']);
  });

  it('18: cancel during four parallel tools with two started: 3 and 4 get ABORTED_BEFORE_DISPATCH pairs, 1 and 2 settle', async () => {
    const s = t.sessions();
    const id = newId();
    const held = (context: string) => ({ name: 'sleep', args: { ms: 30_000, graceful: true, context } });
    await s.start(id, {
      tools: ['sleep', 'echo'],
      maxParallelToolCalls: 2,
      model: {
        provider: 'scripted',
        steps: [
          {
            toolCalls: [
              held('ctx-1'),
              held('ctx-2'),
              { name: 'echo', args: { text: '3' } },
              { name: 'echo', args: { text: '4' } },
            ],
          },
        ],
      },
    });
    await s.followup(id, 'go');
    await waitUntil(
      () => s.allEvents(id),
      (e) => e.filter((x) => x.type === 'tool/call').length === 2,
      'two started calls',
    );
    await s.cancel(id);
    const events = await settle(s, id);
    const tail = summarize(events.slice(events.findIndex((e) => e.type === 'tool/call')));
    expect(tail).toEqual([
      'tool/call sleep call_0_0',
      'tool/call sleep call_0_1',
      'tool/result call_0_0',
      'insert next-step ctx-1',
      'tool/result call_0_1',
      'insert next-step ctx-2',
      'tool/call echo call_0_2',
      'tool/result call_0_2 error ABORTED_BEFORE_DISPATCH',
      'tool/call echo call_0_3',
      'tool/result call_0_3 error ABORTED_BEFORE_DISPATCH',
      'step/end 1.1',
      'turn/end 1 aborted',
    ]);
    // The settled calls' contexts stay parked in next-step until the next waking message.
    const state = await s.state(id);
    expect(state.pending.nextStep).toHaveLength(2);
    expect(state.status).toBe('idle');
    await s.followup(id, 'again');
    await settle(s, id, 2);
    const request = t.recorder.requests(id)[1]!;
    expect(userTexts(request).slice(-3)).toEqual(['ctx-1', 'ctx-2', 'again']);
  });

  it('19: a follow-up sent right after a cancel, before the turn closed, starts turn 2 by itself', async () => {
    const s = t.sessions();
    const id = newId();
    await s.start(id, {
      tools: ['sleep'],
      model: { provider: 'scripted', steps: [{ toolCalls: [{ name: 'sleep', args: { ms: 30_000 } }] }] },
    });
    await s.followup(id, 'P');
    await waitUntil(() => s.allEvents(id), hasEvent('tool/call'), 'the tool call');
    await s.cancel(id);
    await s.followup(id, 'B');
    const events = await settle(s, id, 2);
    const ends = events
      .filter((e) => e.type === 'turn/end')
      .map((e) => e.type === 'turn/end' && e.data.reason.kind);
    expect(ends).toEqual(['aborted', 'completed']);
    const turn2 = summarize(
      events.slice(events.findIndex((e) => e.type === 'turn/start' && e.data.turn === 2)),
    );
    expect(turn2).toContain('user/message B');
  });
});

describe('malformed destructive signals change nothing (rule 5)', () => {
  it('dispose with anything but {} and cancel with a non-object or an unknown cause are refused and counted', async () => {
    const s = t.sessions();
    const id = newId();
    await s.start(id, {
      tools: ['sleep'],
      model: { provider: 'scripted', steps: [{ toolCalls: [{ name: 'sleep', args: { ms: 5_000 } }] }] },
    });
    await s.followup(id, 'P');
    await waitUntil(() => s.allEvents(id), hasEvent('tool/call'), 'the tool call');
    const handle = s.handle(id);
    const bad: [string, unknown][] = [
      ['dispose', 42],
      ['dispose', 'now'],
      ['dispose', [1]],
      ['dispose', { junk: 1 }],
      ['dispose', null],
      ['cancel', 42],
      ['cancel', 'now'],
      ['cancel', null],
      ['cancel', { cause: { kind: 'nope' } }],
      ['cancel', { keepInbox: 'yes' }],
    ];
    for (const [name, payload] of bad) await handle.signal(name, payload);
    const state = await waitUntil(
      () => s.state(id),
      (st) => st.refused === bad.length,
      'every bad signal refused',
    );
    expect(state.lastRefusal).toMatch(/^cancel: keepInbox: /);
    // The turn was neither cancelled nor disposed: it completes, and the session keeps serving.
    const events = await settle(s, id);
    const end = events.at(-1)!;
    expect(end.type === 'turn/end' && end.data.reason).toEqual({ kind: 'completed' });
    expect(events.some((e) => e.type === 'session/disposed')).toBe(false);
    expect((await handle.describe()).status.name).toBe('RUNNING');
    await s.followup(id, 'still here');
    await settle(s, id, 2);
  });
});

describe('dispose (rule 31)', () => {
  it('20: dispose during a tool aborts the turn {disposed}, session/disposed is last, the workflow completes', async () => {
    const s = t.sessions();
    const id = newId();
    await s.start(id, {
      tools: ['sleep'],
      model: { provider: 'scripted', steps: [{ toolCalls: [{ name: 'sleep', args: { ms: 30_000 } }] }] },
    });
    await s.followup(id, 'P');
    await s.inject(id, ctx('late context'));
    await waitUntil(() => s.allEvents(id), hasEvent('tool/call'), 'the tool call');
    await s.dispose(id);
    // Wait on describe, not result(): result() lets the time-skipping server jump its clock far ahead.
    await waitUntil(
      () => s.handle(id).describe(),
      (d) => d.status.name === 'COMPLETED',
      'the workflow to complete',
    );
    const events = await s.allEvents(id);
    const types = summarize(events);
    expect(types.at(-1)).toBe('session/disposed');
    const end = events.find((e) => e.type === 'turn/end');
    expect(end?.type === 'turn/end' && end.data.reason).toEqual({
      kind: 'aborted',
      reason: { kind: 'disposed' },
    });
    expect((await s.state(id)).status).toBe('disposed');
    await expect(s.followup(id, 'too late')).rejects.toBeInstanceOf(SessionDisposedError);
    await expect(s.deliver(id, 'followup', 'too late')).rejects.toBeInstanceOf(SessionDisposedError);
  });
});
