/** The log invariant checker: a valid log passes; each kind of broken log is rejected with a precise problem. */
import { describe, expect, it } from 'vitest';
import {
  assertLogValid,
  checkLog,
  EMPTY_INBOX,
  LogInvariantError,
  type EventDraft,
  type InboxTarget,
  type SessionEvent,
  type TurnEndReason,
  type UserMessage,
} from '../../src/domain/index';
import { ctx, user } from '../support/interpreter';

// ---- a tiny log notation ----
const ins = (target: InboxTarget, m: UserMessage, start = 0): EventDraft => ({
  type: 'agent/inbox/spliced',
  data: { target, start, inserted: [m] },
});
const claim = (target: InboxTarget, n = 1, start = 0): EventDraft => ({
  type: 'agent/inbox/spliced',
  data: { target, start, removedCount: n, inserted: [] },
});
const cancel = (target: InboxTarget, n = 1, start = 0): EventDraft => ({
  type: 'agent/inbox/spliced',
  data: { target, start, removedCount: n, inserted: [], outcome: 'canceled' },
});
const ts = (turn: number): EventDraft => ({ type: 'turn/start', data: { turn } });
const te = (turn: number, reason: TurnEndReason = { kind: 'completed' }): EventDraft => ({
  type: 'turn/end',
  data: { turn, reason },
});
const ss = (turn: number, step: number): EventDraft => ({ type: 'step/start', data: { turn, step } });
const se = (turn: number, step: number): EventDraft => ({ type: 'step/end', data: { turn, step } });
const um = (message: UserMessage): EventDraft => ({ type: 'user/message', data: { message } });
const am = (turn: number, step: number, calls: string[] = []): EventDraft => ({
  type: 'assistant/message',
  data: {
    turn,
    step,
    message: {
      id: `a${turn}.${step}`,
      role: 'assistant',
      content: [],
      ...(calls.length ? { toolCalls: calls.map((callId) => ({ callId, name: 't', arguments: {} })) } : {}),
    },
  },
});
const tc = (turn: number, step: number, callId: string): EventDraft => ({
  type: 'tool/call',
  data: { turn, step, callId, name: 't', arguments: {} },
});
const tr = (turn: number, step: number, callId: string): EventDraft => ({
  type: 'tool/result',
  data: { turn, step, callId, content: [] },
});
const disposed: EventDraft = { type: 'session/disposed', data: {} };
const plugin = (data: unknown = { anything: 1 }) => ({ type: 'plugin/note', data }) as unknown as EventDraft;

function log(drafts: EventDraft[], from = 0): SessionEvent[] {
  return drafts.map((d, i) => ({ seq: from + i, time: i, ...d }) as SessionEvent);
}
/** The problems of a log (empty when valid). */
function problems(drafts: EventDraft[], opts: Parameters<typeof checkLog>[1] = {}): string[] {
  const result = checkLog(log(drafts), opts);
  return result.ok ? [] : result.problems;
}

const P = user('P');
const A = ctx('A');
/** A valid one-turn log: inject A, follow-up P, one step with a tool call, then step 2 with the context. */
const VALID: EventDraft[] = [
  ins('next-step', A),
  ins('next-turn', P),
  ts(1),
  claim('next-step'),
  claim('next-turn'),
  ss(1, 1),
  um(A),
  um(P),
  am(1, 1, ['c1', 'c2']),
  tc(1, 1, 'c1'),
  tc(1, 1, 'c2'),
  tr(1, 1, 'c1'),
  ins('next-step', ctx('ctx-c1')),
  tr(1, 1, 'c2'),
  se(1, 1),
  claim('next-step'),
  ss(1, 2),
  um(ctx('ctx-c1')),
  um(ctx('X')), // a pre-step addition (rule 7)
  am(1, 2),
  se(1, 2),
  te(1),
];

describe('valid logs', () => {
  it('accepts a well-formed log, an empty log, and plugin events anywhere', () => {
    expect(checkLog(log(VALID))).toEqual({ ok: true });
    expect(checkLog([])).toEqual({ ok: true });
    expect(
      problems([plugin(), ...VALID.slice(0, 9), plugin('not even an object'), ...VALID.slice(9)]),
    ).toEqual([]);
  });

  it('assertLogValid passes silently, or throws listing every problem', () => {
    expect(() => assertLogValid(log(VALID))).not.toThrow();
    const broken = log([ts(2), te(3)]);
    expect(() => assertLogValid(broken)).toThrow(LogInvariantError);
    expect(() => assertLogValid(broken)).toThrow(
      'session log breaks 2 invariant(s):\n- seq 0: turn/start expected turn 1, got 2\n- seq 1: turn/end expected turn 2, got 3',
    );
  });
});

describe('envelopes and seq', () => {
  it('rejects an invalid envelope and invalid core data', () => {
    const events = log([ts(1), te(1)]);
    const bad = [
      { ...events[0], time: undefined },
      { ...events[1], data: { turn: 0, reason: { kind: 'completed' } } },
    ] as unknown as SessionEvent[];
    const result = checkLog(bad);
    expect(result.ok).toBe(false);
    expect(!result.ok && result.problems.slice(0, 2)).toEqual([
      'event #0 (seq 0): envelope: Invalid input: expected number, received undefined',
      'event #1 (seq 1): turn/end data: turn: Too small: expected number to be >=1',
    ]);
  });

  it('rejects a gap or a repeat in seq, once per break', () => {
    const four = () =>
      log([
        ins('next-step', A),
        ins('next-step', ctx('B'), 1),
        ins('next-step', ctx('C'), 2),
        ins('next-step', ctx('D'), 3),
      ]);
    const gap = four().map((e, i) => (i >= 2 ? { ...e, seq: e.seq + 1 } : e));
    expect(checkLog(gap)).toEqual({
      ok: false,
      problems: ['seq 3: agent/inbox/spliced seq expected 2, got 3'],
    });
    const repeat = four().map((e, i) => (i >= 2 ? { ...e, seq: e.seq - 1 } : e));
    expect(checkLog(repeat)).toEqual({
      ok: false,
      problems: ['seq 1: agent/inbox/spliced seq expected 2, got 1'],
    });
  });

  it('starts seq at 0, or where the initial state says', () => {
    expect(checkLog(log([ins('next-step', A)], 3))).toEqual({
      ok: false,
      problems: ['seq 3: agent/inbox/spliced seq expected 0, got 3'],
    });
    expect(checkLog(log([ins('next-step', A)], 3), { initial: { nextSeq: 3 } })).toEqual({ ok: true });
  });

  it('rejects anything after session/disposed, and session/disposed inside a turn', () => {
    expect(problems([disposed, ins('next-step', A), plugin()])).toEqual([
      'seq 1: agent/inbox/spliced after session/disposed at seq 0',
      'seq 2: plugin/note after session/disposed at seq 0',
    ]);
    expect(problems([ins('next-turn', P), ts(1), claim('next-turn'), disposed])).toEqual([
      'seq 3: session/disposed while turn 1 is open',
      'end of log: turn 1 has no turn/end',
    ]);
  });
});

describe('turns and steps (rule 24)', () => {
  it('numbers turns last+1 from 1, or from the initial turn', () => {
    expect(problems([ts(1), te(1), ts(3), te(3)])).toEqual(['seq 2: turn/start expected turn 2, got 3']);
    expect(problems([ts(5), te(5)], { initial: { turn: 4 } })).toEqual([]);
  });

  it('closes every turn exactly once, with its own number', () => {
    expect(problems([ts(1), ts(2), te(2)])).toEqual(['seq 1: turn/start while turn 1 is open']);
    expect(problems([ts(1), te(1), te(1)])).toEqual(['seq 2: turn/end without an open turn']);
    expect(problems([ts(1), te(2)])).toEqual(['seq 1: turn/end expected turn 1, got 2']);
    expect(problems([ts(1)])).toEqual(['end of log: turn 1 has no turn/end']);
    expect(problems([ts(1), ss(1, 1)], { allowOpen: true })).toEqual([]);
  });

  it('nests steps in turns and numbers them 1..n per turn', () => {
    expect(problems([ss(1, 1), se(1, 1)])).toEqual([
      'seq 0: step/start outside a turn',
      'seq 1: step/end outside an open step (no turn)',
    ]);
    expect(problems([ts(1), ss(1, 2), se(1, 2), te(1)])).toEqual([
      'seq 1: step/start expected step 1, got 2',
    ]);
    expect(problems([ts(1), ss(2, 1), se(2, 1), te(1)])).toEqual([
      'seq 1: step/start expected turn 1, got 2',
      'seq 2: step/end expected turn 1, got 2',
    ]);
    expect(problems([ts(1), ss(1, 1), se(1, 1), te(1), ts(2), ss(2, 1), se(2, 1), te(2)])).toEqual([]);
  });

  it('pairs step/start and step/end', () => {
    expect(problems([ts(1), ss(1, 1), ss(1, 2), se(1, 2), te(1)])).toEqual([
      'seq 2: step/start while step 1.1 is open',
    ]);
    expect(problems([ts(1), ss(1, 1), se(1, 1), se(1, 1), te(1)])).toEqual([
      'seq 3: step/end outside an open step (turn 1)',
    ]);
    expect(problems([ts(1), ss(1, 1), se(1, 2), te(1)])).toEqual(['seq 2: step/end expected step 1, got 2']);
    expect(problems([ts(1), ss(1, 1), te(1)])).toEqual(['seq 2: turn/end while step 1.1 is open']);
    expect(problems([ts(1), ss(1, 1)])).toEqual([
      'end of log: step 1.1 has no step/end',
      'end of log: turn 1 has no turn/end',
    ]);
  });
});

describe('events inside steps (rules 14, 18, 29)', () => {
  it('keeps user, assistant and tool events inside an open step with matching numbers', () => {
    expect(problems([ts(1), um(ctx('X')), am(1, 1), tc(1, 1, 'c'), tr(1, 1, 'c'), te(1)])).toEqual([
      'seq 1: user/message outside an open step (turn 1)',
      'seq 2: assistant/message outside an open step (turn 1)',
      'seq 3: tool/call outside an open step (turn 1)',
      'seq 4: tool/result outside an open step (turn 1)',
    ]);
    expect(problems([am(1, 1)])).toEqual(['seq 0: assistant/message outside an open step (no turn)']);
    expect(
      problems([ts(1), ss(1, 1), am(1, 2, ['c']), tc(2, 1, 'c'), tr(1, 1, 'c'), se(1, 1), te(1)]),
    ).toEqual(['seq 2: assistant/message expected step 1, got 2', 'seq 3: tool/call expected turn 1, got 2']);
  });

  it("enters user messages before the step's model output, and one assistant/message per step", () => {
    expect(problems([ts(1), ss(1, 1), am(1, 1), um(ctx('X')), se(1, 1), te(1)])).toEqual([
      "seq 3: user/message X after the step's assistant/message",
    ]);
    expect(problems([ts(1), ss(1, 1), am(1, 1), am(1, 1), se(1, 1), te(1)])).toEqual([
      'seq 3: assistant/message repeated in step 1.1',
    ]);
  });

  it("takes tool calls only from the step's assistant/message, once each", () => {
    expect(problems([ts(1), ss(1, 1), tc(1, 1, 'c1'), se(1, 1), te(1)])).toEqual([
      "seq 2: tool/call c1 before the step's assistant/message",
    ]);
    expect(problems([ts(1), ss(1, 1), am(1, 1, ['c1']), tc(1, 1, 'c9'), se(1, 1), te(1)])).toEqual([
      "seq 3: tool/call c9 was not requested by the step's assistant/message",
    ]);
    expect(
      problems([
        ts(1),
        ss(1, 1),
        am(1, 1, ['c1']),
        tc(1, 1, 'c1'),
        tc(1, 1, 'c1'),
        tr(1, 1, 'c1'),
        se(1, 1),
        te(1),
      ]),
    ).toEqual(['seq 4: tool/call c1 repeated in step 1.1']);
  });

  it("gives every call exactly one result, after the call, in the model's call order, before step/end", () => {
    const head = [ts(1), ss(1, 1), am(1, 1, ['c1', 'c2'])];
    expect(problems([...head, tr(1, 1, 'c1'), se(1, 1), te(1)])).toEqual([
      'seq 3: tool/result c1 without a tool/call in this step',
    ]);
    expect(problems([...head, tc(1, 1, 'c1'), tr(1, 1, 'c1'), tr(1, 1, 'c1'), se(1, 1), te(1)])).toEqual([
      'seq 5: tool/result c1 repeated: at most one result per call',
    ]);
    expect(
      problems([...head, tc(1, 1, 'c1'), tc(1, 1, 'c2'), tr(1, 1, 'c2'), tr(1, 1, 'c1'), se(1, 1), te(1)]),
    ).toEqual(["seq 5: tool/result c2 before c1: results commit in the model's call order"]);
    expect(problems([...head, tc(1, 1, 'c1'), tc(1, 1, 'c2'), tr(1, 1, 'c1'), se(1, 1), te(1)])).toEqual([
      'seq 6: step/end: tool call(s) c2 without a tool/result',
    ]);
    // A result from another step does not count.
    expect(
      problems([
        ts(1),
        ss(1, 1),
        am(1, 1, ['c1']),
        tc(1, 1, 'c1'),
        se(1, 1),
        ss(1, 2),
        tr(1, 2, 'c1'),
        se(1, 2),
        te(1),
      ]),
    ).toEqual([
      'seq 4: step/end: tool call(s) c1 without a tool/result',
      'seq 6: tool/result c1 without a tool/call in this step',
    ]);
  });
});

describe('inbox splices (rules 3, 10, 11, 27)', () => {
  it('applies every splice validly to the fold of the previous ones', () => {
    expect(problems([claim('next-step')])).toEqual([
      'seq 0: agent/inbox/spliced splice removes 1 from 0 but next-step has 0',
    ]);
    expect(problems([ins('next-step', A), ins('next-turn', user('A'))])).toEqual([
      'seq 1: agent/inbox/spliced splice inserts id A that is already pending',
    ]);
    expect(
      problems([{ type: 'agent/inbox/spliced', data: { target: 'next-step', start: 0, inserted: [] } }]),
    ).toEqual(['seq 0: agent/inbox/spliced splice changes nothing']);
  });

  it('inserts only at the end, and never removes and inserts in one splice', () => {
    expect(problems([ins('next-step', A), ins('next-step', ctx('B'), 0)])).toEqual([
      'seq 1: agent/inbox/spliced insertion expected at the end of next-step (start 1), got start 0',
    ]);
    expect(
      problems([
        ins('next-step', A),
        {
          type: 'agent/inbox/spliced',
          data: { target: 'next-step', start: 0, removedCount: 1, inserted: [ctx('B')] },
        },
      ]),
    ).toEqual(['seq 1: agent/inbox/spliced both removes and inserts']);
  });

  it('allows insertions at any time before dispose: idle, in pre-step, inside a step', () => {
    expect(
      problems([
        ins('next-turn', P),
        ts(1),
        ins('next-step', A, 0),
        claim('next-turn'),
        ss(1, 1),
        ins('next-step', ctx('B'), 1),
        um(P),
        am(1, 1),
        se(1, 1),
        claim('next-step', 2),
        ss(1, 2),
        um(A),
        um(ctx('B')),
        am(1, 2),
        se(1, 2),
        te(1),
      ]),
    ).toEqual([]);
  });

  it('claims only inside a turn, outside an open step', () => {
    expect(problems([ins('next-step', A), claim('next-step')])).toEqual([
      'seq 1: agent/inbox/spliced claim of next-step outside a turn',
    ]);
    expect(
      problems([
        ins('next-turn', P),
        ts(1),
        claim('next-turn'),
        ss(1, 1),
        um(P),
        ins('next-step', A),
        claim('next-step'),
        se(1, 1),
        te(1),
      ]),
    ).toEqual(['seq 6: agent/inbox/spliced claim of next-step inside open step 1.1']);
  });

  it('claims from the start: all of next-step, exactly one next-turn item', () => {
    const two = [ins('next-step', A), ins('next-step', ctx('B'), 1)];
    expect(problems([...two, ts(1), claim('next-step', 1, 1), te(1)])).toEqual([
      'seq 3: agent/inbox/spliced claim of next-step expected start 0, got 1',
      'seq 3: agent/inbox/spliced claim of next-step expected to take all 2, took 1',
    ]);
    expect(
      problems([ins('next-turn', P), ins('next-turn', user('Q'), 1), ts(1), claim('next-turn', 2), te(1)]),
    ).toEqual(['seq 3: agent/inbox/spliced claim of next-turn expected to remove exactly 1, removed 2']);
  });

  it('claims next-step before next-turn, once each per boundary, and next-turn only at the turn boundary', () => {
    expect(
      problems([
        ins('next-step', A),
        ins('next-turn', P),
        ts(1),
        claim('next-turn'),
        claim('next-step'),
        te(1),
      ]),
    ).toEqual([
      'seq 4: agent/inbox/spliced claim of next-step after the next-turn claim of the same boundary',
    ]);
    expect(
      problems([
        ins('next-step', A),
        ts(1),
        claim('next-step'),
        ins('next-step', ctx('B')),
        claim('next-step'),
        te(1),
      ]),
    ).toEqual(['seq 4: agent/inbox/spliced second claim of next-step at one boundary']);
    expect(
      problems([
        ins('next-turn', P),
        ins('next-turn', user('Q'), 1),
        ts(1),
        claim('next-turn'),
        ss(1, 1),
        um(P),
        am(1, 1),
        se(1, 1),
        claim('next-turn'),
        te(1),
      ]),
    ).toEqual(['seq 8: agent/inbox/spliced claim of next-turn at a step boundary (after step 1.1)']);
  });

  it('cancels whole lists, next-step first, at any time', () => {
    const both = [ins('next-step', A), ins('next-step', ctx('B'), 1), ins('next-turn', P)];
    expect(problems([...both, cancel('next-step', 2), cancel('next-turn')])).toEqual([]);
    expect(
      problems([
        ...both,
        ts(1),
        cancel('next-step', 2),
        cancel('next-turn'),
        te(1, { kind: 'aborted', reason: { kind: 'user' } }),
      ]),
    ).toEqual([]);
    expect(problems([...both, cancel('next-step', 1)])).toEqual([
      'seq 3: agent/inbox/spliced canceled splice expected to discard all 2 of next-step, removed 1 from 0',
    ]);
    expect(problems([...both, cancel('next-turn'), cancel('next-step', 2)])).toEqual([
      "seq 4: agent/inbox/spliced canceled splice of next-step after next-turn's at seq 3: next-step is discarded first",
    ]);
  });
});

describe('entering messages (rules 2, 7, 13)', () => {
  const turnWith = (...inside: EventDraft[]): EventDraft[] => [
    ss(1, 1),
    ...inside,
    am(1, 1),
    se(1, 1),
    te(1),
  ];

  it('enters a claimed message once, as the same frozen value', () => {
    expect(problems([ins('next-turn', P), ts(1), claim('next-turn'), ...turnWith(um(P))])).toEqual([]);
    expect(
      problems([ins('next-turn', P), ts(1), claim('next-turn'), ...turnWith(um(user('P', 'edited')))]),
    ).toEqual(['seq 4: user/message P differs from the message inserted at seq 0']);
    expect(problems([ins('next-turn', P), ts(1), claim('next-turn'), ...turnWith(um(P), um(P))])).toEqual([
      'seq 5: user/message P entered twice (first at seq 4)',
    ]);
  });

  it('does not enter a message that is still pending or was claimed by an earlier turn', () => {
    expect(
      problems([
        ins('next-step', A),
        ins('next-turn', P),
        ts(1),
        claim('next-turn'),
        ...turnWith(um(P), um(A)),
      ]),
    ).toEqual(['seq 6: user/message A (inserted at seq 0) was still pending']);
    const rejected = [ins('next-turn', P), ts(1), claim('next-turn'), te(1, { kind: 'blocked' })];
    expect(
      problems([
        ...rejected,
        ins('next-turn', user('W')),
        ts(2),
        claim('next-turn'),
        ss(2, 1),
        um(P),
        am(2, 1),
        se(2, 1),
        te(2),
      ]),
    ).toEqual(['seq 8: user/message P (inserted at seq 0) was not claimed in turn 2']);
  });

  it('accepts a pre-step addition only if its id never was in the inbox and never entered', () => {
    expect(
      problems([ins('next-turn', P), ts(1), claim('next-turn'), ...turnWith(um(P), um(ctx('X')))]),
    ).toEqual([]);
    const twice = [
      ins('next-turn', P),
      ts(1),
      claim('next-turn'),
      ...turnWith(um(P), um(ctx('X'))),
      ins('next-turn', user('Q')),
      ts(2),
      claim('next-turn'),
      ss(2, 1),
      um(user('Q')),
      um(ctx('X')),
      am(2, 1),
      se(2, 1),
      te(2),
    ];
    expect(problems(twice)).toEqual(['seq 14: user/message X entered twice (first at seq 5)']);
  });

  it('knows the ids and inbox carried into a continued run', () => {
    const continued = [
      ins('next-turn', P, 0),
      ts(3),
      claim('next-step'),
      claim('next-turn'),
      ss(3, 1),
      um(A),
      um(P),
      am(3, 1),
      se(3, 1),
      te(3),
    ];
    const initial = {
      nextSeq: 0,
      turn: 2,
      inbox: { nextTurn: [], nextStep: [A] },
      recent: [
        ['A', 'inject'],
        ['old', 'followup'],
      ] as [string, string][],
    };
    expect(problems(continued, { initial })).toEqual([]);
    expect(problems(continued)).toEqual([
      'seq 1: turn/start expected turn 1, got 3',
      'seq 2: agent/inbox/spliced splice removes 1 from 0 but next-step has 0',
    ]);
    expect(
      problems(
        [
          ins('next-turn', P),
          ts(3),
          claim('next-turn'),
          ...[ss(3, 1), um(P), um(ctx('old')), am(3, 1), se(3, 1), te(3)],
        ],
        { initial: { ...initial, inbox: EMPTY_INBOX } },
      ),
    ).toEqual(['seq 5: user/message old (inserted before this log) was not claimed in turn 3']);
  });
});
