/**
 * Continue-as-new (rule 33, scenario 22): quiet points only; seq, turn numbers, pending messages, recent ids and
 * the model-visible history continue across runs; events and transcript stay readable from any seq.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertLogValid } from '../../src/domain/invariants';
import { projectTranscript } from '../../src/domain/transcript';
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

const runIdOf = async (t: SessionTestEnv, id: string) =>
  (await t.env.client.workflow.getHandle(id).describe()).runId;

describe('continue-as-new', () => {
  it('22: a pending idle inject survives continue-as-new; the next run enters [A, P] with turn and seq continuing', async () => {
    const s = t.sessions();
    const id = newId();
    await s.start(id, { continueAsNewAfterEvents: 10 });
    await s.followup(id, 'first');
    await settle(s, id);
    const firstRun = await runIdOf(t, id);
    await s.followup(id, 'second'); // turn 2 ends past the budget: the run continues as new after it
    await waitUntil(
      () => runIdOf(t, id),
      (r) => r !== firstRun,
      'a new run',
    );
    await s.inject(id, { content: 'A', source: { kind: 'plugin', plugin: 'watcher' } });
    await waitUntil(
      () => s.state(id),
      (st) => st.pending.nextStep.length === 1,
      'A pending',
    );
    // Force another boundary while A is pending: a turn whose end crosses the budget again.
    await s.followup(id, 'P');
    const events = await settle(s, id, 3);
    assertLogValid(events);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
    const turns = events.flatMap((e) => (e.type === 'turn/start' ? [e.data.turn] : []));
    expect(turns).toEqual([1, 2, 3]);
    const turn3 = summarize(
      events.slice(events.findIndex((e) => e.type === 'turn/start' && e.data.turn === 3)),
    );
    expect(turn3.slice(0, 6)).toEqual([
      'turn/start 3',
      'claim next-step 1',
      'claim next-turn 1',
      'step/start 3.1',
      'user/message A',
      'user/message P',
    ]);
    expect(await runIdOf(t, id)).not.toBe(firstRun);
    // The model saw the whole history, assembled across runs.
    const r = t.recorder.requests(id);
    expect(userTexts(r[2]!)).toEqual(['first', 'second', 'A', 'P']);
    // The transcript assembled across runs is exactly the log's model-visible projection: nothing twice, though
    // each run carries the entries no request had sent yet (the last answer) into the next.
    const transcript = await s.transcript(id);
    expect(transcript.messages.filter((m) => m.role === 'user')).toHaveLength(4);
    expect(transcript.messages).toEqual(projectTranscript(events));
    // Reading from an old seq follows the run chain.
    const fromOld = await s.allEvents(id, 3);
    expect(fromOld[0]!.seq).toBe(4);
    expect(fromOld.at(-1)!.seq).toBe(events.at(-1)!.seq);
  });

  it('a duplicate id delivered after continue-as-new is still recognised', async () => {
    const s = t.sessions();
    const id = newId();
    await s.start(id, { continueAsNewAfterEvents: 10 });
    const firstRun = await runIdOf(t, id);
    await s.followup(id, { id: 'dup-1', content: 'one' });
    await s.followup(id, 'two');
    await settle(s, id, 2);
    // Deliver to the new run once it exists (an update racing the continue-as-new itself may be lost by the
    // time-skipping test server).
    await waitUntil(
      () => runIdOf(t, id),
      (r) => r !== firstRun,
      'the next run',
    );
    const receipt = await s.deliver(id, 'followup', { id: 'dup-1', content: 'one' });
    // The receipt names the splice of the first insertion, which lives in the first run.
    const insertion = (await s.allEvents(id)).find(
      (e) => e.type === 'agent/inbox/spliced' && e.data.inserted.some((m) => m.id === 'dup-1'),
    );
    expect(insertion).toBeDefined();
    expect(receipt).toEqual({ messageId: 'dup-1', lane: 'followup', duplicate: true, seq: insertion!.seq });
  });

  it('deliveries racing continue-as-new each return their receipt once, and each message enters once', async () => {
    const s = t.sessions();
    const id = newId();
    // Every turn (8 events) crosses this budget: the session continues as new after almost every turn, while the
    // next deliveries are in flight.
    await s.start(id, { continueAsNewAfterEvents: 10 });
    const runs = new Set([await runIdOf(t, id)]);
    const texts = Array.from({ length: 12 }, (_, i) => `d${i}`);
    const receipts = [];
    for (let i = 0; i < texts.length; i += 3) {
      receipts.push(
        ...(await Promise.all(texts.slice(i, i + 3).map((text) => s.deliver(id, 'followup', text)))),
      );
      runs.add(await runIdOf(t, id));
    }
    expect(receipts.map((r) => r.duplicate)).toEqual(texts.map(() => false));
    expect(new Set(receipts.map((r) => r.messageId)).size).toBe(texts.length);
    const events = await settle(s, id, texts.length);
    const entered = events.flatMap((e) => (e.type === 'user/message' ? [e.data.message.id] : []));
    expect([...entered].sort()).toEqual(receipts.map((r) => r.messageId).sort());
    expect(runs.size).toBeGreaterThan(1);
  });

  it('a long session crosses several runs with seq and turns continuous and every model request complete', async () => {
    const s = t.sessions();
    const id = newId();
    const turns = 30;
    await s.start(id, {
      continueAsNewAfterEvents: 40,
      tools: ['echo'],
      model: { provider: 'scripted', steps: [] },
    });
    const runs = new Set<string>();
    for (let i = 1; i <= turns; i++) {
      await s.followup(id, `m${i}`);
      if (i % 5 === 0) {
        await settle(s, id, i);
        runs.add(await runIdOf(t, id));
      }
    }
    const events = await settle(s, id, turns);
    assertLogValid(events);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
    expect(events.filter((e) => e.type === 'turn/end')).toHaveLength(turns);
    expect(runs.size).toBeGreaterThan(2);
    const last = t.recorder.requests(id).at(-1)!;
    expect(userTexts(last)).toEqual(Array.from({ length: turns }, (_, i) => `m${i + 1}`));
    expect(last.messages.filter((m) => m.role === 'assistant')).toHaveLength(turns - 1);
  }, 180_000);
});
