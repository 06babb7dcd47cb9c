/**
 * Provider plumbing without a server: transcript ↔ AI SDK message mapping, tool-call mapping (malformed arguments
 * kept as raw text), failure classification (retryable or not, Retry-After, messages naming the variable to fix),
 * rate-limit waits (delays, jitter, the bound and the deadline), model references and the worker's provider
 * configuration from the environment.
 */
import { ApplicationFailure } from '@temporalio/common';
import { APICallError } from 'ai';
import { describe, expect, it } from 'vitest';
import {
  fromSdkToolCall,
  modelFailure,
  retryAfterMs,
  toModelMessages,
  toToolSet,
} from '../../src/activities/providers';
import type { TranscriptEntry } from '../../src/domain/transcript';
import { parseModelRef } from '../../src/domain/wire';
import { modelsFromConfig } from '../../src/worker';
import { ENV_VARS, loadConfig } from '../../src/worker/config';
import { attemptDeadline, rateLimitWaiter } from '../../src/activities/waits';

const text = (t: string) => [{ type: 'text' as const, text: t }];

describe('toModelMessages', () => {
  it('maps users, assistant text with calls, and tool results (merged per answer, errors as error-text)', () => {
    const entries: TranscriptEntry[] = [
      { role: 'user', id: 'u1', content: text('hi'), source: { kind: 'user' } },
      { role: 'user', id: 'c1', content: text('ctx'), source: { kind: 'plugin', plugin: 'p' } },
      {
        role: 'assistant',
        id: 'a1',
        content: text('calling'),
        toolCalls: [
          { callId: 'k1', name: 'echo', arguments: { text: 'x' } },
          { callId: 'k2', name: 'fail', arguments: {} },
        ],
      },
      { role: 'tool', callId: 'k1', name: 'echo', content: text('x') },
      {
        role: 'tool',
        callId: 'k2',
        name: 'fail',
        content: text('error: boom'),
        error: { code: 'TOOL_FAILED', message: 'boom' },
      },
      { role: 'assistant', id: 'a2', content: [] },
      { role: 'assistant', id: 'a3', content: text('partial'), interrupted: true },
    ];
    expect(toModelMessages(entries)).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'hi' }] },
      { role: 'user', content: [{ type: 'text', text: 'ctx' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'calling' },
          { type: 'tool-call', toolCallId: 'k1', toolName: 'echo', input: { text: 'x' } },
          { type: 'tool-call', toolCallId: 'k2', toolName: 'fail', input: {} },
        ],
      },
      {
        role: 'tool',
        content: [
          { type: 'tool-result', toolCallId: 'k1', toolName: 'echo', output: { type: 'text', value: 'x' } },
          {
            type: 'tool-result',
            toolCallId: 'k2',
            toolName: 'fail',
            output: { type: 'error-text', value: 'error: boom' },
          },
        ],
      },
      { role: 'assistant', content: [{ type: 'text', text: 'partial' }] },
    ]);
  });

  it('gives the SDK schema-only tools (no execute), or none', () => {
    expect(toToolSet([])).toBeUndefined();
    const set = toToolSet([
      { name: 'echo', description: 'd', inputSchema: { type: 'object', properties: {} } },
    ])!;
    expect(Object.keys(set)).toEqual(['echo']);
    expect(set.echo!.execute).toBeUndefined();
  });
});

describe('fromSdkToolCall', () => {
  it('keeps object arguments; anything else becomes arguments: null with the raw text in rawArguments', () => {
    expect(fromSdkToolCall({ toolCallId: 'c', toolName: 'echo', input: { text: 'a' } })).toEqual({
      callId: 'c',
      name: 'echo',
      arguments: { text: 'a' },
    });
    expect(fromSdkToolCall({ toolCallId: 'c', toolName: 'echo', input: '{"text": ', invalid: true })).toEqual(
      {
        callId: 'c',
        name: 'echo',
        arguments: null,
        rawArguments: '{"text": ',
      },
    );
    expect(fromSdkToolCall({ toolCallId: 'c', toolName: 'echo', input: [1, 2] })).toMatchObject({
      arguments: null,
      rawArguments: '[1,2]',
    });
  });
});

const apiError = (
  statusCode: number | undefined,
  opts: { headers?: Record<string, string>; body?: string } = {},
) =>
  new APICallError({
    message: statusCode ? `HTTP ${statusCode}` : 'Cannot connect to API: connect ECONNREFUSED 127.0.0.1:1',
    url: 'http://127.0.0.1:1/v1/chat/completions',
    requestBodyValues: {},
    ...(statusCode ? { statusCode } : {}),
    ...(opts.headers ? { responseHeaders: opts.headers } : {}),
    ...(opts.body ? { responseBody: opts.body } : {}),
  });
const openai = { provider: 'openai', keyVar: 'OPENAI_API_KEY', baseUrlVar: 'OPENAI_BASE_URL' };

describe('modelFailure', () => {
  it('401 / 403: not retryable, naming the key variable', () => {
    const f401 = modelFailure(
      apiError(401, { body: '{"error":{"message":"Incorrect API key provided"}}' }),
      openai,
      'gpt-x',
    );
    expect([f401.type, f401.nonRetryable, f401.message]).toEqual([
      'ModelAuthFailed',
      true,
      'OPENAI_API_KEY was rejected (401): check the key (openai said: Incorrect API key provided)',
    ]);
    expect(modelFailure(apiError(403), openai, 'gpt-x').message).toMatch(
      /^OPENAI_API_KEY was rejected \(403\): check that the key may use model "gpt-x"/,
    );
  });

  it('429 and 5xx: retryable, with Retry-After as the next delay', () => {
    const rate = modelFailure(apiError(429, { headers: { 'retry-after': '2' } }), openai, 'm');
    expect([rate.type, rate.nonRetryable, rate.nextRetryDelay]).toEqual(['ModelRateLimited', false, 2000]);
    const down = modelFailure(apiError(503), openai, 'm');
    expect([down.type, down.nonRetryable, down.nextRetryDelay]).toEqual([
      'ModelUnavailable',
      false,
      undefined,
    ]);
    expect(modelFailure(apiError(408), openai, 'm').nonRetryable).toBe(false);
  });

  it('other 4xx: not retryable; 404 points at the model name and base URL', () => {
    const nf = modelFailure(apiError(404), openai, 'gpt-nope');
    expect([nf.type, nf.nonRetryable]).toEqual(['ModelRequestInvalid', true]);
    expect(nf.message).toMatch(
      /^openai rejected the request \(404\): check the model name "gpt-nope" and OPENAI_BASE_URL/,
    );
    expect(modelFailure(apiError(422), openai, 'm').nonRetryable).toBe(true);
  });

  it('no answer at all (connection refused, reset) and timeouts: retryable', () => {
    const refused = modelFailure(apiError(undefined), openai, 'm');
    expect([refused.type, refused.nonRetryable]).toEqual(['ModelUnavailable', false]);
    expect(refused.message).toMatch(
      /^cannot reach openai at http:\/\/127\.0\.0\.1:1\/v1\/chat\/completions \(check OPENAI_BASE_URL\)/,
    );
    const timeout = modelFailure(
      new DOMException('Chunk timeout of 5ms exceeded', 'TimeoutError'),
      openai,
      'm',
    );
    expect([timeout.type, timeout.nonRetryable]).toEqual(['ModelTimeout', false]);
    const cut = modelFailure(new TypeError('terminated'), openai, 'm');
    expect([cut.type, cut.nonRetryable]).toEqual(['ModelUnavailable', false]);
  });

  it('passes named failures through unchanged', () => {
    const named = ApplicationFailure.create({ type: 'X', message: 'y', nonRetryable: true });
    expect(modelFailure(named, openai, 'm')).toBe(named);
  });
});

describe('retryAfterMs', () => {
  it('reads retry-after-ms, seconds and HTTP dates; ignores nonsense and asks over ten minutes', () => {
    expect(retryAfterMs({ 'retry-after-ms': '250' })).toBe(250);
    expect(retryAfterMs({ 'retry-after': '3' })).toBe(3000);
    expect(retryAfterMs({ 'Retry-After': '1' })).toBe(1000);
    expect(retryAfterMs({ 'retry-after': '0' })).toBe(1);
    const now = Date.parse('2030-01-01T00:00:00Z');
    expect(retryAfterMs({ 'retry-after': 'Tue, 01 Jan 2030 00:00:05 GMT' }, now)).toBe(5000);
    expect(retryAfterMs({ 'retry-after': 'soon' })).toBeUndefined();
    expect(retryAfterMs({ 'retry-after': '-1' })).toBeUndefined();
    expect(retryAfterMs({ 'retry-after': '3600' })).toBeUndefined();
    expect(retryAfterMs(undefined)).toBeUndefined();
  });
});

describe('rateLimitWaiter', () => {
  const limited = (delay?: number) =>
    ApplicationFailure.create({
      type: 'ModelRateLimited',
      message: 'p rate-limited the request (429)',
      ...(delay !== undefined ? { nextRetryDelay: delay } : {}),
    });

  it('waits Retry-After plus up to half of it (at least 0.5 s) of jitter; without one, a doubling backoff', async () => {
    const slept: number[] = [];
    const sleep = async (ms: number) => void slept.push(ms);
    const top = rateLimitWaiter({ maxWaitMs: 600_000, reserveMs: 0, sleep, random: () => 0.999 });
    await top(limited(10_000));
    await top(limited(200));
    const none = rateLimitWaiter({ maxWaitMs: 600_000, reserveMs: 0, sleep, random: () => 0 });
    for (let i = 0; i < 7; i++) await none(limited());
    expect(slept).toEqual([14_995, 700, 1000, 2000, 4000, 8000, 16_000, 30_000, 30_000]);
  });

  it('past the bound or the deadline the 429 is final, saying why; with a bound of 0 it fails the attempt', async () => {
    const sleep = async () => {};
    const bounded = rateLimitWaiter({ maxWaitMs: 3000, reserveMs: 0, sleep, random: () => 0 });
    await bounded(limited(2000));
    const final = await bounded(limited(2000)).catch((e: unknown) => e as ApplicationFailure);
    expect(final).toMatchObject({ type: 'ModelRateLimited', nonRetryable: true });
    expect((final as ApplicationFailure).message).toBe(
      "p rate-limited the request (429); still rate-limited after waiting 2 s in 1 wait(s), and the next wait (2 s) would pass the worker's bound of 3 s (AGENT_SESSIONS_MODEL_RATE_LIMIT_WAIT_MS)",
    );
    let clock = 0;
    const late = rateLimitWaiter({
      maxWaitMs: 600_000,
      deadlineAt: 10_000,
      reserveMs: 5000,
      sleep: async (ms) => void (clock += ms),
      random: () => 0,
      now: () => clock,
    });
    await late(limited(5000));
    await expect(late(limited(5000))).rejects.toThrow(/would pass the model call's deadline$/);
    const off = limited(1000);
    await expect(rateLimitWaiter({ maxWaitMs: 0, reserveMs: 0, sleep })(off)).rejects.toBe(off);
  });

  it('the attempt deadline is the nearer of start-to-close from now and schedule-to-close', () => {
    const info = {
      startToCloseTimeoutMs: 600_000,
      scheduleToCloseTimeoutMs: 3_600_000,
      scheduledTimestampMs: 0,
    };
    expect(attemptDeadline(info, 1000)).toBe(601_000);
    expect(attemptDeadline(info, 3_300_000)).toBe(3_600_000);
    expect(
      attemptDeadline({ ...info, startToCloseTimeoutMs: 0, scheduleToCloseTimeoutMs: 0 }, 5),
    ).toBeUndefined();
  });
});

describe('model references and provider configuration', () => {
  it('parses provider:model and scripted; refuses anything else saying the form', () => {
    expect(parseModelRef('openai:gpt-4o-mini')).toEqual({ provider: 'openai', model: 'gpt-4o-mini' });
    expect(parseModelRef('openai-compatible:llama3.1:8b')).toEqual({
      provider: 'openai-compatible',
      model: 'llama3.1:8b',
    });
    expect(parseModelRef('scripted')).toEqual({ provider: 'scripted', steps: [] });
    expect(parseModelRef('local')).toEqual({ provider: 'local' });
    expect(parseModelRef('local:qwen')).toEqual({ provider: 'local', model: 'qwen' });
    for (const bad of ['gpt-4o', 'azure:gpt', 'openai:', ':x', 'scripted:x', 'local:'])
      expect(() => parseModelRef(bad)).toThrow(/expected "scripted", "local" or/);
  });

  it('registers a provider only when its key or base URL is set (local, which needs none, always)', () => {
    expect(Object.keys(modelsFromConfig(loadConfig({})).providers)).toEqual(['local']);
    const all = loadConfig({
      OPENAI_API_KEY: 'k1',
      ANTHROPIC_API_KEY: 'k2',
      ANTHROPIC_BASE_URL: 'http://127.0.0.1:9/v1',
      OPENAI_COMPATIBLE_BASE_URL: 'http://127.0.0.1:11434/v1',
      AGENT_SESSIONS_MODEL_CHUNK_TIMEOUT_MS: '30000',
    });
    expect(all.providers).toEqual({
      openai: { apiKey: 'k1' },
      anthropic: { apiKey: 'k2', baseURL: 'http://127.0.0.1:9/v1' },
      openaiCompatible: { baseURL: 'http://127.0.0.1:11434/v1' },
      chunkTimeoutMs: 30000,
      local: {},
    });
    expect(Object.keys(modelsFromConfig(all).providers).sort()).toEqual([
      'anthropic',
      'local',
      'openai',
      'openai-compatible',
    ]);
    // A base URL without a key registers nothing: the key is what turns a provider on.
    expect(loadConfig({ OPENAI_BASE_URL: 'http://127.0.0.1:1/v1' }).providers.openai).toBeUndefined();
  });

  it('names the variable when a value is wrong', () => {
    expect(() => loadConfig({ OPENAI_COMPATIBLE_BASE_URL: 'localhost:11434' })).toThrow(
      /^invalid configuration: OPENAI_COMPATIBLE_BASE_URL: must be an http\(s\) URL/,
    );
    expect(() => loadConfig({ OPENAI_API_KEY: 'k', OPENAI_BASE_URL: 'file:///etc/passwd' })).toThrow(
      /OPENAI_BASE_URL/,
    );
    expect(() => loadConfig({ AGENT_SESSIONS_DEFAULT_MODEL: 'gpt-4o' })).toThrow(
      /^invalid configuration: AGENT_SESSIONS_DEFAULT_MODEL: model "gpt-4o"/,
    );
    expect(() => modelsFromConfig(loadConfig({ AGENT_SESSIONS_DEFAULT_MODEL: 'anthropic:claude' }))).toThrow(
      'AGENT_SESSIONS_DEFAULT_MODEL=anthropic:claude needs the anthropic provider: set ANTHROPIC_API_KEY (and optionally ANTHROPIC_BASE_URL) on the worker',
    );
    expect(
      modelsFromConfig(
        loadConfig({ OPENAI_API_KEY: 'k', AGENT_SESSIONS_DEFAULT_MODEL: 'openai:gpt-4o-mini' }),
      ).defaultModel,
    ).toEqual({
      provider: 'openai',
      model: 'gpt-4o-mini',
    });
  });

  it('lists every variable it reads in ENV_VARS', () => {
    for (const name of [
      'OPENAI_API_KEY',
      'OPENAI_BASE_URL',
      'ANTHROPIC_API_KEY',
      'ANTHROPIC_BASE_URL',
      'OPENAI_COMPATIBLE_BASE_URL',
      'OPENAI_COMPATIBLE_API_KEY',
      'AGENT_SESSIONS_DEFAULT_MODEL',
      'AGENT_SESSIONS_MODEL_CHUNK_TIMEOUT_MS',
      'AGENT_SESSIONS_MODEL_RATE_LIMIT_WAIT_MS',
      'AGENT_SESSIONS_HOOKS_FILE',
      'AGENT_SESSIONS_MCP_FILE',
    ]) {
      expect(Object.hasOwn(ENV_VARS, name)).toBe(true);
    }
  });
});
