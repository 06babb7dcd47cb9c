/**
 * The tool API users write against (`defineTool`), on the time-skipping server: the JSON schema the model sees,
 * invalid arguments as a readable tool/result error, and each part of the tool context — the abort signal with
 * heartbeats, deferContext, inject/steer into its own session, concludeTurn — plus exclusive tools as barriers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, ToolRegistry } from '../../src/activities/tools';
import type { SessionEvent } from '../../src/domain/events';
import { textOf } from '../../src/domain/messages';
import type { ModelSpec, ScriptedStep } from '../../src/domain/wire';
import { testingTools } from '../../src/activities/testingTools';
import { newId, settle, summarize } from '../support/sessionEnv';
import { logUntil, ofType, startWorkerEnv, turnEnds, type WorkerEnv } from '../providers/support';

const scripted = (...steps: ScriptedStep[]): ModelSpec => ({ provider: 'scripted', steps });

const waitForCancel = defineTool({
  name: 'wait_for_cancel',
  description: 'Heartbeats until the call is cancelled, then says so.',
  input: z.object({}),
  async execute(_args, ctx) {
    while (!ctx.signal.aborted) {
      ctx.heartbeat({ waiting: true });
      await new Promise((r) => setTimeout(r, 50));
    }
    return 'saw the cancel';
  },
});

const strictArgs = defineTool({
  name: 'strict_args',
  description: 'Takes a positive count and a mode.',
  input: z.object({ count: z.number().int().min(1), mode: z.enum(['a', 'b']).default('a') }),
  execute: ({ count, mode }) => `${count} ${mode}`,
});

const deferrer = defineTool({
  name: 'deferrer',
  description: 'Defers two contexts onto its own result.',
  input: z.object({}),
  execute(_args, ctx) {
    ctx.deferContext('first deferred');
    ctx.deferContext([{ type: 'text', text: 'second deferred' }], { kind: 'plugin', plugin: 'indexer' });
    return 'deferred two';
  },
});

const barrier = defineTool({
  name: 'barrier',
  description: 'Runs alone.',
  input: z.object({}),
  exclusive: true,
  execute: () => 'alone',
});

let t: WorkerEnv;
beforeAll(async () => {
  t = await startWorkerEnv({ tools: [...testingTools, waitForCancel, strictArgs, deferrer, barrier] });
});
afterAll(async () => {
  await t?.teardown();
});

const index = (events: readonly SessionEvent[], line: string) => {
  const i = summarize(events).indexOf(line);
  if (i < 0) throw new Error(`${line} not in the log`);
  return i;
};

describe('defineTool', () => {
  it('derives the JSON schema the model sees from the zod input (defaults optional); refuses non-object inputs', () => {
    const registry = new ToolRegistry([strictArgs]);
    expect(registry.spec('strict_args')).toEqual({
      name: 'strict_args',
      description: 'Takes a positive count and a mode.',
      inputSchema: {
        type: 'object',
        properties: {
          count: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
          mode: { type: 'string', enum: ['a', 'b'], default: 'a' },
        },
        required: ['count'],
      },
    });
    expect(() => defineTool({ name: 'bad', description: '', input: z.string(), execute: () => '' })).toThrow(
      'input must be a zod object schema',
    );
    expect(() =>
      defineTool({ name: 'bad name', description: '', input: z.object({}), execute: () => '' }),
    ).toThrow(/letters, digits/);
  });

  it('invalid arguments become a tool/result error naming the field, which the model reads; nothing runs', async () => {
    const id = newId();
    await t.client.start(id, {
      tools: ['strict_args'],
      model: scripted({ toolCalls: [{ name: 'strict_args', args: { count: 0 } }] }, { text: 'ok' }),
    });
    await t.client.followup(id, 'go');
    const events = await settle(t.client, id);
    const result = ofType(events, 'tool/result')[0]!.data;
    expect(result.error?.code).toBe('TOOL_INVALID_ARGUMENTS');
    expect(result.error?.message).toMatch(/^invalid arguments for strict_args: count: /);
    expect(t.recorder.requests(id)[1]!.messages.find((m) => m.role === 'tool')).toMatchObject({
      error: { code: 'TOOL_INVALID_ARGUMENTS' },
    });
    expect(turnEnds(events)).toEqual([{ kind: 'completed' }]);
  });
});

describe('the tool context', () => {
  it('signal + heartbeat: a cancel reaches a heartbeating tool, which returns; its result still commits', async () => {
    const id = newId();
    await t.client.start(id, {
      tools: ['wait_for_cancel'],
      model: scripted({ toolCalls: [{ name: 'wait_for_cancel', args: {} }] }),
    });
    await t.client.followup(id, 'go');
    await logUntil(t.client, id, (e) => ofType(e, 'tool/call').length === 1, 'the tool to start');
    await t.client.cancel(id);
    const events = await settle(t.client, id);
    expect(ofType(events, 'tool/result')[0]!.data.content).toEqual([
      { type: 'text', text: 'saw the cancel' },
    ]);
    expect(turnEnds(events)).toEqual([{ kind: 'aborted', reason: { kind: 'user' } }]);
  });

  it('deferContext: contexts follow the result, in order, each with its source (default: the call)', async () => {
    const id = newId();
    await t.client.start(id, {
      tools: ['deferrer'],
      model: scripted({ toolCalls: [{ name: 'deferrer', args: {} }] }, { text: 'ok' }),
    });
    await t.client.followup(id, 'go');
    const events = await settle(t.client, id);
    const callId = ofType(events, 'tool/call')[0]!.data.callId;
    expect(index(events, `tool/result ${callId}`)).toBeLessThan(
      index(events, 'insert next-step first deferred'),
    );
    expect(
      ofType(events, 'user/message')
        .slice(1)
        .map((e) => [textOf(e.data.message.content), e.data.message.source]),
    ).toEqual([
      ['first deferred', { kind: 'tool', callId }],
      ['second deferred', { kind: 'plugin', plugin: 'indexer' }],
    ]);
  });

  it('inject and steer into the tool’s own session: both enter at the next step with the call as source', async () => {
    const id = newId();
    await t.client.start(id, {
      tools: ['inject_self', 'steer_self'],
      maxParallelToolCalls: 1,
      model: scripted(
        {
          toolCalls: [
            { name: 'inject_self', args: { content: 'injected by the tool' } },
            { name: 'steer_self', args: { content: 'steered by the tool' } },
          ],
        },
        { text: 'ok' },
      ),
    });
    await t.client.followup(id, 'go');
    const events = await settle(t.client, id);
    const [c0, c1] = ofType(events, 'tool/call').map((e) => e.data.callId);
    expect(summarize(events).slice(summarize(events).indexOf('step/end 1.1'))).toEqual([
      'step/end 1.1',
      'claim next-step 2',
      'step/start 1.2',
      'user/message injected by the tool',
      'user/message steered by the tool',
      'assistant/message ok',
      'step/end 1.2',
      'turn/end 1 completed',
    ]);
    expect(
      ofType(events, 'user/message')
        .slice(1)
        .map((e) => e.data.message.source),
    ).toEqual([
      { kind: 'tool', callId: c0 },
      { kind: 'tool', callId: c1 },
    ]);
  });

  it('concludeTurn: the turn ends after the step, with no request for the tool result', async () => {
    const id = newId();
    await t.client.start(id, {
      tools: ['conclude'],
      model: scripted({ toolCalls: [{ name: 'conclude', args: { text: 'all done' } }] }),
    });
    await t.client.followup(id, 'go');
    const events = await settle(t.client, id);
    expect(turnEnds(events)).toEqual([{ kind: 'completed' }]);
    expect(ofType(events, 'step/start')).toHaveLength(1);
    expect(t.recorder.requests(id)).toHaveLength(1);
  });
});

describe('exclusive tools are barriers', () => {
  it('the exclusive call starts after every earlier result and before any later call; others run in parallel', async () => {
    const id = newId();
    await t.client.start(id, {
      tools: ['sleep', 'echo', 'barrier'],
      model: scripted(
        {
          toolCalls: [
            { name: 'sleep', args: { ms: 300 } },
            { name: 'echo', args: { text: 'before' } },
            { name: 'barrier', args: {} },
            { name: 'echo', args: { text: 'after' } },
            { name: 'sleep', args: { ms: 50 } },
          ],
        },
        { text: 'ok' },
      ),
    });
    await t.client.followup(id, 'go');
    const events = await settle(t.client, id);
    const ids = ofType(events, 'tool/call').map((e) => e.data.callId);
    expect(ofType(events, 'tool/call').map((e) => e.data.name)).toEqual([
      'sleep',
      'echo',
      'barrier',
      'echo',
      'sleep',
    ]);
    const at = (type: 'tool/call' | 'tool/result', i: number) =>
      events.findIndex((e) => e.type === type && e.data.callId === ids[i]);
    const call = (i: number) => at('tool/call', i);
    const result = (i: number) => at('tool/result', i);
    // Before the barrier: both calls start before either result (parallel).
    expect(call(1)).toBeLessThan(result(0));
    // The barrier starts after both earlier results and runs alone.
    expect(call(2)).toBeGreaterThan(result(0));
    expect(call(2)).toBeGreaterThan(result(1));
    expect(call(3)).toBeGreaterThan(result(2));
    // After it, the calls run in parallel again.
    expect(call(4)).toBeLessThan(result(3));
    expect(turnEnds(events)).toEqual([{ kind: 'completed' }]);
  });
});
