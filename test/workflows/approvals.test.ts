/**
 * Tool approval on the time-skipping server (docs/protocol.md "Tool approval"): a call that needs a person's decision
 * waits durably — no activity, no polling — for the `approve` update, its timeout (a timer: a day takes
 * milliseconds here) or a cancel; a worker restart in between changes nothing; results still commit in call order.
 */
import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { inject } from 'vitest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, type ToolDefinition } from '../../src/activities/tools';
import { testingTools } from '../../src/activities/testingTools';
import { ApprovalRefusedError, SessionClient } from '../../src/client';
import type { SessionConfig } from '../../src/domain/wire';
import { createDevServerEnv } from '../../src/devserver';
import { createSessionWorker } from '../../src/worker';
import {
  newId,
  settle,
  startSessionTestEnvWithTools,
  summarize,
  userTexts,
  waitUntil,
  type SessionTestEnv,
} from '../support/sessionEnv';

/** `sessionId/callId` of the tool calls that really ran, in order. */
const ran: string[] = [];
const ranIn = (id: string) => ran.filter((r) => r.startsWith(`${id}/`)).map((r) => r.slice(id.length + 1));
const deploy = defineTool({
  name: 'deploy',
  description: 'Deploys the service to an environment.',
  input: z.object({ env: z.string() }),
  approval: 'always',
  execute: ({ env }, ctx) => {
    ran.push(`${ctx.sessionId}/${ctx.callId}`);
    return `deployed to ${env}`;
  },
});
const rm = defineTool({
  name: 'rm',
  description: 'Removes a path.',
  input: z.object({ path: z.string() }),
  approval: ({ path }) => path === '/',
  execute: ({ path }, ctx) => {
    ran.push(`${ctx.sessionId}/${ctx.callId}`);
    return `removed ${path}`;
  },
});
const TOOLS = [deploy, rm] as ToolDefinition[];

let t: SessionTestEnv;
beforeAll(async () => {
  t = await startSessionTestEnvWithTools(TOOLS);
});
afterAll(async () => {
  await t?.teardown();
});

type Step = NonNullable<Extract<SessionConfig['model'], { provider: 'scripted' }>['steps']>[number];
function config(steps: Step[], extra: Partial<SessionConfig> = {}): SessionConfig {
  return { model: { provider: 'scripted', steps }, tools: ['deploy', 'rm', 'echo'], ...extra };
}
const deployStep: Step = { toolCalls: [{ name: 'deploy', args: { env: 'prod' } }] };

async function pendingApprovals(s: SessionClient, id: string, count: number) {
  const state = await waitUntil(
    () => s.state(id),
    (st) => st.approvals.length === count,
    `${count} approval(s) pending in ${id}`,
  );
  return state.approvals;
}

describe('tool approval', () => {
  it('approve: the call waits, logged, then runs; the model reads its result', async () => {
    const s = t.sessions();
    const id = newId();
    await s.start(id, config([deployStep, { text: 'all done' }]));
    await s.followup(id, 'ship it');
    const [pending] = await pendingApprovals(s, id, 1);
    expect(pending).toMatchObject({ callId: 'call_0_0', name: 'deploy', arguments: { env: 'prod' } });
    expect(ranIn(id)).toEqual([]);

    expect(await s.approve(id, 'call_0_0', 'approve')).toEqual({
      callId: 'call_0_0',
      decision: 'approve',
      duplicate: false,
    });
    // The same decision again is a duplicate; nothing more is logged.
    expect(await s.approve(id, 'call_0_0', 'approve')).toMatchObject({ duplicate: true });
    const events = await settle(s, id);
    expect(summarize(events).slice(4)).toEqual([
      'user/message ship it',
      'assistant/message  +1 calls',
      'approval requested deploy call_0_0',
      'approval call_0_0 approve by caller',
      'tool/call deploy call_0_0',
      'tool/result call_0_0',
      'step/end 1.1',
      'step/start 1.2',
      'assistant/message all done',
      'step/end 1.2',
      'turn/end 1 completed',
    ]);
    expect(ranIn(id)).toEqual(['call_0_0']);
    expect(JSON.stringify(t.recorder.requests(id)[1]!.messages.at(-1))).toContain('deployed to prod');
  });

  it('deny: DENIED with the reason, which the model reads; a different decision later is refused naming the call', async () => {
    const s = t.sessions();
    const id = newId();
    await s.start(id, config([deployStep, { text: 'understood' }]));
    await s.followup(id, 'ship it');
    await pendingApprovals(s, id, 1);
    await s.approve(id, 'call_0_0', 'deny', 'freeze until Monday');
    const events = await settle(s, id);
    expect(summarize(events)).toEqual(
      expect.arrayContaining(['approval call_0_0 deny by caller', 'tool/result call_0_0 error DENIED']),
    );
    expect(JSON.stringify(t.recorder.requests(id)[1]!.messages.at(-1))).toContain('freeze until Monday');
    await expect(s.approve(id, 'call_0_0', 'approve')).rejects.toThrow(ApprovalRefusedError);
    await expect(s.approve(id, 'nope', 'approve')).rejects.toThrow(
      'call "nope" is not waiting for approval in this session',
    );
  });

  it('a 24-hour approval timeout fires (in milliseconds here) and answers APPROVAL_TIMEOUT', async () => {
    const s = t.sessions();
    const id = newId();
    const day = 24 * 3_600_000;
    await s.start(
      id,
      config([deployStep, { text: 'timed out' }], { approvals: { tools: [], timeoutMs: day } }),
    );
    await s.followup(id, 'ship it');
    await pendingApprovals(s, id, 1);
    await t.env.sleep('25 hours');
    const events = await settle(s, id);
    expect(summarize(events)).toEqual(
      expect.arrayContaining([
        'approval call_0_0 deny by timeout',
        'tool/result call_0_0 error APPROVAL_TIMEOUT',
      ]),
    );
    const history = await t.env.client.workflow.getHandle(id).fetchHistory();
    const timers = (history.events ?? []).filter((e) => e.timerStartedEventAttributes);
    expect(timers).toHaveLength(1);
    expect(Number(timers[0]!.timerStartedEventAttributes!.startToFireTimeout!.seconds)).toBe(day / 1000);
  });

  it('cancel while waiting aborts the call before dispatch and ends the turn aborted', async () => {
    const s = t.sessions();
    const id = newId();
    await s.start(id, config([deployStep]));
    await s.followup(id, 'ship it');
    await pendingApprovals(s, id, 1);
    await s.cancel(id);
    const events = await settle(s, id);
    expect(summarize(events).slice(-5)).toEqual([
      'approval call_0_0 deny by cancel',
      'tool/call deploy call_0_0',
      'tool/result call_0_0 error ABORTED_BEFORE_DISPATCH',
      'step/end 1.1',
      'turn/end 1 aborted',
    ]);
    expect((await s.state(id)).approvals).toEqual([]);
  });

  it('two pending approvals resolved in the opposite order; a predicate call that needs none runs at once', async () => {
    const s = t.sessions();
    const id = newId();
    await s.start(
      id,
      config([
        {
          toolCalls: [
            { name: 'deploy', args: { env: 'a' } },
            { name: 'rm', args: { path: '/tmp/cache' } },
            { name: 'rm', args: { path: '/' } },
          ],
        },
        { text: 'ok' },
      ]),
    );
    await s.followup(id, 'clean up and ship');
    const pending = await pendingApprovals(s, id, 2);
    expect(pending.map((p) => p.callId)).toEqual(['call_0_0', 'call_0_2']);
    await waitUntil(
      () => Promise.resolve(ranIn(id)),
      (r) => r.includes('call_0_1'),
      'the rm call that needs no approval to run',
    );
    await s.approve(id, 'call_0_2', 'approve');
    await waitUntil(
      () => Promise.resolve(ranIn(id)),
      (r) => r.includes('call_0_2'),
      'the approved rm call to run',
    );
    await s.approve(id, 'call_0_0', 'deny');
    const events = await settle(s, id);
    expect(ranIn(id)).toEqual(['call_0_1', 'call_0_2']);
    expect(summarize(events).filter((l) => l.startsWith('tool/result'))).toEqual([
      'tool/result call_0_0 error DENIED',
      'tool/result call_0_1',
      'tool/result call_0_2',
    ]);
  });

  it('a steer while a call waits enters at the next step; the call never runs without its decision; no continue-as-new meanwhile', async () => {
    const s = t.sessions();
    const id = newId();
    await s.start(id, config([deployStep, deployStep, { text: 'ok' }], { continueAsNewAfterEvents: 10 }));
    await s.followup(id, 'ship it');
    await pendingApprovals(s, id, 1);
    const runBefore = (await t.env.client.workflow.getHandle(id).describe()).runId;
    await s.steer(id, 'use staging instead');
    await s.inject(id, { content: 'release notes ready', source: { kind: 'plugin', plugin: 'ci' } });
    await waitUntil(
      () => s.state(id),
      (st) => st.pending.nextStep.length === 2,
      'the steer and the context pending',
    );
    expect((await s.state(id)).approvals.map((a) => a.callId)).toEqual(['call_0_0']);
    expect((await t.env.client.workflow.getHandle(id).describe()).runId).toBe(runBefore);
    await s.approve(id, 'call_0_0', 'deny', 'staging first');
    // The next step's deploy call waits for its own decision.
    await waitUntil(
      () => s.state(id),
      (st) => st.approvals[0]?.callId === 'call_1_0',
      "the next step's deploy call waiting for its own decision",
    );
    expect(userTexts(t.recorder.requests(id)[1]!).slice(-2)).toEqual([
      'use staging instead',
      'release notes ready',
    ]);
    expect(ranIn(id)).toEqual([]);
    await s.approve(id, 'call_1_0', 'approve');
    await settle(s, id);
    expect(ranIn(id)).toEqual(['call_1_0']);
  });
});

describe('tool approval across a worker restart', () => {
  // On the dev server: a worker that shuts down there gives up its sticky queue at once, as in production.
  let dev: TestWorkflowEnvironment | undefined;
  afterAll(async () => {
    await dev?.teardown();
  });

  it('the next worker replays the waiting session, takes the decision and runs the call once', async () => {
    dev = await createDevServerEnv();
    const env = dev;
    const taskQueue = `approvals-${randomUUID()}`;
    const s = new SessionClient({ client: env.client, taskQueue });
    const startWorker = async () => {
      const worker = await createSessionWorker({
        connection: env.nativeConnection,
        taskQueue,
        tools: [...testingTools, ...TOOLS],
        workflowBundle: { codePath: inject('workflowBundlePath') },
      });
      return { worker, running: worker.run() };
    };
    const first = await startWorker();
    const id = newId();
    await s.start(id, config([deployStep, { text: 'shipped' }]));
    await s.followup(id, 'ship it');
    await pendingApprovals(s, id, 1);
    first.worker.shutdown();
    await first.running;

    // A new worker (an empty cache) replays the session from its history and takes the decision.
    const second = await startWorker();
    try {
      expect(await s.approve(id, 'call_0_0', 'approve')).toMatchObject({
        callId: 'call_0_0',
        duplicate: false,
      });
      const events = await settle(s, id);
      expect(summarize(events).slice(-6)).toEqual([
        'tool/result call_0_0',
        'step/end 1.1',
        'step/start 1.2',
        'assistant/message shipped',
        'step/end 1.2',
        'turn/end 1 completed',
      ]);
      expect(ranIn(id)).toEqual(['call_0_0']);
    } finally {
      second.worker.shutdown();
      await second.running;
    }
  });
});
