/**
 * Real model providers over real HTTP, on the time-skipping server: the AI SDK adapters (`openai`, `anthropic`,
 * `openai-compatible`) talk to local fake servers that stream SSE. The worker is configured the way production
 * configures it: from environment variables (loadConfig → modelsFromConfig), with a default model.
 * Covered: a tool round trip per API format, usage on assistant/message, the default model, 429 (waited out in the
 * attempt) then 503 then success with Retry-After, retries spent on 5xx, 400 and 401 (non-retryable, readable
 * messages), a cancel in the middle of a stream (interrupted assistant/message with the visible prefix), and
 * malformed tool-call arguments.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { SessionEvent } from '../../src/domain/events';
import { loadConfig } from '../../src/worker/config';
import { modelsFromConfig } from '../../src/worker';
import { newId, settle, summarize, waitUntil } from '../support/sessionEnv';
import { FakeModelServer } from './fakeModelServer';
import { logUntil, ofType, startWorkerEnv, turnEnds, until, type WorkerEnv } from './support';

let oa: FakeModelServer;
let an: FakeModelServer;
let t: WorkerEnv;

beforeAll(async () => {
  oa = await FakeModelServer.start('openai');
  an = await FakeModelServer.start('anthropic');
  const config = loadConfig({
    OPENAI_API_KEY: 'sk-openai-test',
    OPENAI_BASE_URL: oa.url,
    ANTHROPIC_API_KEY: 'sk-ant-test',
    ANTHROPIC_BASE_URL: an.url,
    OPENAI_COMPATIBLE_BASE_URL: oa.url,
    OPENAI_COMPATIBLE_API_KEY: 'compat-key',
    AGENT_SESSIONS_DEFAULT_MODEL: 'openai-compatible:default-model',
  });
  t = await startWorkerEnv(modelsFromConfig(config));
});
afterAll(async () => {
  await t?.teardown();
  await oa?.close();
  await an?.close();
});
beforeEach(() => {
  oa.script();
  an.script();
});

/** The partial text in the heartbeat details of the session's running activity, if any. */
async function heartbeatText(id: string): Promise<string | undefined> {
  const description = await t.client.handle(id).describe();
  const data = description.raw.pendingActivities?.[0]?.heartbeatDetails?.payloads?.[0]?.data;
  if (!data) return undefined;
  return (JSON.parse(Buffer.from(data).toString('utf8')) as { partialText?: string }).partialText;
}

const compat = { provider: 'openai-compatible' as const, model: 'fake-model' };
const assistantTexts = (events: readonly SessionEvent[]) =>
  ofType(events, 'assistant/message').map((e) => e.data.message.content.map((b) => b.text).join(''));

describe('a tool round trip (the model calls echo, reads the result, answers)', () => {
  it('openai-compatible: tools from the registry, results mapped back, usage recorded', async () => {
    oa.script(
      {
        chunks: ['Let me ', 'check.'],
        toolCalls: [{ id: 'call_1', name: 'echo', arguments: '{"text":"hi there"}' }],
        usage: { input: 12, output: 7 },
      },
      { chunks: ['The tool said ', 'hi there.'], usage: { input: 30, output: 6 } },
    );
    const id = newId();
    await t.client.start(id, { model: compat, system: 'Be brief.', tools: ['echo'] });
    await t.client.followup(id, 'use the echo tool');
    const events = await settle(t.client, id);
    expect(summarize(events).slice(2)).toEqual([
      'claim next-turn 1',
      'step/start 1.1',
      'user/message use the echo tool',
      'assistant/message Let me check. +1 calls',
      'tool/call echo call_1',
      'tool/result call_1',
      'step/end 1.1',
      'step/start 1.2',
      'assistant/message The tool said hi there.',
      'step/end 1.2',
      'turn/end 1 completed',
    ]);
    const [first, second] = ofType(events, 'assistant/message');
    expect(first!.data.usage).toEqual({ inputTokens: 12, outputTokens: 7, totalTokens: 19 });
    expect(second!.data.usage).toEqual({ inputTokens: 30, outputTokens: 6, totalTokens: 36 });
    expect(ofType(events, 'tool/call')[0]!.data.arguments).toEqual({ text: 'hi there' });
    expect(ofType(events, 'tool/result')[0]!.data.content).toEqual([{ type: 'text', text: 'hi there' }]);

    // What went over the wire: the key from the worker's env, the system prompt, the tool's JSON schema, and in
    // the second request the assistant's call followed by the tool's result.
    const [r0, r1] = oa.requests;
    expect(r0!.path).toBe('/v1/chat/completions');
    expect(r0!.headers.authorization).toBe('Bearer compat-key');
    expect(r0!.body.model).toBe('fake-model');
    expect(r0!.body.stream).toBe(true);
    expect(r0!.body.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'use the echo tool' },
    ]);
    expect(r0!.body.tools).toEqual([
      {
        type: 'function',
        function: expect.objectContaining({
          name: 'echo',
          description: 'Returns its text argument unchanged.',
          parameters: expect.objectContaining({
            type: 'object',
            properties: { text: { type: 'string' } },
            required: ['text'],
          }),
        }),
      },
    ]);
    expect(r1!.body.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'use the echo tool' },
      {
        role: 'assistant',
        content: 'Let me check.',
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'echo', arguments: '{"text":"hi there"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'hi there' },
    ]);
  });

  it('anthropic: the messages API with tool_use / tool_result blocks', async () => {
    an.script(
      {
        toolCalls: [{ id: 'toolu_1', name: 'echo', arguments: '{"text":"ping"}' }],
        usage: { input: 20, output: 9 },
      },
      { chunks: ['Got ', 'ping.'], usage: { input: 40, output: 3 } },
    );
    const id = newId();
    await t.client.start(id, {
      model: { provider: 'anthropic', model: 'claude-fake' },
      system: 'Be brief.',
      tools: ['echo'],
    });
    await t.client.followup(id, 'ping me');
    const events = await settle(t.client, id);
    expect(assistantTexts(events)).toEqual(['', 'Got ping.']);
    expect(ofType(events, 'tool/call').map((e) => [e.data.callId, e.data.name, e.data.arguments])).toEqual([
      ['toolu_1', 'echo', { text: 'ping' }],
    ]);
    expect(ofType(events, 'assistant/message')[1]!.data.usage).toMatchObject({
      inputTokens: 40,
      outputTokens: 3,
    });
    expect(turnEnds(events)).toEqual([{ kind: 'completed' }]);

    const [r0, r1] = an.requests;
    expect(r0!.path).toBe('/v1/messages');
    expect(r0!.headers['x-api-key']).toBe('sk-ant-test');
    expect(r0!.body).toMatchObject({
      model: 'claude-fake',
      stream: true,
      system: [{ type: 'text', text: 'Be brief.' }],
    });
    expect(r0!.body.tools).toEqual([
      expect.objectContaining({ name: 'echo', input_schema: expect.objectContaining({ type: 'object' }) }),
    ]);
    expect(r1!.body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'ping me' }] },
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'toolu_1', name: 'echo', input: { text: 'ping' } }],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'ping' }] },
    ]);
  });

  it('openai: chat completions with the OPENAI_API_KEY of the worker', async () => {
    oa.script({ chunks: ['Hello ', 'from openai.'], usage: { input: 5, output: 4 } });
    const id = newId();
    await t.client.start(id, { model: { provider: 'openai', model: 'gpt-fake' } });
    await t.client.followup(id, 'hi');
    const events = await settle(t.client, id);
    expect(assistantTexts(events)).toEqual(['Hello from openai.']);
    expect(oa.requests[0]!.headers.authorization).toBe('Bearer sk-openai-test');
    expect(oa.requests[0]!.body.model).toBe('gpt-fake');
  });

  it('a session naming no model is answered by the worker default (AGENT_SESSIONS_DEFAULT_MODEL)', async () => {
    oa.script({ chunks: ['default here'] });
    const id = newId();
    await t.client.start(id);
    await t.client.followup(id, 'who answers?');
    const events = await settle(t.client, id);
    expect(assistantTexts(events)).toEqual(['default here']);
    expect(oa.requests[0]!.body.model).toBe('default-model');
  });
});

describe('failures: retried by Temporal, or not, and the turn ends error only after retries', () => {
  it('429 then 503 then success: Retry-After decides each wait, and the turn completes', async () => {
    oa.script(
      { status: 429, headers: { 'retry-after-ms': '50' } },
      { status: 503, headers: { 'retry-after': '3' } },
      { chunks: ['finally'] },
    );
    const id = newId();
    await t.client.start(id, { model: compat });
    await t.client.followup(id, 'go');
    // The 429 is waited out inside the first attempt (Retry-After plus jitter; rateLimits.test.ts), so the 503 ends
    // that attempt. The policy alone would then wait 1 s: the failure asks Temporal for the provider's delay instead.
    // While the second attempt waits, the server shows the 503's failure and the delay it asked for.
    const waiting = await waitUntil(
      async () => (await t.env.client.workflow.getHandle(id).describe()).raw.pendingActivities?.[0],
      (p) => p?.attempt === 2,
      'the second attempt',
    );
    expect(waiting?.lastFailure?.applicationFailureInfo?.type).toBe('ModelUnavailable');
    expect(Number(waiting?.lastFailure?.applicationFailureInfo?.nextRetryDelay?.seconds)).toBe(3);
    const events = await settle(t.client, id);
    expect(assistantTexts(events)).toEqual(['finally']);
    expect(turnEnds(events)).toEqual([{ kind: 'completed' }]);
    expect(oa.requests).toHaveLength(3);
  });

  it('5xx on every attempt: five attempts, then the turn ends error with the provider’s message', async () => {
    const fail = {
      status: 500,
      headers: { 'retry-after-ms': '10' },
      body: { error: { message: 'upstream exploded' } },
    };
    oa.script(fail, fail, fail, fail, fail, fail);
    const id = newId();
    await t.client.start(id, { model: compat });
    await t.client.followup(id, 'go');
    const events = await settle(t.client, id);
    expect(oa.requests).toHaveLength(5);
    expect(turnEnds(events)).toEqual([
      {
        kind: 'error',
        error: { code: 'MODEL_UNAVAILABLE', message: 'openai-compatible failed (500): upstream exploded' },
      },
    ]);
    expect(ofType(events, 'step/start')).toHaveLength(1);
    expect(ofType(events, 'assistant/message')).toHaveLength(0);
  });

  it('401: not retried; the turn ends error saying which key to check; the session serves the next message', async () => {
    oa.script({ status: 401 }, { chunks: ['fixed'] });
    const id = newId();
    await t.client.start(id, { model: compat });
    await t.client.followup(id, 'go');
    const events = await settle(t.client, id);
    expect(oa.requests).toHaveLength(1);
    expect(turnEnds(events)).toEqual([
      {
        kind: 'error',
        error: {
          code: 'MODEL_AUTH_FAILED',
          message:
            'OPENAI_COMPATIBLE_API_KEY was rejected (401): check the key (openai-compatible said: Incorrect API key provided)',
        },
      },
    ]);
    await t.client.followup(id, 'again');
    expect(turnEnds(await settle(t.client, id, 2))[1]).toEqual({ kind: 'completed' });
  });

  it('401 from anthropic names ANTHROPIC_API_KEY', async () => {
    an.script({ status: 401 });
    const id = newId();
    await t.client.start(id, { model: { provider: 'anthropic', model: 'claude-fake' } });
    await t.client.followup(id, 'go');
    const [reason] = turnEnds(await settle(t.client, id));
    expect(reason).toMatchObject({ kind: 'error', error: { code: 'MODEL_AUTH_FAILED' } });
    expect(reason!.kind === 'error' && reason!.error.message).toMatch(
      /^ANTHROPIC_API_KEY was rejected \(401\): check the key/,
    );
    expect(an.requests).toHaveLength(1);
  });

  it('400: not retried; the message is the provider’s', async () => {
    oa.script({ status: 400, body: { error: { message: "'messages' must contain at least one message" } } });
    const id = newId();
    await t.client.start(id, { model: compat });
    await t.client.followup(id, 'go');
    const [reason] = turnEnds(await settle(t.client, id));
    expect(reason).toEqual({
      kind: 'error',
      error: {
        code: 'MODEL_REQUEST_INVALID',
        message:
          "openai-compatible rejected the request (400): the request was refused as invalid (openai-compatible said: 'messages' must contain at least one message)",
      },
    });
    expect(oa.requests).toHaveLength(1);
  });
});

describe('streaming and cancellation', () => {
  it('a cancel in the middle of a stream keeps the visible prefix as an interrupted assistant/message', async () => {
    oa.script({ chunks: ['The answer ', 'is being ', 'written'], chunkDelayMs: 20, hold: true });
    const id = newId();
    await t.client.start(id, { model: compat });
    await t.client.followup(id, 'write slowly');
    await until(() => oa.streamed.length === 3, 'the server to stream three chunks');
    // The model activity heartbeats what is visible so far (Temporal keeps it as the activity's heartbeat details).
    await waitUntil(
      () => heartbeatText(id),
      (text) => text === 'The answer is being written',
      'the heartbeat to carry the partial text',
    );
    await t.client.cancel(id);
    const events = await settle(t.client, id);
    const assistant = ofType(events, 'assistant/message');
    expect(assistant).toHaveLength(1);
    expect(assistant[0]!.data.interrupted).toBe(true);
    expect(assistant[0]!.data.message.content).toEqual([
      { type: 'text', text: 'The answer is being written' },
    ]);
    expect(turnEnds(events)).toEqual([{ kind: 'aborted', reason: { kind: 'user' } }]);
    expect(summarize(events).slice(-3)).toEqual([
      'assistant/message The answer is being written',
      'step/end 1.1',
      'turn/end 1 aborted',
    ]);
    await until(() => oa.clientGone, 'the request to be aborted');
    expect(oa.requests).toHaveLength(1);
  });

  it('the anthropic stream is cancelled the same way', async () => {
    an.script({ chunks: ['Partial ', 'thought'], hold: true });
    const id = newId();
    await t.client.start(id, { model: { provider: 'anthropic', model: 'claude-fake' } });
    await t.client.followup(id, 'think');
    await until(() => an.streamed.length === 2, 'the server to stream two chunks');
    await t.client.cancel(id);
    const events = await logUntil(t.client, id, (e) => turnEnds(e).length === 1, 'turn 1 to end');
    expect(
      ofType(events, 'assistant/message').map((e) => [e.data.interrupted, e.data.message.content]),
    ).toEqual([[true, [{ type: 'text', text: 'Partial thought' }]]]);
  });
});

describe('malformed tool calls from the model', () => {
  it('arguments that are not JSON become a tool/result error the model reads; nothing crashes', async () => {
    oa.script(
      { toolCalls: [{ id: 'call_bad', name: 'echo', arguments: '{"text": "unterminated' }] },
      { chunks: ['Sorry, let me fix that.'] },
    );
    const id = newId();
    await t.client.start(id, { model: compat, tools: ['echo'] });
    await t.client.followup(id, 'call echo badly');
    const events = await settle(t.client, id);
    expect(turnEnds(events)).toEqual([{ kind: 'completed' }]);
    const call = ofType(events, 'tool/call')[0]!;
    expect(call.data.arguments).toBeNull();
    expect(call.data.rawArguments).toBe('{"text": "unterminated');
    const result = ofType(events, 'tool/result')[0]!;
    expect(result.data.error?.code).toBe('TOOL_INVALID_ARGUMENTS');
    expect(result.data.error?.message).toMatch(/^invalid arguments for echo: not a JSON object/);
    // The model's next request carries the error as the tool's answer.
    const toolMessage = (oa.requests[1]!.body.messages as { role: string; content: string }[]).find(
      (m) => m.role === 'tool',
    );
    expect(toolMessage?.content).toMatch(/invalid arguments for echo: not a JSON object/);
    expect(assistantTexts(events)).toEqual(['', 'Sorry, let me fix that.']);
  });

  it('a call to a tool the session does not have is answered TOOL_NOT_ALLOWED', async () => {
    oa.script({ toolCalls: [{ id: 'call_x', name: 'fail', arguments: '{}' }] }, { chunks: ['ok'] });
    const id = newId();
    await t.client.start(id, { model: compat, tools: ['echo'] });
    await t.client.followup(id, 'call a tool you do not have');
    const events = await settle(t.client, id);
    expect(ofType(events, 'tool/result')[0]!.data.error?.code).toBe('TOOL_NOT_ALLOWED');
    expect(turnEnds(events)).toEqual([{ kind: 'completed' }]);
  });
});
