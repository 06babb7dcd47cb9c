/**
 * The AI SDK provider called directly (no Temporal) against the local SSE server: heartbeats carry the partial
 * text at most once a second, an abort returns the visible prefix as an interrupted answer, a stalled stream fails
 * as a retryable timeout, and an unreachable server as a retryable connection failure naming the base URL variable.
 */
import { createServer } from 'node:net';
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProviders } from '../../src/activities/providers';
import type { ModelCallContext } from '../../src/activities/model';
import type { ModelRequest } from '../../src/activities/types';
import { FakeModelServer } from './fakeModelServer';

let oa: FakeModelServer;
beforeAll(async () => {
  oa = await FakeModelServer.start('openai');
});
afterAll(async () => {
  await oa?.close();
});

const request: ModelRequest = {
  sessionId: 's',
  turn: 1,
  step: 1,
  requestIndex: 0,
  model: { provider: 'openai-compatible', model: 'fake-model' },
  tools: [],
  toolSpecs: [],
  messages: [{ role: 'user', id: 'u1', content: [{ type: 'text', text: 'hi' }], source: { kind: 'user' } }],
};

function callContext(signal = new AbortController().signal) {
  const beats: { at: number; details: unknown }[] = [];
  const ctx: ModelCallContext = {
    signal,
    heartbeat: (details) => beats.push({ at: Date.now(), details }),
    sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
  };
  return { ctx, beats };
}

const provider = (baseURL: string, chunkTimeoutMs?: number) =>
  createProviders({ openaiCompatible: { baseURL }, ...(chunkTimeoutMs ? { chunkTimeoutMs } : {}) })[
    'openai-compatible'
  ]!;

describe('AiSdkProvider', () => {
  it('heartbeats the partial text, at most once a second, while the response streams', async () => {
    oa.script({ chunks: ['a', 'b', 'c', 'd', 'e', 'f'], chunkDelayMs: 400 });
    const { ctx, beats } = callContext();
    const started = Date.now();
    const result = await provider(oa.url).step(request, ctx);
    const elapsed = Date.now() - started;
    expect(result).toMatchObject({ text: 'abcdef', finish: 'stop', toolCalls: [] });
    expect(beats.length).toBeGreaterThanOrEqual(2);
    expect(beats.length).toBeLessThanOrEqual(1 + Math.ceil(elapsed / 1000));
    for (let i = 1; i < beats.length; i++)
      expect(beats[i]!.at - beats[i - 1]!.at).toBeGreaterThanOrEqual(900);
    const texts = beats.map((b) => (b.details as { partialText: string }).partialText);
    expect(texts[0]).toBe('');
    expect(texts.at(-1)!.length).toBeGreaterThan(0);
    expect('abcdef'.startsWith(texts.at(-1)!)).toBe(true);
  });

  it('an abort returns the visible prefix as an interrupted answer', async () => {
    oa.script({ chunks: ['visible ', 'prefix'], hold: true });
    const abort = new AbortController();
    const { ctx, beats } = callContext(abort.signal);
    const pending = provider(oa.url).step(request, ctx);
    // The provider has seen both chunks once a heartbeat carries them (heartbeats come every second).
    await waitFor(() =>
      beats.some((b) => (b.details as { partialText: string }).partialText === 'visible prefix'),
    );
    abort.abort();
    expect(await pending).toEqual({
      text: 'visible prefix',
      toolCalls: [],
      finish: 'stop',
      interrupted: true,
    });
  });

  it('a stream that stalls past the chunk timeout fails as a retryable ModelTimeout', async () => {
    oa.script({ chunks: ['then nothing'], hold: true });
    const { ctx } = callContext();
    const err = await provider(oa.url, 300)
      .step(request, ctx)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect([(err as ApplicationFailure).type, (err as ApplicationFailure).nonRetryable]).toEqual([
      'ModelTimeout',
      false,
    ]);
  });

  it('an unreachable server fails as a retryable ModelUnavailable naming the base URL variable', async () => {
    const port = await freePort();
    const { ctx } = callContext();
    const err = (await provider(`http://127.0.0.1:${port}/v1`)
      .step(request, ctx)
      .then(
        () => undefined,
        (e: unknown) => e,
      )) as ApplicationFailure;
    expect([err.type, err.nonRetryable]).toEqual(['ModelUnavailable', false]);
    expect(err.message).toMatch(
      /^cannot reach openai-compatible at http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions \(check OPENAI_COMPATIBLE_BASE_URL\)/,
    );
  });
});

async function waitFor(check: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!check()) throw new Error('condition not reached');
}

/** A port nothing listens on (bound, read, released). */
function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}
