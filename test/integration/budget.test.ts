/**
 * Budgets on the dev server (docs/protocol.md "Budgets"): a session pauses before the model step that would pass its
 * budget, durably, and a person decides from the CLI; a deny ends the turn BUDGET_EXCEEDED; a decision that cannot
 * apply is refused naming why; a worker restart while it waits changes nothing; a model call retried after a failed
 * attempt counts once.
 */
import { randomUUID } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ModelProvider } from '../../src/activities/model';
import { BudgetRefusedError, InvalidInputError, SessionClient } from '../../src/client';
import { FailureTypes } from '../../src/contract';
import { testingTools } from '../../src/activities/testingTools';
import { createSessionWorker } from '../../src/worker';
import { assertBuilt, cli, cliEnv } from '../cli/cliSupport';
import {
  newId,
  settle,
  startSessionTestEnv,
  summarize,
  waitUntil,
  type SessionTestEnv,
} from '../support/sessionEnv';

let t: SessionTestEnv;
beforeAll(async () => {
  t = await startSessionTestEnv('dev');
});
afterAll(async () => {
  await t?.teardown();
});

const twoToolRounds = {
  provider: 'scripted' as const,
  steps: [
    { toolCalls: [{ name: 'echo', args: { text: 'a' } }], usage: { inputTokens: 120, outputTokens: 8 } },
    { toolCalls: [{ name: 'echo', args: { text: 'b' } }], usage: { inputTokens: 180, outputTokens: 8 } },
    { text: 'all done', usage: { inputTokens: 240, outputTokens: 4 } },
  ],
};

describe('a budget that pauses and asks', () => {
  it('waits before the step that would pass it; a person extends it from the CLI and the turn goes on', async () => {
    assertBuilt();
    const s = t.sessions();
    const id = newId('budget');
    await s.start(id, { tools: ['echo'], model: twoToolRounds, budget: { modelCalls: 2 } });
    await s.followup(id, 'research this');
    const paused = await waitUntil(
      () => s.state(id),
      (st) => st.budget?.paused !== undefined,
      'the session to wait at its budget',
    );
    expect(paused.budget).toEqual({
      limits: { modelCalls: 2 },
      used: { modelCalls: 2, toolCalls: 2, inputTokens: 300, outputTokens: 16, costMicros: 0 },
      remaining: { modelCalls: 0 },
      paused: { turn: 1, step: 3 },
    });
    expect(paused.status).toBe('running');

    const env = cliEnv({ TEMPORAL_ADDRESS: t.env.address, TASK_QUEUE: t.taskQueue });
    const shown = await cli(['state', id], env);
    expect(shown.stdout).toContain(
      `budget: modelCalls 2/2 — waiting before step 1.3: agent-sessions budget ${id} extend|deny`,
    );
    const tooLow = await cli(['budget', id, 'extend', '--model-calls', '2'], env);
    expect(tooLow.code).toBe(2);
    expect(tooLow.stderr).toContain(
      'limits.modelCalls: 2 does not let the step run (used 2; give at least 3)',
    );
    const extended = await cli(['budget', id, 'extend', '--model-calls', '10', '--reason', 'worth it'], env);
    expect(extended).toMatchObject({
      code: 0,
      stdout: `budget of session ${id} extended: {"modelCalls":10}\n`,
    });

    const events = await settle(s, id);
    expect(summarize(events).slice(-7)).toEqual([
      'step/end 1.2',
      'budget/exceeded modelCalls',
      'budget/resolved extend by caller',
      'step/start 1.3',
      'assistant/message all done',
      'step/end 1.3',
      'turn/end 1 completed',
    ]);
    expect((await s.state(id)).budget?.used).toEqual({
      modelCalls: 3,
      toolCalls: 2,
      inputTokens: 540,
      outputTokens: 20,
      costMicros: 0,
    });
    // Nothing waits now: another decision is refused, saying so.
    await expect(s.budget(id, { decision: 'deny' })).rejects.toBeInstanceOf(BudgetRefusedError);
  });

  it('deny ends the turn BUDGET_EXCEEDED; bad decisions name the field', async () => {
    const s = t.sessions();
    const id = newId('budget-deny');
    await s.start(id, { tools: ['echo'], model: twoToolRounds, budget: { inputTokens: 100 } });
    await s.followup(id, 'research this');
    await waitUntil(
      () => s.state(id),
      (st) => st.budget?.paused !== undefined,
      'the pause',
    );
    const bad = await s
      .budget(id, { decision: 'extend', limits: { inputTokens: 0 } })
      .catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(InvalidInputError);
    expect((bad as InvalidInputError).field).toBe('budget.limits.inputTokens');
    await expect(s.budget(id, { decision: 'deny', reason: 'over the limit for today' })).resolves.toEqual({
      decision: 'deny',
      limits: { inputTokens: 100 },
    });
    const events = await settle(s, id);
    const end = events.at(-1);
    expect(end?.type === 'turn/end' && end.data.reason).toEqual({
      kind: 'error',
      error: { code: 'BUDGET_EXCEEDED', message: 'budget exceeded before step 2: inputTokens 120 of 100' },
    });
    expect(events.filter((e) => e.type === 'assistant/message')).toHaveLength(1);
  });
});

/** Answers with usage; the first attempt of each request fails retryably, as a dropped connection does. */
const flaky: ModelProvider = {
  name: 'openai-compatible',
  async step() {
    if (Context.current().info.attempt === 1)
      throw ApplicationFailure.create({ type: FailureTypes.ModelUnavailable, message: 'connection reset' });
    return { text: 'answer', toolCalls: [], finish: 'stop', usage: { inputTokens: 100, outputTokens: 10 } };
  },
};

describe('a budget across failures', () => {
  it('waits through a worker restart; a retried model call counts once', async () => {
    const taskQueue = `budget-restart-${randomUUID()}`;
    const start = async (): Promise<{ worker: Worker; running: Promise<void> }> => {
      const worker = await createSessionWorker({
        connection: t.env.nativeConnection,
        taskQueue,
        providers: { 'openai-compatible': flaky },
        workflowBundle: { codePath: inject('workflowBundlePath') },
      });
      return { worker, running: worker.run() };
    };
    let w = await start();
    const s = new SessionClient({ client: t.env.client, taskQueue });
    const id = newId('budget-restart');
    await s.start(id, { model: { provider: 'openai-compatible', model: 'm' }, budget: { modelCalls: 1 } });
    await s.followup(id, 'one');
    await settle(s, id);
    // Two attempts, one committed answer: the ledger counts the answer.
    expect((await s.state(id)).budget?.used).toEqual({
      modelCalls: 1,
      toolCalls: 0,
      inputTokens: 100,
      outputTokens: 10,
      costMicros: 0,
    });
    await s.followup(id, 'two');
    await waitUntil(
      () => s.state(id),
      (st) => st.budget?.paused !== undefined,
      'the pause',
    );

    // The worker goes away and another takes over while the session waits: the wait is durable.
    w.worker.shutdown();
    await w.running;
    w = await start();
    try {
      expect((await s.state(id)).budget?.paused).toEqual({ turn: 2, step: 1 });
      await s.budget(id, { decision: 'extend', limits: { modelCalls: 2 } });
      const events = await settle(s, id, 2);
      expect(events.filter((e) => e.type === 'assistant/message')).toHaveLength(2);
      expect(events.filter((e) => e.type === 'budget/exceeded')).toHaveLength(1);
      expect((await s.state(id)).budget?.used.modelCalls).toBe(2);
    } finally {
      w.worker.shutdown();
      await w.running;
    }
  });
});

describe('a budget in money', () => {
  it("prices each answer by the worker's table and waits when the cost reaches the limit", async () => {
    const taskQueue = `budget-prices-${randomUUID()}`;
    const worker = await createSessionWorker({
      connection: t.env.nativeConnection,
      taskQueue,
      tools: testingTools,
      // 1 unit per million input tokens, 2 per million output tokens: 120 in + 8 out cost 136 micro-units.
      modelPrices: { scripted: { inputPerMillion: 1, outputPerMillion: 2 } },
      workflowBundle: { codePath: inject('workflowBundlePath') },
    });
    const running = worker.run();
    try {
      const s = new SessionClient({ client: t.env.client, taskQueue });
      const id = newId('budget-cost');
      await s.start(id, { tools: ['echo'], model: twoToolRounds, budget: { costMicros: 300 } });
      await s.followup(id, 'research this');
      const paused = await waitUntil(
        () => s.state(id),
        (st) => st.budget?.paused !== undefined,
        'the pause',
      );
      // 136 + 196 = 332 ≥ 300 after two answers: the third waits.
      expect(paused.budget?.used.costMicros).toBe(332);
      const events = await s.allEvents(id);
      const costs = events.flatMap((e) => (e.type === 'assistant/message' ? [e.data.usage?.costMicros] : []));
      expect(costs).toEqual([136, 196]);
      await s.budget(id, { decision: 'deny' });
      await settle(s, id);
    } finally {
      worker.shutdown();
      await running;
    }
  });
});
