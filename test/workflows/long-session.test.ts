/**
 * A long session on the time-skipping server (rules 24, 33): LONG_SESSION_TURNS follow-ups (default 2,000), sent 50
 * at a time (odd batches as signals, even batches through the `deliver` update), each batch finished before the next
 * is sent, with continueAsNewAfterEvents 2,000 so the session crosses several continue-as-new boundaries. Checks
 * that seq and turn numbers are continuous across the whole chain (read back with allEvents), that every follow-up
 * got exactly one turn in order (nothing pending was lost at a boundary), and that an injected context left pending
 * across a boundary enters with the first turn of the next run.
 *
 * The pending inject: workflow type agentSessionHold (test/fixtures/workflows.ts) holds pre-step on a one-hour timer
 * for a batch containing "hold", then rejects a batch containing "reject". The test fills the current run up to just
 * below its budget, sends "hold reject", injects A while pre-step holds (after the claim, so A stays pending), skips
 * the hour: the turn ends blocked past the budget and the run continues as new with A pending.
 */
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import type { SessionEvent } from '../../src/domain/events';
import { textOf } from '../../src/domain/messages';
import {
  assertLogValid,
  createTestSessionEnv,
  patientQuery,
  waitUntil,
  type TestSessionEnv,
} from '../../src/testing';

const TURNS = Number(process.env.LONG_SESSION_TURNS ?? 2_000);
const BATCH = 50;
const BUDGET = 2_000;
/** Events of one plain turn: the follow-up's insertion, turn/start, claim, step/start, user/message,
 * assistant/message, step/end, turn/end. */
const EVENTS_PER_TURN = 8;

let t: TestSessionEnv;
beforeAll(async () => {
  t = await createTestSessionEnv({
    workflowBundle: { codePath: inject('workflowBundlePath') },
    workflowType: 'agentSessionHold',
    recordRequests: false,
  });
});
afterAll(async () => {
  await t?.teardown();
});

it(
  `${TURNS} turns across continue-as-new: seq and turns continuous, no follow-up lost, a pending inject carried`,
  { timeout: 600_000 },
  async () => {
    const s = t.client;
    const id = `long-${Date.now()}`;
    const started = Date.now();
    await s.start(id, { continueAsNewAfterEvents: BUDGET });
    const state = () => patientQuery(s, () => s.state(id));
    const runOf = async () => (await s.handle(id).describe()).runId;
    /** Events the current run has logged (its budget counts these). */
    const runLength = async () => {
      const page = await patientQuery(s, () => s.events(id, -1, 1));
      return page.lastSeq - page.firstSeq + 1;
    };
    const idleAfter = (turns: number) =>
      waitUntil(
        state,
        (st) => st.status === 'idle' && st.turn >= turns,
        `turn ${turns} of ${id} to end`,
        20_000,
      );

    let sent = 0;
    let turns = 0;
    let batchNo = 0;
    const texts: string[] = [];
    const runs = new Set<string>([await runOf()]);
    async function send(count: number): Promise<void> {
      const viaUpdate = batchNo++ % 2 === 1;
      for (let i = 0; i < count; i++) {
        const text = `m${++sent}`;
        texts.push(text);
        if (viaUpdate) await s.deliver(id, 'followup', { id: text, content: text });
        else await s.followup(id, { id: text, content: text });
      }
      turns += count;
      await idleAfter(turns);
      runs.add(await runOf());
    }

    // Batches up to just below the first boundary, then single turns, then pad with idle injects (claimed and
    // rejected with the held batch) so that the blocked turn is the one that crosses the budget. With few TURNS the
    // pads alone fill the run: the crossing with A pending happens whatever LONG_SESSION_TURNS says, and at least
    // one follow-up is kept for after it (A enters with it).
    const target = Math.min(TURNS - 1, BUDGET / EVENTS_PER_TURN - 10);
    while (sent + BATCH <= target) await send(BATCH);
    while ((await runLength()) + EVENTS_PER_TURN < BUDGET && sent < TURNS - 1) await send(1);
    for (let pad = BUDGET - 5 - (await runLength()); pad > 0; pad--) {
      await s.inject(id, { content: `pad ${pad}`, source: { kind: 'plugin', plugin: 'pad' } });
    }
    const runBefore = await runOf();
    await s.followup(id, { id: 'hold', content: 'hold reject' });
    turns += 1;
    await waitUntil(state, (st) => st.status === 'running' && st.turn === turns, 'pre-step to hold');
    await s.inject(id, {
      id: 'A',
      content: 'A crosses the boundary',
      source: { kind: 'plugin', plugin: 'watcher' },
    });
    await waitUntil(state, (st) => st.pending.nextStep.includes('A'), 'A pending');
    await t.env.sleep('1 hour'); // fires the pre-step timer; the guard rejects
    await idleAfter(turns);
    const runAfter = await runOf();
    runs.add(runAfter);
    expect(runAfter, 'the held turn crossed the budget: a new run').not.toBe(runBefore);
    expect((await state()).pending).toEqual({ nextTurn: [], nextStep: ['A'] });
    while (sent < TURNS) await send(Math.min(BATCH, TURNS - sent));
    const driven = Date.now();

    const events = await patientQuery(s, () => s.allEvents(id), { deadlineMs: 120_000, attempts: 2 });
    const read = Date.now();
    // The whole log is one valid session log (assertLogValid checks turns, steps, claims and splices across it).
    assertLogValid(events);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
    const turnStarts = events.flatMap((e) => (e.type === 'turn/start' ? [e.data.turn] : []));
    expect(turnStarts).toEqual(Array.from({ length: turns }, (_, i) => i + 1));
    const ends = events.flatMap((e) => (e.type === 'turn/end' ? [e.data.reason.kind] : []));
    expect(ends.filter((k) => k === 'completed')).toHaveLength(TURNS);
    // Every follow-up entered exactly once, in order, each in its own turn.
    const entered = enteredTexts(events);
    expect(entered.filter((x) => x.startsWith('m'))).toEqual(texts);
    // A entered with the first turn after the boundary, before that turn's follow-up, in the same step.
    const at = entered.indexOf('A crosses the boundary');
    expect(at).toBeGreaterThan(0);
    const turnOfA = turnOfMessage(events, 'A');
    const firstAfter = events.find((e) => e.type === 'turn/start' && e.data.turn === turnOfA);
    expect(firstAfter).toBeDefined();
    expect(entered[at + 1]).toMatch(/^m\d+$/);
    expect(turnOfMessage(events, entered[at + 1]!)).toBe(turnOfA);
    expect(runs.size).toBeGreaterThanOrEqual(Math.floor((TURNS * EVENTS_PER_TURN) / BUDGET));
    console.log(
      `long session: ${TURNS} follow-up turns, ${events.length} events, ${runs.size} runs seen; ` +
        `driving ${((driven - started) / 1000).toFixed(1)} s, reading the log ${((read - driven) / 1000).toFixed(1)} s`,
    );
  },
);

/** Texts of the user/messages in log order. */
function enteredTexts(events: readonly SessionEvent[]): string[] {
  return events.flatMap((e) => (e.type === 'user/message' ? [textOf(e.data.message.content)] : []));
}

/** The turn in which the message with this id entered. */
function turnOfMessage(events: readonly SessionEvent[], id: string): number | undefined {
  let turn: number | undefined;
  for (const e of events) {
    if (e.type === 'turn/start') turn = e.data.turn;
    if (e.type === 'user/message' && e.data.message.id === id) return turn;
  }
  return undefined;
}
