/**
 * Semantics D and E on the time-skipping server: steps, tool batches and their contexts, late input during a step,
 * follow-ups during a turn, tool errors, model failures and turn endings. Scenarios 4, 5, 11, 12, 13, 15 of
 * docs/semantics.md and rules 18–21, 24, 26 and the wire rules on session tools.
 *
 * Input "during a model call" is timed by the scripted model's `delayMs` and sent once the scripted model has
 * recorded the request (the activity is running); input "during tools" is sent once `tool/call` is in the log
 * while a `sleep` call holds the batch open. No fixed sleeps.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from '../../src/activities/tools';
import type { SessionEvent } from '../../src/domain/events';
import type { ModelSpec, ScriptedStep, SessionConfig } from '../../src/domain/wire';
import {
  newId,
  settle,
  startSessionTestEnvWithTools,
  summarize,
  userTexts,
  waitUntil,
  type SessionTestEnv,
} from '../support/sessionEnv';

/** Finish order of `slow_context` calls, as `<session>/<callId>` (the worker runs in this process). */
const finished: string[] = [];

/** Test-only tool: sleeps `ms`, then returns one additional context. Lets a slow call carry a context (scenario 12). */
const slowContextTool = defineTool({
  name: 'slow_context',
  description: 'Sleeps ms, then returns `content` as additional context.',
  input: z.object({ ms: z.number().int().min(0).max(5000), content: z.string().min(1) }),
  async execute({ ms, content }, ctx) {
    await ctx.sleep(ms);
    finished.push(`${ctx.sessionId}/${ctx.callId}`);
    return { content: `slept ${ms} ms`, additionalContexts: [{ content }] };
  },
});

let t: SessionTestEnv;
beforeAll(async () => {
  t = await startSessionTestEnvWithTools([slowContextTool]);
});
afterAll(async () => {
  await t?.teardown();
});

const scripted = (...steps: ScriptedStep[]): ModelSpec => ({ provider: 'scripted', steps });
const call = (name: string, args: Record<string, unknown> = {}) => ({ name, args });
const plugin = (name: string) => ({ kind: 'plugin', plugin: name });

/** Starts a session with `config` and sends follow-up `P`. */
async function startWith(config: SessionConfig, first = 'P'): Promise<string> {
  const s = t.sessions();
  const id = newId();
  await s.start(id, config);
  await s.followup(id, first);
  return id;
}

/** Waits until the scripted model has received `n` requests (the n-th model activity is running or done). */
const modelRequests = (id: string, n: number) =>
  waitUntil(
    async () => t.recorder.requests(id).length,
    (k) => k >= n,
    `${n} model request(s) of ${id}`,
  );

const logged = (id: string, line: string) =>
  waitUntil(
    () => t.sessions().allEvents(id),
    (events) => summarize(events).includes(line),
    `"${line}" in the log of ${id}`,
  );

const turnEnds = (events: readonly SessionEvent[]) =>
  events.flatMap((e) => (e.type === 'turn/end' ? [e.data.reason] : []));
const toolResults = (events: readonly SessionEvent[]) =>
  events.flatMap((e) => (e.type === 'tool/result' ? [e.data] : []));

describe('input during a step (scenarios 4, 5, 13, 15)', () => {
  it('4: an inject during a model call enters at step 2 of the same turn', async () => {
    const id = await startWith({ model: scripted({ text: 'thinking', delayMs: 1000 }) });
    await modelRequests(id, 1);
    await t.sessions().inject(id, { content: 'A', source: plugin('watcher') });
    const events = await settle(t.sessions(), id);
    expect(summarize(events)).toEqual([
      'insert next-turn P',
      'turn/start 1',
      'claim next-turn 1',
      'step/start 1.1',
      'user/message P',
      'insert next-step A',
      'assistant/message thinking',
      'step/end 1.1',
      'claim next-step 1',
      'step/start 1.2',
      'user/message A',
      'assistant/message echo: A',
      'step/end 1.2',
      'turn/end 1 completed',
    ]);
    const [r0, r1, ...rest] = t.recorder.requests(id);
    expect(rest).toHaveLength(0);
    expect(userTexts(r0!)).toEqual(['P']);
    expect(r1!.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(userTexts(r1!)).toEqual(['P', 'A']);
    expect(r1!.messages[2]).toMatchObject({ role: 'user', source: plugin('watcher') });
    expect(await t.sessions().state(id)).toMatchObject({
      status: 'idle',
      turn: 1,
      pending: { nextTurn: [], nextStep: [] },
    });
  });

  it('5: an inject from inside a tool body enters after the tool result, in the log and in R[1]', async () => {
    const id = await startWith({
      model: scripted({ toolCalls: [call('inject_self', { content: 'A' })] }),
      tools: ['inject_self'],
    });
    const events = await settle(t.sessions(), id);
    expect(summarize(events)).toEqual([
      'insert next-turn P',
      'turn/start 1',
      'claim next-turn 1',
      'step/start 1.1',
      'user/message P',
      'assistant/message  +1 calls',
      'tool/call inject_self call_0_0',
      'insert next-step A',
      'tool/result call_0_0',
      'step/end 1.1',
      'claim next-step 1',
      'step/start 1.2',
      'user/message A',
      'assistant/message echo: A',
      'step/end 1.2',
      'turn/end 1 completed',
    ]);
    const entered = events.flatMap((e) => (e.type === 'user/message' ? [e.data.message] : []));
    // A tool's message into its own session: id derived from the call, source naming the call (rule 2).
    expect(entered[1]).toMatchObject({
      id: 'call_0_0:inject:0',
      source: { kind: 'tool', callId: 'call_0_0' },
    });
    const r1 = t.recorder.requests(id)[1]!;
    expect(r1.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'user']);
    expect(r1.messages[2]).toMatchObject({
      role: 'tool',
      callId: 'call_0_0',
      content: [{ type: 'text', text: 'injected' }],
    });
    expect(r1.messages[3]).toMatchObject({ role: 'user', content: [{ type: 'text', text: 'A' }] });
  });

  it('13: a steer during a batch of three tool calls lets all three run and commit, then enters at step 2', async () => {
    const id = await startWith({
      model: scripted({
        toolCalls: [
          call('sleep', { ms: 1000 }),
          call('echo', { text: 'two' }),
          call('echo', { text: 'three' }),
        ],
      }),
      tools: ['sleep', 'echo'],
    });
    await logged(id, 'tool/call echo call_0_2');
    await t.sessions().steer(id, 'S');
    const events = await settle(t.sessions(), id);
    expect(summarize(events)).toEqual([
      'insert next-turn P',
      'turn/start 1',
      'claim next-turn 1',
      'step/start 1.1',
      'user/message P',
      'assistant/message  +3 calls',
      'tool/call sleep call_0_0',
      'tool/call echo call_0_1',
      'tool/call echo call_0_2',
      'insert next-step S',
      'tool/result call_0_0',
      'tool/result call_0_1',
      'tool/result call_0_2',
      'step/end 1.1',
      'claim next-step 1',
      'step/start 1.2',
      'user/message S',
      'assistant/message echo: S',
      'step/end 1.2',
      'turn/end 1 completed',
    ]);
    expect(toolResults(events).map((r) => [r.callId, r.content, r.error])).toEqual([
      ['call_0_0', [{ type: 'text', text: 'slept 1000 ms' }], undefined],
      ['call_0_1', [{ type: 'text', text: 'two' }], undefined],
      ['call_0_2', [{ type: 'text', text: 'three' }], undefined],
    ]);
    const r1 = t.recorder.requests(id)[1]!;
    expect(r1.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool', 'tool', 'user']);
    expect(userTexts(r1)).toEqual(['P', 'S']);
  });

  it('15: a follow-up during turn 1 starts turn 2 after turn/end 1, and turn 2 sees turn 1’s answer before Q', async () => {
    const id = await startWith({ model: scripted({ text: 'answer 1', delayMs: 1000 }) });
    await modelRequests(id, 1);
    await t.sessions().followup(id, 'Q');
    const events = await settle(t.sessions(), id, 2);
    expect(summarize(events)).toEqual([
      'insert next-turn P',
      'turn/start 1',
      'claim next-turn 1',
      'step/start 1.1',
      'user/message P',
      'insert next-turn Q',
      'assistant/message answer 1',
      'step/end 1.1',
      'turn/end 1 completed',
      'turn/start 2',
      'claim next-turn 1',
      'step/start 2.1',
      'user/message Q',
      'assistant/message echo: Q',
      'step/end 2.1',
      'turn/end 2 completed',
    ]);
    const r1 = t.recorder.requests(id)[1]!;
    expect(r1.turn).toBe(2);
    expect(r1.messages.map((m) => [m.role, m.content])).toEqual([
      ['user', [{ type: 'text', text: 'P' }]],
      ['assistant', [{ type: 'text', text: 'answer 1' }]],
      ['user', [{ type: 'text', text: 'Q' }]],
    ]);
  });
});

describe('tool results and their contexts (scenarios 11, 12; rules 18, 19)', () => {
  it('11: two calls with a context each: both results, step/end, then both contexts at step 2', async () => {
    const id = await startWith({
      model: scripted({
        toolCalls: [
          call('emit_context', { contexts: [{ content: 'ctx-c1' }] }),
          call('emit_context', { contexts: [{ content: 'ctx-c2', source: plugin('c2-plugin') }] }),
        ],
      }),
      tools: ['emit_context'],
    });
    const events = await settle(t.sessions(), id);
    expect(summarize(events)).toEqual([
      'insert next-turn P',
      'turn/start 1',
      'claim next-turn 1',
      'step/start 1.1',
      'user/message P',
      'assistant/message  +2 calls',
      'tool/call emit_context call_0_0',
      'tool/call emit_context call_0_1',
      'tool/result call_0_0',
      'insert next-step ctx-c1',
      'tool/result call_0_1',
      'insert next-step ctx-c2',
      'step/end 1.1',
      'claim next-step 2',
      'step/start 1.2',
      'user/message ctx-c1',
      'user/message ctx-c2',
      'assistant/message echo: ctx-c2',
      'step/end 1.2',
      'turn/end 1 completed',
    ]);
    // Each context keeps its own source: the call by default, the producer when the tool names one.
    const inserted = events.flatMap((e) =>
      e.type === 'agent/inbox/spliced' && e.data.target === 'next-step' ? e.data.inserted : [],
    );
    expect(inserted.map((m) => m.source)).toEqual([
      { kind: 'tool', callId: 'call_0_0' },
      plugin('c2-plugin'),
    ]);
    const entered = events.flatMap((e) => (e.type === 'user/message' ? [e.data.message] : []));
    expect(entered.slice(1)).toEqual(inserted);
    const r1 = t.recorder.requests(id)[1]!;
    expect(r1.messages.map((m) => (m.role === 'tool' ? `tool ${m.callId}` : m.role))).toEqual([
      'user',
      'assistant',
      'tool call_0_0',
      'tool call_0_1',
      'user',
      'user',
    ]);
    expect(userTexts(r1)).toEqual(['P', 'ctx-c1', 'ctx-c2']);
  });

  it('12: parallel calls where c2 finishes first commit c1, c2 and their contexts ctx-c1, ctx-c2', async () => {
    const id = await startWith({
      model: scripted({
        toolCalls: [
          call('slow_context', { ms: 1000, content: 'ctx-c1' }),
          call('slow_context', { ms: 0, content: 'ctx-c2' }),
        ],
      }),
      tools: ['slow_context'],
    });
    // c2 has finished while c1 still sleeps: nothing of the batch is committed yet.
    await waitUntil(
      async () => finished,
      (f) => f.includes(`${id}/call_0_1`),
      'c2 to finish',
    );
    expect(finished.filter((f) => f.startsWith(`${id}/`))).toEqual([`${id}/call_0_1`]);
    const during = summarize(await t.sessions().allEvents(id));
    expect(during.slice(-2)).toEqual(['tool/call slow_context call_0_0', 'tool/call slow_context call_0_1']);
    const events = await settle(t.sessions(), id);
    expect(finished.filter((f) => f.startsWith(`${id}/`))).toEqual([`${id}/call_0_1`, `${id}/call_0_0`]);
    expect(summarize(events)).toEqual([
      'insert next-turn P',
      'turn/start 1',
      'claim next-turn 1',
      'step/start 1.1',
      'user/message P',
      'assistant/message  +2 calls',
      'tool/call slow_context call_0_0',
      'tool/call slow_context call_0_1',
      'tool/result call_0_0',
      'insert next-step ctx-c1',
      'tool/result call_0_1',
      'insert next-step ctx-c2',
      'step/end 1.1',
      'claim next-step 2',
      'step/start 1.2',
      'user/message ctx-c1',
      'user/message ctx-c2',
      'assistant/message echo: ctx-c2',
      'step/end 1.2',
      'turn/end 1 completed',
    ]);
    expect(userTexts(t.recorder.requests(id)[1]!)).toEqual(['P', 'ctx-c1', 'ctx-c2']);
  });

  it('12b: with c1 = sleep and c2 = emit_context, results still commit c1 then c2, and ctx-c2 enters at step 2', async () => {
    const id = await startWith({
      model: scripted({
        toolCalls: [call('sleep', { ms: 800 }), call('emit_context', { contexts: [{ content: 'ctx-c2' }] })],
      }),
      tools: ['sleep', 'emit_context'],
    });
    const events = await settle(t.sessions(), id);
    expect(summarize(events).slice(5)).toEqual([
      'assistant/message  +2 calls',
      'tool/call sleep call_0_0',
      'tool/call emit_context call_0_1',
      'tool/result call_0_0',
      'tool/result call_0_1',
      'insert next-step ctx-c2',
      'step/end 1.1',
      'claim next-step 1',
      'step/start 1.2',
      'user/message ctx-c2',
      'assistant/message echo: ctx-c2',
      'step/end 1.2',
      'turn/end 1 completed',
    ]);
  });

  it('maxParallelToolCalls = 1 runs the calls one at a time, in call order', async () => {
    const id = await startWith({
      model: scripted({
        toolCalls: [call('sleep', { ms: 50 }), call('echo', { text: 'b' }), call('sleep', { ms: 0 })],
      }),
      tools: ['sleep', 'echo'],
      maxParallelToolCalls: 1,
    });
    const events = await settle(t.sessions(), id);
    expect(summarize(events).slice(5)).toEqual([
      'assistant/message  +3 calls',
      'tool/call sleep call_0_0',
      'tool/result call_0_0',
      'tool/call echo call_0_1',
      'tool/result call_0_1',
      'tool/call sleep call_0_2',
      'tool/result call_0_2',
      'step/end 1.1',
      'step/start 1.2',
      'assistant/message echo: P',
      'step/end 1.2',
      'turn/end 1 completed',
    ]);
  });
});

describe('tool errors are results the model reads (wire, rule 18)', () => {
  it('a call to a tool outside the session’s tools gets TOOL_NOT_ALLOWED, and the model sees it', async () => {
    const id = await startWith({
      model: scripted({
        toolCalls: [call('echo', { text: 'ok' }), call('sleep', { ms: 1 }), call('no_such_tool')],
      }),
      tools: ['echo'],
    });
    const events = await settle(t.sessions(), id);
    expect(summarize(events).slice(5)).toEqual([
      'assistant/message  +3 calls',
      'tool/call echo call_0_0',
      'tool/call sleep call_0_1',
      'tool/call no_such_tool call_0_2',
      'tool/result call_0_0',
      'tool/result call_0_1 error TOOL_NOT_ALLOWED',
      'tool/result call_0_2 error TOOL_NOT_ALLOWED',
      'step/end 1.1',
      'step/start 1.2',
      'assistant/message echo: P',
      'step/end 1.2',
      'turn/end 1 completed',
    ]);
    const errors = toolResults(events).map((r) => r.error);
    expect(errors[1]?.message).toMatch(/"sleep"/);
    expect(errors[2]?.message).toMatch(/"no_such_tool"/);
    const [r0, r1] = t.recorder.requests(id);
    expect(r0!.tools).toEqual(['echo']);
    expect(r1!.messages.filter((m) => m.role === 'tool')).toEqual([
      { role: 'tool', callId: 'call_0_0', name: 'echo', content: [{ type: 'text', text: 'ok' }] },
      {
        role: 'tool',
        callId: 'call_0_1',
        name: 'sleep',
        content: [{ type: 'text', text: `error: ${errors[1]!.message}` }],
        error: errors[1],
      },
      {
        role: 'tool',
        callId: 'call_0_2',
        name: 'no_such_tool',
        content: [{ type: 'text', text: `error: ${errors[2]!.message}` }],
        error: errors[2],
      },
    ]);
  });

  it('invalid tool arguments give TOOL_INVALID_ARGUMENTS naming the argument', async () => {
    const id = await startWith({
      model: scripted({ toolCalls: [call('echo', { text: 42 })] }),
      tools: ['echo'],
    });
    const events = await settle(t.sessions(), id);
    expect(summarize(events).slice(6, 8)).toEqual([
      'tool/call echo call_0_0',
      'tool/result call_0_0 error TOOL_INVALID_ARGUMENTS',
    ]);
    expect(toolResults(events)[0]!.error!.message).toMatch(/text/);
    expect(turnEnds(events)).toEqual([{ kind: 'completed' }]);
    expect(t.recorder.requests(id)[1]!.messages.find((m) => m.role === 'tool')).toMatchObject({
      error: { code: 'TOOL_INVALID_ARGUMENTS' },
    });
  });

  it('the fail tool gives TOOL_FAILED with its message, and the turn continues', async () => {
    const id = await startWith({
      model: scripted({ toolCalls: [call('fail', { message: 'boom' })] }),
      tools: ['fail'],
    });
    const events = await settle(t.sessions(), id);
    expect(summarize(events).slice(5)).toEqual([
      'assistant/message  +1 calls',
      'tool/call fail call_0_0',
      'tool/result call_0_0 error TOOL_FAILED',
      'step/end 1.1',
      'step/start 1.2',
      'assistant/message echo: P',
      'step/end 1.2',
      'turn/end 1 completed',
    ]);
    expect(toolResults(events)[0]!.error).toEqual({ code: 'TOOL_FAILED', message: 'boom' });
    expect(t.recorder.requests(id)[1]!.messages.find((m) => m.role === 'tool')).toMatchObject({
      content: [{ type: 'text', text: 'error: boom' }],
      error: { code: 'TOOL_FAILED', message: 'boom' },
    });
  });

  it('a session naming an unregistered tool ends turn 1 in error naming the tool, with no step and no model call; then it disposes itself', async () => {
    const s = t.sessions();
    const id = await startWith({ tools: ['echo', 'no_such_tool'] });
    await waitUntil(
      () => s.state(id),
      (state) => state.status === 'disposed',
      'the refused session to dispose itself',
    );
    const events = await settle(s, id);
    expect(summarize(events)).toEqual([
      'insert next-turn P',
      'turn/start 1',
      'claim next-turn 1',
      'turn/end 1 error',
      'session/disposed',
    ]);
    const [reason] = turnEnds(events);
    expect(reason).toMatchObject({ kind: 'error', error: { code: 'UNKNOWN_TOOL' } });
    expect(reason!.kind === 'error' && reason!.error.message).toMatch(/"no_such_tool"/);
    expect(reason!.kind === 'error' && reason!.error.message).not.toMatch(/"echo"/);
    expect(t.recorder.requests(id)).toHaveLength(0);
    expect(await s.state(id)).toMatchObject({
      status: 'disposed',
      turn: 1,
      pending: { nextTurn: [], nextStep: [] },
    });
  });
});

describe('how turns end (rules 21, 24, 26)', () => {
  it('a scripted model failure ends the turn in error; the session serves the next follow-up', async () => {
    const s = t.sessions();
    const id = await startWith({ model: scripted({ fail: 'model broke' }) });
    const first = await settle(s, id);
    expect(summarize(first)).toEqual([
      'insert next-turn P',
      'turn/start 1',
      'claim next-turn 1',
      'step/start 1.1',
      'user/message P',
      'step/end 1.1',
      'turn/end 1 error',
    ]);
    expect(turnEnds(first)).toEqual([
      { kind: 'error', error: { code: 'SCRIPTED_FAILURE', message: 'model broke' } },
    ]);
    await s.followup(id, 'Q');
    const events = await settle(s, id, 2);
    expect(summarize(events).slice(first.length)).toEqual([
      'insert next-turn Q',
      'turn/start 2',
      'claim next-turn 1',
      'step/start 2.1',
      'user/message Q',
      'assistant/message echo: Q',
      'step/end 2.1',
      'turn/end 2 completed',
    ]);
    expect(t.recorder.requests(id).map(userTexts)).toEqual([['P'], ['P', 'Q']]);
  });

  it("finish: 'max-tokens' ends the turn max-tokens", async () => {
    const id = await startWith({ model: scripted({ text: 'partial', finish: 'max-tokens' }) });
    const events = await settle(t.sessions(), id);
    expect(summarize(events).slice(3)).toEqual([
      'step/start 1.1',
      'user/message P',
      'assistant/message partial',
      'step/end 1.1',
      'turn/end 1 max-tokens',
    ]);
    expect(t.recorder.requests(id)).toHaveLength(1);
  });

  it('21: conclude ends the turn after its step when next-step is empty (no request for the tool result)', async () => {
    const id = await startWith({
      model: scripted({ text: 'wrapping up', toolCalls: [call('conclude', { text: 'done' })] }),
      tools: ['conclude'],
    });
    const events = await settle(t.sessions(), id);
    expect(summarize(events).slice(3)).toEqual([
      'step/start 1.1',
      'user/message P',
      'assistant/message wrapping up +1 calls',
      'tool/call conclude call_0_0',
      'tool/result call_0_0',
      'step/end 1.1',
      'turn/end 1 completed',
    ]);
    expect(t.recorder.requests(id)).toHaveLength(1);
  });

  it('21: conclude does not end the turn while next-step has work after the step’s commits', async () => {
    const id = await startWith({
      model: scripted({
        toolCalls: [call('conclude'), call('emit_context', { contexts: [{ content: 'late ctx' }] })],
      }),
      tools: ['conclude', 'emit_context'],
    });
    const events = await settle(t.sessions(), id);
    expect(summarize(events).slice(5)).toEqual([
      'assistant/message  +2 calls',
      'tool/call conclude call_0_0',
      'tool/call emit_context call_0_1',
      'tool/result call_0_0',
      'tool/result call_0_1',
      'insert next-step late ctx',
      'step/end 1.1',
      'claim next-step 1',
      'step/start 1.2',
      'user/message late ctx',
      'assistant/message echo: late ctx',
      'step/end 1.2',
      'turn/end 1 completed',
    ]);
    expect(t.recorder.requests(id)).toHaveLength(2);
  });
});
