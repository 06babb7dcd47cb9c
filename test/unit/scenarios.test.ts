/**
 * The semantics scenarios (docs/semantics.md) that the pure domain decides, run through the one loop
 * (src/domain/driver.ts) by the in-memory interpreter, with the exact log. Each log also passes the invariant checker.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { checkLog, projectTranscript } from '../../src/domain/index';
import {
  ctx,
  msg,
  outline,
  queuedScript,
  InMemorySession,
  user,
  userIds,
  type Script,
} from '../support/interpreter';

let sims: InMemorySession[] = [];
/** The tools the scenarios' scripted models call. */
const config = { tools: ['a', 'b', 'c', 'build', 'done', 'grep', 'read'] };
function sim(script: Script = {}): InMemorySession {
  const s = new InMemorySession(script, { config });
  sims.push(s);
  return s;
}
afterEach(() => {
  for (const s of sims) expect(checkLog(s.log)).toEqual({ ok: true });
  sims = [];
});

/** The id the loop gave the assistant message of a step. */
function assistantId(s: InMemorySession, turn: number, step: number): string {
  const event = s.log.find(
    (e) => e.type === 'assistant/message' && e.data.turn === turn && e.data.step === step,
  );
  if (event?.type !== 'assistant/message') throw new Error(`no assistant message ${turn}.${step}`);
  return event.data.message.id;
}

const oneTurn = (turn: number, ...ids: string[]) => [
  `turn/start ${turn}`,
  `claim next-turn ${ids[0]}`,
  `step/start ${turn}.1`,
  ...ids.map((id) => `user/message ${id}`),
  `assistant/message ${turn}.1`,
  `step/end ${turn}.1`,
  `turn/end ${turn} completed`,
];

describe('B. idle and waking', () => {
  it('1. idle inject: one insertion splice, idle, no model call', () => {
    const s = sim();
    s.inject(ctx('A'));
    expect(outline(s.core.log)).toEqual(['insert next-step A']);
    expect(s.core.stateView()).toMatchObject({
      status: 'idle',
      turn: 0,
      pending: { nextTurn: [], nextStep: ['A'] },
    });
    expect(s.requests).toHaveLength(0);
  });

  it('2. idle inject then follow-up: A enters before P in turn 1, and R[0] has A before P', () => {
    const s = sim();
    s.inject(ctx('A'));
    s.followup(user('P'));
    expect(outline(s.core.log)).toEqual([
      'insert next-step A',
      'insert next-turn P',
      'turn/start 1',
      'claim next-step A',
      'claim next-turn P',
      'step/start 1.1',
      'user/message A',
      'user/message P',
      'assistant/message 1.1',
      'step/end 1.1',
      'turn/end 1 completed',
    ]);
    expect(s.requests.map(userIds)).toEqual([['A', 'P']]);
  });

  it('3. three idle injects then a follow-up: the first batch is [A, B, C, P]', () => {
    const s = sim();
    s.inject(ctx('A'));
    s.inject(ctx('B'));
    s.inject(ctx('C'));
    s.followup(user('P'));
    expect(outline(s.core.log).slice(3, 9)).toEqual([
      'insert next-turn P',
      'turn/start 1',
      'claim next-step A,B,C',
      'claim next-turn P',
      'step/start 1.1',
      'user/message A',
    ]);
    expect(s.requests.map(userIds)).toEqual([['A', 'B', 'C', 'P']]);
  });

  it('23 (steer). steer while idle wakes like a follow-up, with the pending injected context', () => {
    const s = sim();
    s.inject(ctx('A'));
    s.steer(user('S'));
    expect(outline(s.core.log)).toEqual([
      'insert next-step A',
      'insert next-step S',
      'turn/start 1',
      'claim next-step A,S',
      'step/start 1.1',
      'user/message A',
      'user/message S',
      'assistant/message 1.1',
      'step/end 1.1',
      'turn/end 1 completed',
    ]);
  });
});

describe('C. claim and pre-step', () => {
  it('4. inject during a model call: after step/end 1.1 the turn runs step 2 with [A]; still one turn', () => {
    const s = sim({
      during: (p) => (p.at === 'model' && p.step === 1 ? [{ lane: 'inject', message: ctx('A') }] : []),
    });
    s.followup(user('P'));
    expect(outline(s.core.log)).toEqual([
      'insert next-turn P',
      'turn/start 1',
      'claim next-turn P',
      'step/start 1.1',
      'user/message P',
      'insert next-step A',
      'assistant/message 1.1',
      'step/end 1.1',
      'claim next-step A',
      'step/start 1.2',
      'user/message A',
      'assistant/message 1.2',
      'step/end 1.2',
      'turn/end 1 completed',
    ]);
    expect(s.requests.map(userIds)).toEqual([['P'], ['P', 'A']]);
  });

  it('6. inject while pre-step runs: not in that batch; step 2 if pre-step enters, pending if it rejects', () => {
    const late = (p: { at: string; step: number }) =>
      p.at === 'pre-step' && p.step === 1 ? [{ lane: 'inject' as const, message: ctx('A') }] : [];
    const enters = sim({ during: late });
    enters.followup(user('P'));
    expect(enters.requests.map(userIds)).toEqual([['P'], ['P', 'A']]);
    const rejects = sim(queuedScript({ preSteps: [{ kind: 'reject' }], during: late }));
    rejects.followup(user('P'));
    expect(outline(rejects.core.log)).toEqual([
      'insert next-turn P',
      'turn/start 1',
      'claim next-turn P',
      'insert next-step A',
      'turn/end 1 blocked',
    ]);
    expect(rejects.core.stateView().pending).toEqual({ nextTurn: [], nextStep: ['A'] });
  });

  it('7. a pre-step listener that adds ctx X: user/message X is in step 1 and R[0] has it', () => {
    const s = sim(
      queuedScript({ preSteps: [{ kind: 'extra', messages: [ctx('X', 'project notes', 'tui')] }] }),
    );
    s.followup(user('P'));
    expect(outline(s.core.log).slice(3, 6)).toEqual(['step/start 1.1', 'user/message P', 'user/message X']);
    expect(s.requests.map(userIds)).toEqual([['P', 'X']]);
    expect(s.core.stateView().pending).toEqual({ nextTurn: [], nextStep: [] });
  });

  it('8. reject: "secret" blocks turn 1 with no step; "safe" waits for the next waking message, then runs alone', () => {
    const s = sim({
      preStep: ({ batch }) =>
        batch.some((m) => m.id === 'secret') ? { kind: 'reject', reason: 'secret' } : { kind: 'default' },
    });
    s.followup(user('secret'), user('safe'));
    expect(outline(s.core.log)).toEqual([
      'insert next-turn secret',
      'insert next-turn safe',
      'turn/start 1',
      'claim next-turn secret',
      'turn/end 1 blocked',
    ]);
    expect(s.core.log.at(-1)?.data).toEqual({ turn: 1, reason: { kind: 'blocked', message: 'secret' } });
    expect(s.core.stateView()).toMatchObject({
      status: 'idle',
      pending: { nextTurn: ['safe'], nextStep: [] },
    });
    s.followup(user('W'));
    expect(outline(s.core.log).slice(5)).toEqual([
      'insert next-turn W',
      ...oneTurn(2, 'safe'),
      ...oneTurn(3, 'W'),
    ]);
  });

  it('9. reject keeps late input: A and S arrive during pre-step 1, reject → [A, S] pending; W enters [A, S, W]', () => {
    const s = sim({
      preStep: ({ turn }) => (turn === 1 ? { kind: 'reject' } : { kind: 'default' }),
      during: (p) =>
        p.at === 'pre-step' && p.turn === 1
          ? [
              { lane: 'inject', message: ctx('A') },
              { lane: 'steer', message: user('S') },
            ]
          : [],
    });
    s.followup(user('P'));
    expect(s.core.stateView()).toMatchObject({
      status: 'idle',
      turn: 1,
      pending: { nextTurn: [], nextStep: ['A', 'S'] },
    });
    s.followup(user('W'));
    expect(outline(s.core.log).slice(5)).toEqual([
      'turn/end 1 blocked',
      'insert next-turn W',
      'turn/start 2',
      'claim next-step A,S',
      'claim next-turn W',
      'step/start 2.1',
      'user/message A',
      'user/message S',
      'user/message W',
      'assistant/message 2.1',
      'step/end 2.1',
      'turn/end 2 completed',
    ]);
  });

  it('10. pre-step fails once with P1, P2 queued: turn 1 error with no step; P1 gone; P2 pending; idle', () => {
    const s = sim(
      queuedScript({ preSteps: [{ kind: 'throw', message: 'hook unreachable', code: 'HOOK_FAILED' }] }),
    );
    s.followup(user('P1'), user('P2'));
    expect(outline(s.core.log)).toEqual([
      'insert next-turn P1',
      'insert next-turn P2',
      'turn/start 1',
      'claim next-turn P1',
      'turn/end 1 error',
    ]);
    expect(s.core.log.at(-1)?.data).toEqual({
      turn: 1,
      reason: { kind: 'error', error: { message: 'hook unreachable', code: 'HOOK_FAILED' } },
    });
    expect(s.core.stateView()).toMatchObject({ status: 'idle', pending: { nextTurn: ['P2'], nextStep: [] } });
    expect(s.requests).toHaveLength(0);
    s.followup(user('P3'));
    expect(outline(s.core.log).slice(6)).toEqual([...oneTurn(2, 'P2'), ...oneTurn(3, 'P3')]);
  });
});

describe('D. steps, tools and their contexts', () => {
  it('5. inject from inside a tool body: tool/result precedes user/message A; in R[1] A follows the result', () => {
    const s = sim(
      queuedScript({
        models: [{ toolCalls: [{ name: 'build', callId: 'c1' }] }],
        during: (p) =>
          p.at === 'tool' && p.callId === 'c1'
            ? [{ lane: 'inject', message: ctx('A', 'build log', 'build') }]
            : [],
      }),
    );
    s.followup(user('P'));
    expect(outline(s.core.log).slice(3)).toEqual([
      'step/start 1.1',
      'user/message P',
      'assistant/message 1.1 [c1]',
      'tool/call c1',
      'insert next-step A',
      'tool/result c1',
      'step/end 1.1',
      'claim next-step A',
      'step/start 1.2',
      'user/message A',
      'assistant/message 1.2',
      'step/end 1.2',
      'turn/end 1 completed',
    ]);
    expect(s.requests[1]?.map((e) => (e.role === 'tool' ? `tool ${e.callId}` : `${e.role} ${e.id}`))).toEqual(
      ['user P', `assistant ${assistantId(s, 1, 1)}`, 'tool c1', 'user A'],
    );
  });

  it('11. two tool calls with a context each: both results, step/end, then both contexts in step 2', () => {
    const s = sim(
      queuedScript({
        models: [
          {
            toolCalls: [
              {
                name: 'read',
                callId: 'c1',
                contexts: [msg('ctx-c1', 'c1 note', { kind: 'tool', callId: 'c1' })],
              },
              {
                name: 'grep',
                callId: 'c2',
                contexts: [msg('ctx-c2', 'c2 note', { kind: 'tool', callId: 'c2' })],
              },
            ],
          },
        ],
      }),
    );
    s.followup(user('P'));
    expect(outline(s.core.log).slice(3)).toEqual([
      'step/start 1.1',
      'user/message P',
      'assistant/message 1.1 [c1,c2]',
      'tool/call c1',
      'tool/call c2',
      'tool/result c1',
      'insert next-step ctx-c1',
      'tool/result c2',
      'insert next-step ctx-c2',
      'step/end 1.1',
      'claim next-step ctx-c1,ctx-c2',
      'step/start 1.2',
      'user/message ctx-c1',
      'user/message ctx-c2',
      'assistant/message 1.2',
      'step/end 1.2',
      'turn/end 1 completed',
    ]);
    const entered = s.core.log.flatMap((e) => (e.type === 'user/message' ? [e.data.message.source] : []));
    expect(entered).toEqual([
      { kind: 'user' },
      { kind: 'tool', callId: 'c1' },
      { kind: 'tool', callId: 'c2' },
    ]);
  });

  it('13. steer during a batch of three tool calls: all three commit; the steer enters at step 2', () => {
    const s = sim(
      queuedScript({
        models: [
          {
            toolCalls: [
              { name: 'a', callId: 'c1' },
              { name: 'b', callId: 'c2' },
              { name: 'c', callId: 'c3' },
            ],
          },
        ],
        during: (p) => (p.at === 'tool' && p.callId === 'c2' ? [{ lane: 'steer', message: user('S') }] : []),
      }),
    );
    s.followup(user('P'));
    const lines = outline(s.core.log);
    expect(lines.slice(lines.indexOf('tool/result c1'))).toEqual([
      'tool/result c1',
      'insert next-step S',
      'tool/result c2',
      'tool/result c3',
      'step/end 1.1',
      'claim next-step S',
      'step/start 1.2',
      'user/message S',
      'assistant/message 1.2',
      'step/end 1.2',
      'turn/end 1 completed',
    ]);
  });

  it('21. a concluding tool ends the turn after its step, unless its context is pending', () => {
    const plain = sim(
      queuedScript({ models: [{ toolCalls: [{ name: 'done', callId: 'c1', concludes: true }] }] }),
    );
    plain.followup(user('P'));
    expect(outline(plain.core.log).slice(-3)).toEqual([
      'tool/result c1',
      'step/end 1.1',
      'turn/end 1 completed',
    ]);
    const withContext = sim(
      queuedScript({
        models: [{ toolCalls: [{ name: 'done', callId: 'c1', concludes: true, contexts: ['note'] }] }],
      }),
    );
    withContext.followup(user('P'));
    expect(outline(withContext.core.log).slice(-6)).toEqual([
      'claim next-step c1:ctx1',
      'step/start 1.2',
      'user/message c1:ctx1',
      'assistant/message 1.2',
      'step/end 1.2',
      'turn/end 1 completed',
    ]);
  });

  it('26. a model failure ends the turn in error and never the session', () => {
    const s = sim(queuedScript({ models: [{ fail: 'provider 500' }] }));
    s.followup(user('P'));
    expect(outline(s.core.log).slice(-3)).toEqual(['user/message P', 'step/end 1.1', 'turn/end 1 error']);
    s.followup(user('Q'));
    expect(outline(s.core.log).slice(-1)).toEqual(['turn/end 2 completed']);
  });
});

describe('E. turns', () => {
  it('14. five follow-ups in one workflow task: turns 1..5, one user/message each, in order', () => {
    const s = sim();
    s.followup(...['P1', 'P2', 'P3', 'P4', 'P5'].map((id) => user(id)));
    expect(outline(s.core.log)).toEqual([
      ...['P1', 'P2', 'P3', 'P4', 'P5'].map((id) => `insert next-turn ${id}`),
      ...[1, 2, 3, 4, 5].flatMap((n) => oneTurn(n, `P${n}`)),
    ]);
  });

  it("15. follow-up Q during turn 1: turn 2 starts after turn/end 1 and its request holds turn 1's answer, then Q", () => {
    const s = sim({
      during: (p) => (p.at === 'model' && p.turn === 1 ? [{ lane: 'followup', message: user('Q') }] : []),
    });
    s.followup(user('P'));
    expect(outline(s.core.log)).toEqual([
      'insert next-turn P',
      'turn/start 1',
      'claim next-turn P',
      'step/start 1.1',
      'user/message P',
      'insert next-turn Q',
      'assistant/message 1.1',
      'step/end 1.1',
      'turn/end 1 completed',
      ...oneTurn(2, 'Q'),
    ]);
    expect(s.requests[1]?.map((e) => (e.role === 'tool' ? e.callId : e.id))).toEqual([
      'P',
      assistantId(s, 1, 1),
      'Q',
    ]);
  });
});

describe('G. durability', () => {
  it('22 (pure). a pending idle inject carried across continue-as-new: the next run enters [A, P]; turn and seq continue', () => {
    const s = sim();
    s.followup(user('P0'));
    s.inject(ctx('A'));
    const firstRun = s.core.log.slice();
    const carriedInbox = s.core.snapshot.inbox;
    s.continueAsNew();
    expect(s.continuedAsNew).toBe(1);
    expect(s.core.log).toEqual([]);
    s.followup(user('P0'), user('P'));
    expect(s.core.log[0]?.seq).toBe(firstRun.length);
    expect(outline(s.core.log, carriedInbox)).toEqual([
      'insert next-turn P',
      'turn/start 2',
      'claim next-step A',
      'claim next-turn P',
      'step/start 2.1',
      'user/message A',
      'user/message P',
      'assistant/message 2.1',
      'step/end 2.1',
      'turn/end 2 completed',
    ]);
    // The second request is assembled from the earlier run's entries plus the new ones (a cache miss).
    expect(s.requests.map(userIds)).toEqual([['P0'], ['P0', 'A', 'P']]);
    expect(checkLog(s.log)).toEqual({ ok: true });
    expect(projectTranscript(s.log).slice(s.core.transcript.base)).toEqual(s.core.transcript.entries);
  });

  it('23. the same follow-up id sent three times: one insertion, one turn; later copies get the original receipt', () => {
    const s = sim();
    const results = s.followup(user('P'), user('P'));
    results.push(...s.followup(user('P', 'a retry with other text')));
    expect(results.map((r) => [r.accepted, r.receipt])).toEqual([
      [true, { messageId: 'P', lane: 'followup', duplicate: false, seq: 0 }],
      [false, { messageId: 'P', lane: 'followup', duplicate: true, seq: 0 }],
      [false, { messageId: 'P', lane: 'followup', duplicate: true, seq: 0 }],
    ]);
    expect(outline(s.core.log)).toEqual(['insert next-turn P', ...oneTurn(1, 'P')]);
  });
});

describe('H. transcript', () => {
  it('25. inject from a plugin then a user follow-up: two user/messages with their sources, no wrapper', () => {
    const s = sim();
    s.inject(msg('A', 'file a.ts changed', { kind: 'plugin', plugin: 'watcher' }));
    s.followup(msg('P', 'what changed?', { kind: 'user' }));
    const entered = s.core.log.flatMap((e) => (e.type === 'user/message' ? [e.data.message] : []));
    expect(entered).toEqual([
      {
        id: 'A',
        role: 'user',
        content: [{ type: 'text', text: 'file a.ts changed' }],
        source: { kind: 'plugin', plugin: 'watcher' },
      },
      { id: 'P', role: 'user', content: [{ type: 'text', text: 'what changed?' }], source: { kind: 'user' } },
    ]);
    expect(s.requests[0]).toEqual([
      {
        role: 'user',
        id: 'A',
        content: [{ type: 'text', text: 'file a.ts changed' }],
        source: { kind: 'plugin', plugin: 'watcher' },
      },
      { role: 'user', id: 'P', content: [{ type: 'text', text: 'what changed?' }], source: { kind: 'user' } },
    ]);
  });
});
