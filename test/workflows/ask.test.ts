/**
 * Waiting without polling: `deliver` with `wait` (SessionClient.ask) completes when the turn its message entered has
 * ended, with that turn's end reason and answer — on the time-skipping server, through queued turns, a steer into a
 * running turn, a cancel that discards the message, a timeout, and continue-as-new (which never happens under a
 * waiter).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TurnWaitTimeoutError } from '../../src/client';
import { newId, settle, startSessionTestEnv, waitUntil, type SessionTestEnv } from '../support/sessionEnv';

let t: SessionTestEnv;
beforeAll(async () => {
  t = await startSessionTestEnv();
});
afterAll(async () => {
  await t?.teardown();
});

const hasStep = (events: { type: string }[]) => events.some((e) => e.type === 'step/start');

describe('ask: one update that completes at the end of its turn', () => {
  it("returns the turn's answer and end reason; a follow-up queued behind another turn waits for its own", async () => {
    const s = t.sessions();
    const id = newId();
    await s.start(id, {
      model: {
        provider: 'scripted',
        steps: [{ text: 'first answer', delayMs: 2_000 }, { text: 'second answer' }],
      },
    });
    const first = s.ask(id, 'one');
    await waitUntil(() => s.allEvents(id), hasStep, 'turn 1 running');
    const second = await s.ask(id, { id: 'q2', content: 'two' });
    expect(second).toMatchObject({
      messageId: 'q2',
      lane: 'followup',
      duplicate: false,
      outcome: { status: 'ended', turn: 2, reason: { kind: 'completed' }, answer: 'second answer' },
    });
    expect(await first).toMatchObject({
      outcome: { status: 'ended', turn: 1, reason: { kind: 'completed' }, answer: 'first answer' },
    });
    // The outcome's seq is the turn/end of that turn; the receipt's seq its insertion.
    const events = await settle(s, id, 2);
    const end = events.find((e) => e.seq === (second.outcome.status === 'ended' ? second.outcome.seq : -1));
    expect(end?.type === 'turn/end' && end.data.turn).toBe(2);
    expect(events.find((e) => e.seq === second.seq)?.type).toBe('agent/inbox/spliced');
    // Asking again with the same id is a duplicate that reports the same outcome at once.
    expect(await s.ask(id, { id: 'q2', content: 'two' })).toMatchObject({
      duplicate: true,
      outcome: { status: 'ended', turn: 2, answer: 'second answer' },
    });
  });

  it('a steer into a running turn waits for that turn; a cancel that discards a queued message says so', async () => {
    const s = t.sessions();
    const id = newId();
    await s.start(id, { model: { provider: 'scripted', steps: [{ text: 'slow', delayMs: 3_000 }] } });
    await s.followup(id, 'P');
    await waitUntil(() => s.allEvents(id), hasStep, 'turn 1 running');
    const steered = s.ask(id, 'also this', { lane: 'steer' });
    const queued = s.ask(id, 'later');
    await waitUntil(
      () => s.state(id),
      (st) => st.pending.nextStep.length === 1 && st.pending.nextTurn.length === 1,
      'both pending',
    );
    await s.cancel(id);
    expect((await steered).outcome).toEqual({ status: 'discarded' });
    expect((await queued).outcome).toEqual({ status: 'discarded' });
  });

  it('the steer enters the running turn and its outcome is that turn', async () => {
    const s = t.sessions();
    const id = newId();
    await s.start(id, {
      model: { provider: 'scripted', steps: [{ text: 'step one', delayMs: 2_000 }, { text: 'step two' }] },
    });
    await s.followup(id, 'P');
    await waitUntil(() => s.allEvents(id), hasStep, 'turn 1 running');
    const steered = await s.ask(id, 'S', { lane: 'steer' });
    expect(steered.outcome).toMatchObject({
      status: 'ended',
      turn: 1,
      reason: { kind: 'completed' },
      answer: 'step two',
    });
  });

  it('times out with TurnWaitTimeoutError; the message stays accepted and its turn still runs', async () => {
    const s = t.sessions();
    const id = newId();
    await s.start(id, { model: { provider: 'scripted', steps: [{ text: 'late', delayMs: 4_000 }] } });
    await expect(s.ask(id, { id: 'slow', content: 'P' }, { timeoutMs: 500 })).rejects.toBeInstanceOf(
      TurnWaitTimeoutError,
    );
    const events = await settle(s, id);
    expect(events.filter((e) => e.type === 'turn/end')).toHaveLength(1);
    expect((await s.ask(id, { id: 'slow', content: 'P' })).outcome).toMatchObject({ answer: 'late' });
  });

  it('many asks across continue-as-new boundaries: each returns its own turn once', async () => {
    const s = t.sessions();
    const id = newId();
    await s.start(id, { continueAsNewAfterEvents: 10 });
    const outcomes = [];
    for (let n = 0; n < 8; n++) outcomes.push((await s.ask(id, `message ${n}`)).outcome);
    expect(outcomes.map((o) => o.status === 'ended' && [o.turn, o.answer])).toEqual(
      Array.from({ length: 8 }, (_, n) => [n + 1, `echo: message ${n}`]),
    );
    const page = await s.events(id, -1, 1);
    expect(page.firstSeq).toBeGreaterThan(0);
  });
});
