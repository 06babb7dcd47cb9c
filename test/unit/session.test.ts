/** SessionCore: the state machine every event goes through (rules 3–10, 15, 16, 23, 24, 27–31, 33). */
import { describe, expect, it } from 'vitest';
import {
  checkLog,
  initialSnapshot,
  RECENT_ID_WINDOW,
  SessionCore,
  SessionStateError,
  type SessionEvent,
} from '../../src/domain/index';
import { ctx, outline, user } from '../support/interpreter';

function newCore(): SessionCore {
  let t = 0;
  return new SessionCore({ now: () => t++ });
}

/** Lines appended by `fn`. */
function appended(core: SessionCore, fn: () => void): string[] {
  const from = core.log.length;
  const inboxBefore = core.inbox;
  fn();
  return outline(core.log.slice(from), inboxBefore);
}

/** Runs one trivial completed turn: open, claim, one step with the claimed batch, close. */
function runTurn(
  core: SessionCore,
  reason: 'completed' | 'blocked' | 'error' | 'max-tokens' = 'completed',
): void {
  core.openTurn();
  const batch = core.claim('turn');
  if (reason === 'blocked') return core.endTurn({ kind: 'blocked' });
  if (reason === 'error')
    return core.endTurn({ kind: 'error', error: { message: 'hook failed', code: 'HOOK_FAILED' } });
  core.startStep(batch);
  core.assistant({ id: `a${core.turn}`, role: 'assistant', content: [{ type: 'text', text: 'ok' }] });
  core.endStep();
  core.endTurn(reason === 'max-tokens' ? { kind: 'max-tokens' } : { kind: 'completed' });
}

describe('delivery', () => {
  it('an idle inject appends one insertion splice and nothing else (rule 6)', () => {
    const core = newCore();
    expect(appended(core, () => core.accept('inject', ctx('A')))).toEqual(['insert next-step A']);
    expect(core.log).toHaveLength(1);
    expect(core.log[0]).toEqual({
      seq: 0,
      time: 0,
      type: 'agent/inbox/spliced',
      data: { target: 'next-step', start: 0, inserted: [ctx('A')] },
    });
    expect(core.status()).toBe('idle');
    expect(core.hasWakingWork()).toBe(false);
    expect(core.modelRequests).toBe(0);
  });

  it('several idle injects keep their order and never wake', () => {
    const core = newCore();
    for (const id of ['A', 'B', 'C']) core.accept('inject', ctx(id));
    expect(core.stateView().pending).toEqual({ nextTurn: [], nextStep: ['A', 'B', 'C'] });
    expect(core.hasWakingWork()).toBe(false);
  });

  it('followup targets next-turn, steer next-step; both wake (rule 1)', () => {
    const f = newCore();
    f.accept('followup', user('P'));
    expect(f.stateView().pending).toEqual({ nextTurn: ['P'], nextStep: [] });
    expect(f.hasWakingWork()).toBe(true);
    const s = newCore();
    s.accept('steer', user('S'));
    expect(s.stateView().pending).toEqual({ nextTurn: [], nextStep: ['S'] });
    expect(s.hasWakingWork()).toBe(true);
  });

  it('ignores a duplicate id with the original receipt: no event, no state change (rule 4)', () => {
    const core = newCore();
    core.accept('inject', ctx('A'));
    expect(core.accept('followup', user('P'))).toEqual({
      receipt: { messageId: 'P', lane: 'followup', duplicate: false, seq: 1 },
      accepted: true,
    });
    const before = core.snapshot;
    const again = core.accept('inject', ctx('P', 'different content'));
    expect(again).toEqual({
      receipt: { messageId: 'P', lane: 'followup', duplicate: true, seq: 1 },
      accepted: false,
    });
    expect(core.log).toHaveLength(2);
    expect(core.snapshot).toEqual(before);
    expect(core.receiptOf('P')).toEqual({ messageId: 'P', lane: 'followup', duplicate: true, seq: 1 });
    expect(core.receiptOf('nope')).toBeUndefined();
  });

  it('remembers ids after they were claimed and entered', () => {
    const core = newCore();
    core.accept('followup', user('P'));
    runTurn(core);
    const length = core.log.length;
    expect(core.accept('followup', user('P')).accepted).toBe(false);
    expect(core.log).toHaveLength(length);
    expect(core.hasWakingWork()).toBe(false);
  });

  it('forgets the oldest ids beyond the recent window', () => {
    const core = newCore();
    for (let i = 0; i <= RECENT_ID_WINDOW; i++) {
      core.accept('inject', ctx(`i${i}`));
      core.cancel({ kind: 'user' }, false);
    }
    expect(core.receiptOf('i0')).toBeUndefined();
    expect(core.receiptOf('i1')?.lane).toBe('inject');
    expect(core.snapshot.recent).toHaveLength(RECENT_ID_WINDOW);
  });

  it('counts refused payloads without any event or other change (rule 5)', () => {
    const core = newCore();
    core.accept('inject', ctx('A'));
    const log = [...core.log];
    core.refuse('message.content: must not be empty');
    core.refuse('x'.repeat(5000));
    expect(core.log).toEqual(log);
    expect(core.stateView()).toEqual({
      status: 'idle',
      turn: 0,
      step: 0,
      pending: { nextTurn: [], nextStep: ['A'] },
      refused: 2,
      lastRefusal: 'x'.repeat(1000),
      usage: { inputTokens: 0, outputTokens: 0, steps: 0, byModel: {} },
      approvals: [],
    });
  });

  it('reports every appended event to onEvent, after its own state changed', () => {
    const seen: [number, number][] = [];
    const core: SessionCore = new SessionCore({
      now: () => 42,
      onEvent: (e: SessionEvent) => seen.push([e.seq, core.lastSeq]),
    });
    core.accept('followup', user('P'));
    core.openTurn();
    expect(seen).toEqual([
      [0, 0],
      [1, 1],
    ]);
    expect(core.log.every((e) => e.time === 42)).toBe(true);
  });
});

describe('waking and suspension', () => {
  it('after a blocked turn, pending work waits; inject and duplicates do not re-arm; a later waking message does (rule 15)', () => {
    const core = newCore();
    core.accept('followup', user('secret'));
    core.accept('followup', user('safe'));
    runTurn(core, 'blocked');
    expect(core.stateView().pending.nextTurn).toEqual(['safe']);
    expect(core.hasWakingWork()).toBe(false);
    core.accept('inject', ctx('A'));
    core.accept('followup', user('safe'));
    expect(core.hasWakingWork()).toBe(false);
    core.accept('followup', user('W'));
    expect(core.hasWakingWork()).toBe(true);
  });

  it('after an error turn, a steer re-arms it too (rule 16, 23)', () => {
    const core = newCore();
    core.accept('followup', user('P1'));
    core.accept('followup', user('P2'));
    runTurn(core, 'error');
    expect(core.stateView()).toMatchObject({ status: 'idle', pending: { nextTurn: ['P2'], nextStep: [] } });
    expect(core.hasWakingWork()).toBe(false);
    core.accept('steer', user('S'));
    expect(core.hasWakingWork()).toBe(true);
  });

  it('completed and max-tokens turns do not suspend: the next follow-up runs at once (rule 22)', () => {
    for (const reason of ['completed', 'max-tokens'] as const) {
      const core = newCore();
      core.accept('followup', user('P1'));
      core.accept('followup', user('P2'));
      runTurn(core, reason);
      expect(core.hasWakingWork()).toBe(true);
    }
  });

  it('nothing wakes a session with an open turn or a disposed one', () => {
    const core = newCore();
    core.accept('followup', user('P1'));
    core.openTurn();
    core.accept('followup', user('P2'));
    expect(core.hasWakingWork()).toBe(false);
  });
});

describe('claims (rule 10)', () => {
  it('at a turn boundary: all of next-step in order, then exactly one next-turn item', () => {
    const core = newCore();
    core.accept('inject', ctx('A'));
    core.accept('followup', user('P1'));
    core.accept('steer', user('S'));
    core.accept('followup', user('P2'));
    let batch: string[] = [];
    expect(
      appended(core, () => {
        core.openTurn();
        batch = core.claim('turn').map((m) => m.id);
      }),
    ).toEqual(['turn/start 1', 'claim next-step A,S', 'claim next-turn P1']);
    expect(batch).toEqual(['A', 'S', 'P1']);
    expect(core.stateView().pending).toEqual({ nextTurn: ['P2'], nextStep: [] });
    const claims = core.log.slice(-2).map((e) => e.data);
    expect(claims).toEqual([
      { target: 'next-step', start: 0, removedCount: 2, inserted: [] },
      { target: 'next-turn', start: 0, removedCount: 1, inserted: [] },
    ]);
  });

  it('at a step boundary: all of next-step only', () => {
    const core = newCore();
    core.accept('followup', user('P1'));
    core.openTurn();
    core.startStep(core.claim('turn'));
    core.accept('followup', user('P2'));
    core.accept('inject', ctx('A'));
    core.endStep();
    expect(appended(core, () => expect(core.claim('step').map((m) => m.id)).toEqual(['A']))).toEqual([
      'claim next-step A',
    ]);
    expect(core.stateView().pending).toEqual({ nextTurn: ['P2'], nextStep: [] });
  });

  it('claims nothing and appends nothing when the lists are empty', () => {
    const core = newCore();
    core.accept('steer', user('S'));
    core.openTurn();
    core.claim('turn');
    expect(appended(core, () => expect(core.claim('step')).toEqual([]))).toEqual([]);
  });

  it('refuses to claim outside a turn', () => {
    const core = newCore();
    core.accept('followup', user('P'));
    expect(() => core.claim('turn')).toThrow(SessionStateError);
    expect(core.log).toHaveLength(1);
  });
});

describe('steps and turns', () => {
  it('enters returned messages after step/start, in order (rule 14), and numbers steps per turn', () => {
    const core = newCore();
    core.accept('followup', user('P'));
    core.openTurn();
    const batch = core.claim('turn');
    expect(appended(core, () => expect(core.startStep([...batch, ctx('X')])).toBe(1))).toEqual([
      'step/start 1.1',
      'user/message P',
      'user/message X',
    ]);
    core.endStep();
    expect(core.startStep([])).toBe(2);
  });

  it('endTurn closes an open step first (rule 24)', () => {
    const core = newCore();
    core.accept('followup', user('P'));
    core.openTurn();
    core.startStep(core.claim('turn'));
    expect(
      appended(core, () =>
        core.endTurn({ kind: 'error', error: { message: 'model failed', code: 'MODEL_FAILED' } }),
      ),
    ).toEqual(['step/end 1.1', 'turn/end 1 error']);
    expect(core.stepOpen).toBe(false);
    expect(core.status()).toBe('idle');
    expect(checkLog(core.log)).toEqual({ ok: true });
  });

  it('refuses events out of place', () => {
    const core = newCore();
    expect(() => core.startStep([])).toThrow('step/start outside a turn');
    expect(() => core.endTurn({ kind: 'completed' })).toThrow('turn/end outside a turn');
    core.accept('followup', user('P'));
    core.openTurn();
    expect(() => core.openTurn()).toThrow('turn 1 is still open');
    expect(() => core.assistant({ id: 'a', role: 'assistant', content: [] })).toThrow(
      'assistant/message outside a step (turn 1)',
    );
    expect(() => core.toolCall({ callId: 'c', name: 't', arguments: {} })).toThrow(SessionStateError);
    expect(() => core.toolResult('c', [])).toThrow(SessionStateError);
    expect(() => core.endStep()).toThrow(SessionStateError);
    core.startStep(core.claim('turn'));
    expect(() => core.startStep([])).toThrow('step 1.1 is still open');
  });

  it('tool events carry the open turn and step; contexts go to the end of next-step without waking', () => {
    const core = newCore();
    core.accept('followup', user('P'));
    core.openTurn();
    core.startStep(core.claim('turn'));
    core.assistant({
      id: 'a',
      role: 'assistant',
      content: [],
      toolCalls: [{ callId: 'c1', name: 'read', arguments: {} }],
    });
    core.toolCall({ callId: 'c1', name: 'read', arguments: {} });
    core.toolResult('c1', [{ type: 'text', text: 'r' }], { message: 'bad', code: 'E' });
    expect(core.insertContext(ctx('ctx-c1'))).toBe(true);
    expect(core.insertContext(ctx('ctx-c1'))).toBe(false);
    expect(core.log.slice(-3).map((e) => e.data)).toEqual([
      { turn: 1, step: 1, callId: 'c1', name: 'read', arguments: {} },
      {
        turn: 1,
        step: 1,
        callId: 'c1',
        content: [{ type: 'text', text: 'r' }],
        error: { message: 'bad', code: 'E' },
      },
      { target: 'next-step', start: 0, inserted: [ctx('ctx-c1')] },
    ]);
    core.endStep();
    core.endTurn({ kind: 'completed' });
    expect(core.hasWakingWork()).toBe(false);
    expect(core.receiptOf('ctx-c1')?.lane).toBe('inject');
  });

  it('counts model requests across the session', () => {
    const core = newCore();
    expect([core.nextModelRequest(), core.nextModelRequest()]).toEqual([0, 1]);
    expect(core.modelRequests).toBe(2);
  });
});

describe('cancel and dispose (rules 27–31)', () => {
  it('discards next-step first, then next-turn, and marks the running turn canceling (first cause wins)', () => {
    const core = newCore();
    core.accept('followup', user('P'));
    core.openTurn();
    core.startStep(core.claim('turn'));
    core.accept('followup', user('Q'));
    core.accept('inject', ctx('A'));
    let running = false;
    expect(appended(core, () => (running = core.cancel({ kind: 'user' }, false)))).toEqual([
      'cancel next-step A',
      'cancel next-turn Q',
    ]);
    expect(running).toBe(true);
    expect(core.log.slice(-2).map((e) => e.data)).toEqual([
      { target: 'next-step', start: 0, removedCount: 1, inserted: [], outcome: 'canceled' },
      { target: 'next-turn', start: 0, removedCount: 1, inserted: [], outcome: 'canceled' },
    ]);
    core.cancel({ kind: 'hook', reason: 'later' }, false);
    expect(core.canceling).toEqual({ kind: 'user' });
    core.endTurn({ kind: 'aborted', reason: core.canceling! });
    expect(core.canceling).toBeUndefined();
    expect(core.hasWakingWork()).toBe(false);
    expect(checkLog(core.log)).toEqual({ ok: true });
  });

  it('while idle only clears pending items', () => {
    const core = newCore();
    core.accept('inject', ctx('A'));
    expect(appended(core, () => expect(core.cancel({ kind: 'user' }, false)).toBe(false))).toEqual([
      'cancel next-step A',
    ]);
    expect(core.canceling).toBeUndefined();
    expect(appended(core, () => core.cancel({ kind: 'user' }, false))).toEqual([]);
  });

  it('a waking message after the cancel goes to next-turn and runs once the turn closed (rules 19, 30)', () => {
    const core = newCore();
    core.accept('followup', user('P'));
    core.openTurn();
    core.startStep(core.claim('turn'));
    core.cancel({ kind: 'user' }, false);
    core.accept('steer', user('B'));
    core.accept('inject', ctx('A'));
    expect(core.stateView().pending).toEqual({ nextTurn: ['B'], nextStep: ['A'] });
    core.endTurn({ kind: 'aborted', reason: { kind: 'user' } });
    expect(core.hasWakingWork()).toBe(true);
  });

  it('keepInbox aborts only the turn; pending work waits for the next waking message (rule 28)', () => {
    const core = newCore();
    core.accept('followup', user('P'));
    core.openTurn();
    core.startStep(core.claim('turn'));
    core.accept('steer', user('S'));
    core.accept('followup', user('Q'));
    expect(appended(core, () => core.cancel({ kind: 'user' }, true))).toEqual([]);
    core.endTurn({ kind: 'aborted', reason: { kind: 'user' } });
    expect(core.stateView().pending).toEqual({ nextTurn: ['Q'], nextStep: ['S'] });
    expect(core.hasWakingWork()).toBe(false);
    core.accept('followup', user('W'));
    expect(core.hasWakingWork()).toBe(true);
    core.openTurn();
    expect(core.claim('turn').map((m) => m.id)).toEqual(['S', 'Q']);
  });

  it('dispose appends session/disposed once; afterwards nothing is accepted but duplicates still get receipts', () => {
    const core = newCore();
    core.accept('followup', user('P'));
    core.openTurn();
    expect(() => core.dispose()).toThrow('dispose while a turn is open');
    core.endTurn({ kind: 'aborted', reason: { kind: 'disposed' } });
    core.dispose();
    core.dispose();
    expect(core.log.at(-1)).toMatchObject({ type: 'session/disposed', data: {} });
    expect(core.log.filter((e) => e.type === 'session/disposed')).toHaveLength(1);
    expect(core.status()).toBe('disposed');
    expect(core.accept('followup', user('P')).receipt.duplicate).toBe(true);
    expect(() => core.accept('followup', user('new'))).toThrow('session disposed');
    expect(() => core.openTurn()).toThrow('session disposed');
    expect(core.hasWakingWork()).toBe(false);
  });
});

describe('snapshots (rule 33)', () => {
  it('a core built from a snapshot continues seq, turn numbers, the inbox and the recent ids', () => {
    const core = newCore();
    core.accept('followup', user('P1'));
    runTurn(core);
    core.accept('inject', ctx('A'));
    core.refuse('bad');
    const snapshot = core.snapshot;
    expect(snapshot).toMatchObject({ nextSeq: core.log.length, turn: 1, turnOpen: false, refused: 1 });
    const next = new SessionCore({ now: () => 0 }, snapshot);
    expect(next.accept('followup', user('P1')).accepted).toBe(false);
    next.accept('followup', user('P2'));
    expect(next.log[0]?.seq).toBe(core.log.length);
    next.openTurn();
    expect(next.turn).toBe(2);
    expect(next.claim('turn').map((m) => m.id)).toEqual(['A', 'P2']);
    expect(checkLog(next.log, { initial: snapshot, allowOpen: true })).toEqual({ ok: true });
    expect(checkLog([...core.log, ...next.log], { allowOpen: true })).toEqual({ ok: true });
  });

  it('the snapshot is a copy: changing the core later does not change it', () => {
    const core = newCore();
    const snapshot = core.snapshot;
    core.accept('inject', ctx('A'));
    expect(snapshot).toEqual(initialSnapshot());
  });
});

// Tests below demonstrate domain bugs reported to the lead; they fail until session.ts is fixed.
describe('reported domain bugs', () => {
  it('DOMAIN BUG: re-delivering a still-pending id after the recent window rolled over is a duplicate, not a throw (rules 4, 5)', () => {
    const core = newCore();
    core.accept('inject', ctx('A'));
    for (let i = 0; i < RECENT_ID_WINDOW; i++) core.accept('inject', ctx(`i${i}`));
    let result: ReturnType<SessionCore['accept']> | undefined;
    expect(() => (result = core.accept('inject', ctx('A')))).not.toThrow();
    expect(result?.accepted).toBe(false);
  });

  it('DOMAIN BUG: an id entered as a pre-step addition is remembered, so a later delivery of it is a duplicate (rules 4, 7)', () => {
    const core = newCore();
    core.accept('followup', user('P'));
    core.openTurn();
    core.startStep([...core.claim('turn'), ctx('X')]);
    core.endStep();
    core.endTurn({ kind: 'completed' });
    expect(core.accept('followup', user('X')).accepted).toBe(false);
  });
});

describe('message outcomes (what a waiting deliver returns)', () => {
  it('follows a message from pending to its turn, which ends with its reason, seq and last answer', () => {
    const core = newCore();
    core.accept('followup', user('P'));
    core.accept('followup', user('Q'));
    expect(core.outcomeOf('P')).toEqual({ status: 'pending' });
    expect(core.outcomeOf('nope')).toBeUndefined();
    core.openTurn();
    core.claim('turn');
    expect(core.outcomeOf('P')).toEqual({ status: 'running', turn: 1 });
    expect(core.outcomeOf('Q')).toEqual({ status: 'pending' });
    core.startStep([user('P')]);
    core.assistant({ id: 'a1', role: 'assistant', content: [{ type: 'text', text: 'first' }] });
    core.assistant({ id: 'a2', role: 'assistant', content: [{ type: 'text', text: 'the answer' }] });
    core.endTurn({ kind: 'completed' });
    expect(core.outcomeOf('P')).toEqual({
      status: 'ended',
      turn: 1,
      reason: { kind: 'completed' },
      seq: core.lastSeq,
      answer: 'the answer',
    });
    // Carried across continue-as-new with the snapshot.
    const next = new SessionCore({ now: () => 0 }, core.snapshot);
    expect(next.outcomeOf('P')).toEqual(core.outcomeOf('P'));
    expect(next.outcomeOf('Q')).toEqual({ status: 'pending' });
    next.cancel({ kind: 'user' }, false);
    expect(next.outcomeOf('Q')).toEqual({ status: 'discarded' });
    expect(new SessionCore({ now: () => 0 }, next.snapshot).outcomeOf('Q')).toEqual({ status: 'discarded' });
  });

  it('carries at most 128 Ki characters of answers across continue-as-new, newest first; older ends keep their reason', () => {
    const core = newCore();
    const answer = (n: number) => `${n}`.padEnd(20_000, '.');
    for (let n = 1; n <= 12; n++) {
      core.accept('followup', user(`P${n}`));
      core.openTurn();
      core.claim('turn');
      core.startStep([user(`P${n}`)]);
      core.assistant({ id: `a${n}`, role: 'assistant', content: [{ type: 'text', text: answer(n) }] });
      core.endTurn({ kind: 'completed' });
    }
    // 12 × 20,000 characters would all be carried before; the snapshot keeps the newest six (120,000 ≤ 131,072).
    const carried = core.snapshot.turnEnds!;
    expect(carried).toHaveLength(12);
    expect(carried.map(([turn, , , a]) => [turn, a === null ? null : a.length])).toEqual([
      ...[1, 2, 3, 4, 5, 6].map((turn) => [turn, null]),
      ...[7, 8, 9, 10, 11, 12].map((turn) => [turn, 20_000]),
    ]);
    const next = new SessionCore({ now: () => 0 }, core.snapshot);
    expect(next.outcomeOf('P12')).toEqual(core.outcomeOf('P12'));
    const before = core.outcomeOf('P1');
    expect(before).toMatchObject({ status: 'ended', turn: 1, answer: answer(1) });
    const { answer: _dropped, ...withoutAnswer } = before as { answer?: string };
    expect(next.outcomeOf('P1')).toEqual(withoutAnswer);
  });

  it('reads snapshots written before outcomes and receipt seqs existed', () => {
    const old = { ...initialSnapshot(), recent: [['P', 'followup']] as [string, 'followup'][] };
    const core = new SessionCore({ now: () => 0 }, old);
    expect(core.receiptOf('P')).toEqual({ messageId: 'P', lane: 'followup', duplicate: true });
    expect(core.outcomeOf('P')).toEqual({ status: 'pending' });
  });
});
