/**
 * Worker hooks as the session's listeners, on the time-skipping server (semantics scenarios 6–10 and rule 19):
 * a function guard rejects (8), an HTTP hook is held by the test while messages arrive (6, 9), a command hook adds
 * a context message (7), a command hook fails with exit 1 (10); post-tool hooks of all three kinds add contexts
 * after the body's own, block a result (keeping only their own contexts), or fail and withhold the result.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commandHook, defineHook, httpHook } from '../../src/activities/hooks';
import type { SessionEvent } from '../../src/domain/events';
import { textOf, type TextBlock } from '../../src/domain/messages';
import type { ModelSpec, ScriptedStep } from '../../src/domain/wire';
import { newId, settle, summarize, userTexts } from '../support/sessionEnv';
import { logUntil, ofType, startWorkerEnv, turnEnds, type WorkerEnv } from '../providers/support';
import { HookServer } from './hookServer';

const fixtures = path.resolve(__dirname, '../fixtures/hooks');
const node = process.execPath;
const scripted = (...steps: ScriptedStep[]): ModelSpec => ({ provider: 'scripted', steps });
const batchTexts = (body: Record<string, unknown>) =>
  (body.batch as { content: TextBlock[] }[]).map((m) => textOf(m.content));
const entered = (events: readonly SessionEvent[]) =>
  ofType(events, 'user/message').map((e) => e.data.message);

let server: HookServer;
let t: WorkerEnv;

beforeAll(async () => {
  server = await HookServer.start();
  // The post-tool HTTP hook blocks emit_context and lets everything else through.
  server.auto = (p, body) => {
    if (p !== '/gate') return undefined;
    const call = body.call as { name: string };
    if (call.name !== 'emit_context') return { body: {} };
    return {
      body: {
        decision: 'block',
        feedback: 'emit_context is not allowed here',
        additionalContexts: [{ content: 'gate context' }],
      },
    };
  };
  t = await startWorkerEnv({
    hooks: [
      defineHook({
        name: 'guard',
        kind: 'pre-step',
        run: ({ batch }) =>
          batch.some((m) => textOf(m.content).includes('secret'))
            ? { decision: 'reject', reason: 'guard said no' }
            : {},
      }),
      defineHook({
        name: 'fn-ctx',
        kind: 'pre-step',
        run: ({ step }) => (step === 1 ? { messages: [{ content: 'fn context' }] } : {}),
      }),
      httpHook({ name: 'held', kind: 'pre-step', url: server.url('/held'), timeoutMs: 60_000 }),
      commandHook({ name: 'add-x', kind: 'pre-step', argv: [node, path.join(fixtures, 'add-context.js')] }),
      commandHook({ name: 'fail-p1', kind: 'pre-step', argv: [node, path.join(fixtures, 'fail-on-p1.js')] }),
      commandHook({
        name: 'note',
        kind: 'post-tool',
        argv: [node, path.join(fixtures, 'post-tool-note.js')],
      }),
      commandHook({
        name: 'garbage',
        kind: 'post-tool',
        argv: [node, path.join(fixtures, 'post-tool-note.js'), 'garbage'],
      }),
      httpHook({ name: 'gate', kind: 'post-tool', url: server.url('/gate') }),
      defineHook({
        name: 'fn-note',
        kind: 'post-tool',
        run: ({ call }) => ({ additionalContexts: [{ content: `fn saw ${call.name}` }] }),
      }),
    ],
  });
});
afterAll(async () => {
  await t?.teardown();
  await server?.close();
});

describe('pre-step hooks (scenarios 6–10)', () => {
  it('6: an inject while an HTTP pre-step hook is in flight is not in that batch; it enters at step 2 of the turn', async () => {
    const s = t.client;
    const id = newId();
    await s.start(id, { hooks: ['held'], model: scripted({ text: 'one' }, { text: 'two' }) });
    await s.followup(id, 'P');
    const first = await server.next();
    expect(first.body).toMatchObject({ event: 'pre-step', hook: 'held', sessionId: id, turn: 1, step: 1 });
    expect(batchTexts(first.body)).toEqual(['P']);
    await s.inject(id, { content: 'A', source: { kind: 'plugin', plugin: 'watcher' } });
    await logUntil(s, id, (e) => summarize(e).includes('insert next-step A'), 'A to be inserted');
    first.respond({ decision: 'enter' });
    const second = await server.next();
    expect(second.body).toMatchObject({ turn: 1, step: 2 });
    expect(batchTexts(second.body)).toEqual(['A']);
    second.respond({});
    const events = await settle(s, id);
    expect(summarize(events)).toEqual([
      'insert next-turn P',
      'turn/start 1',
      'claim next-turn 1',
      'insert next-step A',
      'step/start 1.1',
      'user/message P',
      'assistant/message one',
      'step/end 1.1',
      'claim next-step 1',
      'step/start 1.2',
      'user/message A',
      'assistant/message two',
      'step/end 1.2',
      'turn/end 1 completed',
    ]);
  });

  it('6: … and stays pending when the hook rejects', async () => {
    const s = t.client;
    const id = newId();
    await s.start(id, { hooks: ['held'] });
    await s.followup(id, 'P');
    const held = await server.next();
    const a = await s.inject(id, { content: 'A', source: { kind: 'plugin', plugin: 'watcher' } });
    await logUntil(s, id, (e) => summarize(e).includes('insert next-step A'), 'A to be inserted');
    held.respond({ decision: 'reject', reason: 'not now' });
    const events = await settle(s, id);
    expect(turnEnds(events)).toEqual([{ kind: 'blocked', message: 'not now' }]);
    expect(ofType(events, 'step/start')).toHaveLength(0);
    expect(await s.state(id)).toMatchObject({ status: 'idle', pending: { nextTurn: [], nextStep: [a] } });
  });

  it('7: a command hook enters with context X (its own source) after the batch; a function hook adds its own', async () => {
    const s = t.client;
    const id = newId();
    await s.start(id, { hooks: ['add-x', 'fn-ctx'] });
    await s.followup(id, 'P');
    const events = await settle(s, id);
    expect(summarize(events).slice(3, 7)).toEqual([
      'step/start 1.1',
      'user/message P',
      'user/message fn context',
      'user/message context X for turn 1',
    ]);
    expect(entered(events).map((m) => m.source)).toEqual([
      { kind: 'user' },
      { kind: 'hook', hook: 'fn-ctx' },
      { kind: 'plugin', plugin: 'x-provider' },
    ]);
    expect(userTexts(t.recorder.requests(id)[0]!)).toEqual(['P', 'fn context', 'context X for turn 1']);
  });

  it('8: followup(secret), followup(safe) with a function guard → turn 1 blocked, no step; safe runs after W in its own turn', async () => {
    const late = t.withoutWorkerYet();
    const s = late.client;
    const id = newId();
    await s.start(id, { hooks: ['guard'] });
    await s.followup(id, 'secret');
    const safe = await s.followup(id, 'safe');
    await late.startWorker();
    const first = await settle(s, id);
    expect(summarize(first)).toEqual([
      'insert next-turn secret',
      'insert next-turn safe',
      'turn/start 1',
      'claim next-turn 1',
      'turn/end 1 blocked',
    ]);
    expect(turnEnds(first)).toEqual([{ kind: 'blocked', message: 'guard said no' }]);
    expect(await s.state(id)).toMatchObject({ status: 'idle', pending: { nextTurn: [safe], nextStep: [] } });
    await s.followup(id, 'W');
    const events = await settle(s, id, 3);
    expect(turnEnds(events).map((r) => r.kind)).toEqual(['blocked', 'completed', 'completed']);
    expect(entered(events).map((m) => textOf(m.content))).toEqual(['safe', 'W']);
    expect(t.recorder.requests(id).map(userTexts)).toEqual([['safe'], ['safe', 'W']]);
  });

  it('9: inject A and steer S while the held hook runs, then reject → pending [A, S]; followup(W) enters [A, S, W]', async () => {
    const s = t.client;
    const id = newId();
    await s.start(id, { hooks: ['held'] });
    await s.followup(id, 'P');
    const held = await server.next();
    const a = await s.inject(id, { content: 'A', source: { kind: 'plugin', plugin: 'watcher' } });
    const st = await s.steer(id, 'S');
    await logUntil(s, id, (e) => summarize(e).includes('insert next-step S'), 'S to be inserted');
    held.respond({ decision: 'reject', reason: 'not P' });
    const first = await settle(s, id);
    expect(turnEnds(first)).toEqual([{ kind: 'blocked', message: 'not P' }]);
    expect(await s.state(id)).toMatchObject({ status: 'idle', pending: { nextTurn: [], nextStep: [a, st] } });
    await s.followup(id, 'W');
    const again = await server.next();
    expect(again.body).toMatchObject({ turn: 2, step: 1 });
    expect(batchTexts(again.body)).toEqual(['A', 'S', 'W']);
    again.respond({ decision: 'enter' });
    const events = await settle(s, id, 2);
    expect(entered(events).map((m) => textOf(m.content))).toEqual(['A', 'S', 'W']);
    expect(turnEnds(events)[1]).toEqual({ kind: 'completed' });
  });

  it('10: a command hook that exits 1 with P1, P2 queued → turn 1 error after its retries, no step; P2 runs after W', async () => {
    const late = t.withoutWorkerYet();
    const s = late.client;
    const id = newId();
    await s.start(id, { hooks: ['fail-p1'] });
    const p1 = await s.followup(id, 'P1');
    const p2 = await s.followup(id, 'P2');
    await late.startWorker();
    const first = await settle(s, id);
    expect(summarize(first)).toEqual([
      'insert next-turn P1',
      'insert next-turn P2',
      'turn/start 1',
      'claim next-turn 1',
      'turn/end 1 error',
    ]);
    const [reason] = turnEnds(first);
    expect(reason).toMatchObject({ kind: 'error', error: { code: 'HOOK_FAILED' } });
    expect(reason!.kind === 'error' && reason!.error.message).toMatch(
      /^pre-step hook "fail-p1" \(command .+\) failed: exited with code 1: refusing P1$/,
    );
    const state = await s.state(id);
    expect(state).toMatchObject({ status: 'idle', turn: 1, pending: { nextTurn: [p2], nextStep: [] } });
    expect(state.pending.nextTurn).not.toContain(p1);
    await s.followup(id, 'W');
    const events = await settle(s, id, 3);
    expect(turnEnds(events).map((r) => r.kind)).toEqual(['error', 'completed', 'completed']);
    expect(entered(events).map((m) => textOf(m.content))).toEqual(['P2', 'W']);
    // The hook activity was tried three times (its retry policy) before the turn ended.
    const history = await s.handle(id).fetchHistory();
    const hookStarts = (history.events ?? []).filter(
      (e) => e.activityTaskStartedEventAttributes?.attempt === 3,
    );
    expect(hookStarts.length).toBeGreaterThanOrEqual(1);
  });
});

describe('post-tool hooks (rule 19)', () => {
  it('the body’s deferred context comes first, then each hook’s, in the session’s hook order', async () => {
    const s = t.client;
    const id = newId();
    await s.start(id, {
      tools: ['sleep'],
      hooks: ['note', 'fn-note'],
      model: scripted(
        { toolCalls: [{ name: 'sleep', args: { ms: 5, context: 'body ctx' } }] },
        { text: 'done' },
      ),
    });
    await s.followup(id, 'go');
    const events = await settle(s, id);
    const callId = ofType(events, 'tool/call')[0]!.data.callId;
    expect(summarize(events).slice(6, 16)).toEqual([
      'tool/call sleep call_0_0',
      'tool/result call_0_0',
      'insert next-step body ctx',
      'insert next-step note: sleep said slept 5 ms',
      'insert next-step fn saw sleep',
      'step/end 1.1',
      'claim next-step 3',
      'step/start 1.2',
      'user/message body ctx',
      'user/message note: sleep said slept 5 ms',
    ]);
    expect(
      entered(events)
        .slice(1)
        .map((m) => m.source),
    ).toEqual([
      { kind: 'tool', callId },
      { kind: 'hook', hook: 'note', callId },
      { kind: 'hook', hook: 'fn-note', callId },
    ]);
  });

  it('a cancel during the batch: started calls commit their real results through the hook, their contexts after them; the rest never start (rule 29)', async () => {
    const s = t.client;
    const id = newId();
    const held = (context: string) => ({ name: 'sleep', args: { ms: 30_000, graceful: true, context } });
    await s.start(id, {
      tools: ['sleep', 'echo'],
      hooks: ['fn-note'],
      maxParallelToolCalls: 2,
      model: scripted({ toolCalls: [held('ctx-1'), held('ctx-2'), { name: 'echo', args: { text: '3' } }] }),
    });
    await s.followup(id, 'go');
    await logUntil(s, id, (e) => ofType(e, 'tool/call').length === 2, 'two started calls');
    await s.cancel(id);
    const events = await settle(s, id);
    const tail = summarize(events.slice(events.findIndex((e) => e.type === 'tool/call')));
    expect(tail).toEqual([
      'tool/call sleep call_0_0',
      'tool/call sleep call_0_1',
      'tool/result call_0_0',
      'insert next-step ctx-1',
      'insert next-step fn saw sleep',
      'tool/result call_0_1',
      'insert next-step ctx-2',
      'insert next-step fn saw sleep',
      'tool/call echo call_0_2',
      'tool/result call_0_2 error ABORTED_BEFORE_DISPATCH',
      'step/end 1.1',
      'turn/end 1 aborted',
    ]);
    // The real results of the cancelled calls, not ABORTED errors.
    expect(ofType(events, 'tool/result').map((e) => [textOf(e.data.content), e.data.error?.code])).toEqual([
      ['sleep of 30000 ms cancelled', undefined],
      ['sleep of 30000 ms cancelled', undefined],
      ['error: the turn was cancelled before this call started', 'ABORTED_BEFORE_DISPATCH'],
    ]);
    // The contexts stay parked in next-step and enter with the next waking message, after the results.
    await s.followup(id, 'again');
    await settle(s, id, 2);
    expect(userTexts(t.recorder.requests(id)[1]!).slice(-5)).toEqual([
      'ctx-1',
      'fn saw sleep',
      'ctx-2',
      'fn saw sleep',
      'again',
    ]);
  });

  it('an HTTP hook that blocks replaces the result with its feedback and keeps only its own context', async () => {
    const s = t.client;
    const id = newId();
    await s.start(id, {
      tools: ['emit_context'],
      hooks: ['note', 'gate'],
      model: scripted(
        { toolCalls: [{ name: 'emit_context', args: { contexts: [{ content: 'body ctx' }] } }] },
        { text: 'ok' },
      ),
    });
    await s.followup(id, 'go');
    const events = await settle(s, id);
    const result = ofType(events, 'tool/result')[0]!.data;
    expect(result.content).toEqual([{ type: 'text', text: 'emit_context is not allowed here' }]);
    expect(result.error).toEqual({ code: 'TOOL_BLOCKED', message: 'blocked by hook gate' });
    expect(entered(events).map((m) => [textOf(m.content), m.source])).toEqual([
      ['go', { kind: 'user' }],
      ['gate context', { kind: 'hook', hook: 'gate', callId: result.callId }],
    ]);
    const toolEntry = t.recorder.requests(id)[1]!.messages.find((m) => m.role === 'tool');
    expect(toolEntry?.content).toEqual([{ type: 'text', text: 'emit_context is not allowed here' }]);
    const gateCall = server.seen.find((r) => r.path === '/gate' && (r.body.sessionId as string) === id);
    expect(gateCall?.body).toMatchObject({
      event: 'post-tool',
      hook: 'gate',
      call: { name: 'emit_context', arguments: { contexts: [{ content: 'body ctx' }] } },
      result: { content: [{ type: 'text', text: 'emitted 1 context' }] },
    });
  });

  it('a hook that answers garbage withholds the result: the model reads POST_TOOL_HOOK_FAILED; the turn goes on', async () => {
    const s = t.client;
    const id = newId();
    await s.start(id, {
      tools: ['echo'],
      hooks: ['garbage'],
      model: scripted({ toolCalls: [{ name: 'echo', args: { text: 'secret data' } }] }, { text: 'ok' }),
    });
    await s.followup(id, 'go');
    const events = await settle(s, id);
    const result = ofType(events, 'tool/result')[0]!.data;
    expect(result.error?.code).toBe('POST_TOOL_HOOK_FAILED');
    expect(result.error?.message).toMatch(
      /^post-tool hook "garbage" \(command .+\) failed: answer is not JSON: this is not json$/,
    );
    expect(JSON.stringify(result.content)).not.toContain('secret data');
    expect(turnEnds(events)).toEqual([{ kind: 'completed' }]);
  });
});
