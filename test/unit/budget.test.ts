/**
 * Budgets that pause and ask (SessionConfig.budget; docs/protocol.md "Budgets"), run through the one loop
 * (src/domain/driver.ts) by the in-memory interpreter: before a model step the ledger says would breach a limit, the
 * session logs `budget/exceeded` and waits for a person's `budget` decision; extend lets the step run, deny ends the
 * turn BUDGET_EXCEEDED, `onExceeded: 'stop'` ends it at once; a cancel ends the wait; the ledger counts committed
 * results only and crosses continue-as-new. Every log passes the invariant checker, which knows the budget rules.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { checkLog, type SessionConfig } from '../../src/domain/index';
import { loadConfig } from '../../src/worker/config';
import { cancel, outline, queuedScript, InMemorySession, user, type ModelPlan } from '../support/interpreter';

let sims: InMemorySession[] = [];
afterEach(() => {
  const done = sims;
  sims = [];
  for (const s of done) expect(checkLog(s.log)).toEqual({ ok: true });
});

function sim(models: ModelPlan[], budget: NonNullable<SessionConfig['budget']>): InMemorySession {
  const s = new InMemorySession(queuedScript({ models, tools: [{ name: 'read', exclusive: false }] }), {
    config: { tools: ['read'], budget },
  });
  sims.push(s);
  return s;
}

/** Two tool rounds, then an answer: three model calls and two tool results in one turn. */
const threeSteps: ModelPlan[] = [
  {
    toolCalls: [{ name: 'read', callId: 'r1', args: {}, result: 'a' }],
    usage: { inputTokens: 100, outputTokens: 10 },
  },
  {
    toolCalls: [{ name: 'read', callId: 'r2', args: {}, result: 'b' }],
    usage: { inputTokens: 150, outputTokens: 10 },
  },
  { text: 'done', usage: { inputTokens: 200, outputTokens: 5 } },
];

describe('a session at its budget', () => {
  it('pauses before the step that would breach it, shows what is used, and goes on when a person extends it', () => {
    const s = sim(threeSteps, { modelCalls: 2 });
    s.followup(user('P'));
    expect(s.waitingForBudget).toBe(true);
    expect(outline(s.log).slice(-2)).toEqual(['step/end 1.2', 'budget/exceeded 1.3 modelCalls']);
    expect(s.core.stateView()).toMatchObject({
      status: 'running',
      budget: {
        limits: { modelCalls: 2 },
        used: { modelCalls: 2, toolCalls: 2, inputTokens: 250, outputTokens: 20, costMicros: 0 },
        remaining: { modelCalls: 0 },
        paused: { turn: 1, step: 3 },
      },
    });

    // A limit that would not let the step run is refused, naming it; nothing changes.
    expect(s.budget({ decision: 'extend', limits: { modelCalls: 2 } })).toEqual({
      accepted: false,
      refused:
        'invalid budget payload: limits.modelCalls: 2 does not let the step run (used 2; give at least 3)',
    });
    expect(s.waitingForBudget).toBe(true);

    expect(s.budget({ decision: 'extend', limits: { modelCalls: 5 }, reason: 'worth it' })).toEqual({
      accepted: true,
      receipt: { decision: 'extend', limits: { modelCalls: 5 } },
    });
    expect(outline(s.log).slice(-6)).toEqual([
      'budget/exceeded 1.3 modelCalls',
      'budget/resolved 1.3 extend by caller',
      'step/start 1.3',
      'assistant/message 1.3',
      'step/end 1.3',
      'turn/end 1 completed',
    ]);
    expect(s.core.stateView().budget).toEqual({
      limits: { modelCalls: 5 },
      used: { modelCalls: 3, toolCalls: 2, inputTokens: 450, outputTokens: 25, costMicros: 0 },
      remaining: { modelCalls: 2 },
    });
  });

  it('deny ends the turn BUDGET_EXCEEDED, naming the limit; the model is not called', () => {
    const s = sim(threeSteps, { inputTokens: 200 });
    s.followup(user('P'));
    // 100 input tokens after step 1 (under), 250 after step 2: step 3 waits.
    expect(outline(s.log).at(-1)).toBe('budget/exceeded 1.3 inputTokens');
    expect(s.budget({ decision: 'deny', reason: 'too expensive' })).toMatchObject({ accepted: true });
    expect(s.requests).toHaveLength(2);
    expect(s.core.lastTurnEnd()?.reason).toEqual({
      kind: 'error',
      error: { code: 'BUDGET_EXCEEDED', message: 'budget exceeded before step 3: inputTokens 250 of 200' },
    });
    const resolved = s.log.find((e) => e.type === 'budget/resolved');
    expect(resolved?.data).toMatchObject({ decision: 'deny', reason: 'too expensive', by: 'caller' });
    expect(s.core.status()).toBe('idle');
  });

  it("with onExceeded 'stop' the turn ends at once, without waiting", () => {
    const s = sim(threeSteps, { toolCalls: 1, onExceeded: 'stop' });
    s.followup(user('P'));
    expect(s.waitingForBudget).toBe(false);
    expect(outline(s.log).slice(-3)).toEqual([
      'step/end 1.2',
      'budget/exceeded 1.3 toolCalls stop',
      'turn/end 1 error',
    ]);
    expect(s.core.lastTurnEnd()?.reason).toMatchObject({ error: { code: 'BUDGET_EXCEEDED' } });
  });

  it('a decision when nothing waits is refused; a cancel ends the wait and the turn', () => {
    const s = sim(threeSteps, { modelCalls: 1 });
    expect(s.budget({ decision: 'deny' })).toEqual({
      accepted: false,
      refused: 'the session is not waiting at its budget (a decision is taken only after budget/exceeded)',
    });
    expect(s.budget({ decision: 'extend', limits: {} })).toMatchObject({
      accepted: false,
      refused: expect.stringContaining('invalid budget payload: limits: name at least one limit'),
    });
    s.followup(user('P'));
    expect(outline(s.log).at(-1)).toBe('budget/exceeded 1.2 modelCalls');
    s.signal(cancel());
    expect(outline(s.log).slice(-2)).toEqual(['budget/resolved 1.2 deny by cancel', 'turn/end 1 aborted']);
    expect(s.core.stateView().budget?.paused).toBeUndefined();
  });

  it('a steer that arrives while it waits enters at the next pre-step after the extension', () => {
    const s = sim(threeSteps, { modelCalls: 1 });
    s.followup(user('P'));
    expect(s.steer(user('S'))[0]).toMatchObject({ accepted: true });
    expect(s.requests).toHaveLength(1);
    s.budget({ decision: 'extend', limits: { modelCalls: 10 } });
    expect(s.requests).toHaveLength(3);
    const entered = outline(s.log).filter((l) => l.startsWith('user/message'));
    expect(entered).toEqual(['user/message P', 'user/message S']);
    expect(s.core.lastTurnEnd()?.reason).toEqual({ kind: 'completed' });
  });

  it('counts the cost the worker priced each answer at, and waits when it reaches the limit', () => {
    const priced = (costMicros: number): ModelPlan['usage'] => ({
      inputTokens: 10,
      outputTokens: 1,
      costMicros,
    });
    const s = sim(
      [
        { toolCalls: [{ name: 'read', callId: 'r1', args: {}, result: 'a' }], usage: priced(600) },
        { toolCalls: [{ name: 'read', callId: 'r2', args: {}, result: 'b' }], usage: priced(600) },
        { text: 'done', usage: priced(600) },
      ],
      { costMicros: 1000 },
    );
    s.followup(user('P'));
    expect(outline(s.log).at(-1)).toBe('budget/exceeded 1.3 costMicros');
    expect(s.core.stateView().budget?.used.costMicros).toBe(1200);
    expect(s.budget({ decision: 'extend', limits: { costMicros: 1200 } })).toMatchObject({
      accepted: false,
      refused: expect.stringContaining(
        'limits.costMicros: 1200 does not let the step run (used 1200; give at least 1201)',
      ),
    });
    s.budget({ decision: 'extend', limits: { costMicros: 5000 } });
    expect(s.core.stateView().budget?.used.costMicros).toBe(1800);
  });

  it('the ledger and the limits carry across continue-as-new; a model failure counts nothing', () => {
    const s = sim([{ text: 'one' }, { fail: 'provider down' }, { text: 'three' }, { text: 'four' }], {
      modelCalls: 3,
    });
    s.followup(user('A'));
    s.followup(user('B'));
    expect(s.core.lastTurnEnd()?.reason).toMatchObject({ kind: 'error' });
    expect(s.core.stateView().budget?.used.modelCalls).toBe(1);
    s.continueAsNew();
    expect(s.continuedAsNew).toBe(1);
    s.followup(user('C'));
    s.followup(user('D'));
    expect(s.core.stateView().budget?.used.modelCalls).toBe(3);
    s.followup(user('E'));
    expect(s.waitingForBudget).toBe(true);
    expect(outline(s.log).at(-1)).toBe('budget/exceeded 5.1 modelCalls');
    s.budget({ decision: 'deny' });
    expect(outline(s.log).slice(-2)).toEqual(['budget/resolved 5.1 deny by caller', 'turn/end 5 error']);
  });

  it('counts what a compaction spent (tokens and cost), though not as a model call', () => {
    const words = (tag: string) => Array.from({ length: 40 }, (_, i) => `${tag}${i}`).join(' ');
    const s = new InMemorySession(
      {
        ...queuedScript({
          models: [
            { text: 'one', usage: { inputTokens: 100, outputTokens: 10, costMicros: 50 } },
            { text: 'two', usage: { inputTokens: 100, outputTokens: 10, costMicros: 50 } },
            { text: 'three' },
          ],
        }),
        compact: () => ({
          summary: 'the gist',
          usage: { inputTokens: 900, outputTokens: 40, costMicros: 700 },
        }),
      },
      {
        config: {
          context: { maxTokens: 256, compactAt: 0.3, keepRecent: 1 },
          budget: { inputTokens: 1000, costMicros: 5000 },
        },
      },
    );
    sims.push(s);
    s.followup(user('P1', words('a')));
    s.followup(user('P2', words('b')));
    // Turn 2 compacted before its request: the summary's usage is in the log, the totals and the ledger.
    expect(s.log.find((e) => e.type === 'compaction/summary')?.data).toMatchObject({
      usage: { inputTokens: 900, outputTokens: 40, costMicros: 700 },
    });
    const state = s.core.stateView();
    expect(state.usage).toMatchObject({ inputTokens: 1100, outputTokens: 60, steps: 2 });
    expect(state.budget?.used).toMatchObject({ inputTokens: 1100, costMicros: 800, modelCalls: 2 });
    // Without the compaction's 900 the session would be at 200 of 1,000 input tokens: it waits before turn 3.
    s.followup(user('P3', 'short'));
    expect(outline(s.log).at(-1)).toBe('budget/exceeded 3.1 inputTokens');
    s.budget({ decision: 'deny' });
    expect(outline(s.log).at(-1)).toBe('turn/end 3 error');
  });
});

describe('the worker price table (AGENT_SESSIONS_MODEL_PRICES)', () => {
  it('is read as JSON; a bad one is refused naming the variable', () => {
    expect(
      loadConfig({
        AGENT_SESSIONS_MODEL_PRICES: '{"openai:gpt-4o-mini":{"inputPerMillion":0.15,"outputPerMillion":0.6}}',
      }).modelPrices,
    ).toEqual({ 'openai:gpt-4o-mini': { inputPerMillion: 0.15, outputPerMillion: 0.6 } });
    expect(() => loadConfig({ AGENT_SESSIONS_MODEL_PRICES: '{oops' })).toThrow(
      /^invalid configuration: AGENT_SESSIONS_MODEL_PRICES: not JSON/,
    );
    expect(() =>
      loadConfig({ AGENT_SESSIONS_MODEL_PRICES: '{"local":{"inputPerMillion":-1,"outputPerMillion":0}}' }),
    ).toThrow(/^invalid configuration: AGENT_SESSIONS_MODEL_PRICES: /);
  });
});
