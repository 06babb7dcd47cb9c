/**
 * The AI SDK provider called directly (no Temporal) against the local SSE server: heartbeats carry the partial
 * text at most once a second, an abort returns the visible prefix as an interrupted answer, a stalled stream fails
 * as a retryable timeout, and an unreachable server as a retryable connection failure naming the base URL variable.
 */
import { createServer } from 'node:net';
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
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
  const beats: { details: unknown }[] = [];
  const ctx: ModelCallContext = {
    signal,
    heartbeat: (details) => beats.push({ details }),
    sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
  };
  return { ctx, beats };
}

const partialText = (beat: { details: unknown }) => (beat.details as { partialText: string }).partialText;

const provider = (baseURL: string, chunkTimeoutMs?: number) =>
  createProviders({ openaiCompatible: { baseURL }, ...(chunkTimeoutMs ? { chunkTimeoutMs } : {}) })[
    'openai-compatible'
  ]!;

describe('AiSdkProvider', () => {
  // The heartbeat clock is faked (only setInterval: the HTTP stream runs in real time), so the test decides when a
  // second has passed: a beat comes at the start and on each whole second, never per chunk, and stops at the end.
  it('heartbeats the partial text once at the start and then once a second, not per chunk', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      oa.script({ chunks: ['a', 'b', 'c', 'd', 'e', 'f'], hold: true });
      const abort = new AbortController();
      const { ctx, beats } = callContext(abort.signal);
      const pending = provider(oa.url).step(request, ctx);
      expect(beats.map(partialText)).toEqual(['']);
      await waitFor(() => oa.streamed.length === 6);
      // Six chunks arrived, no second has passed: still the one beat.
      expect(beats).toHaveLength(1);
      // Let seconds pass until a beat carries all six (the provider reads the chunks at its own pace).
      let seconds = 0;
      while (partialText(beats.at(-1)!) !== 'abcdef') {
        expect(seconds, 'the provider read the six chunks').toBeLessThan(500);
        await new Promise((r) => setTimeout(r, 10));
        vi.advanceTimersByTime(1000);
        seconds += 1;
      }
      expect(beats).toHaveLength(1 + seconds);
      expect(beats.map(partialText).every((text) => 'abcdef'.startsWith(text))).toBe(true);
      vi.advanceTimersByTime(999);
      expect(beats).toHaveLength(1 + seconds);
      vi.advanceTimersByTime(1);
      expect(beats).toHaveLength(2 + seconds);

      abort.abort();
      expect(await pending).toMatchObject({ text: 'abcdef', interrupted: true });
      vi.advanceTimersByTime(5000);
      expect(beats).toHaveLength(2 + seconds);
    } finally {
      vi.useRealTimers();
    }
  });

  it('an abort returns the visible prefix as an interrupted answer', async () => {
    oa.script({ chunks: ['visible ', 'prefix'], hold: true });
    const abort = new AbortController();
    const { ctx, beats } = callContext(abort.signal);
    const pending = provider(oa.url).step(request, ctx);
    // The provider has seen both chunks once a heartbeat carries them (heartbeats come every second).
    await waitFor(() => beats.some((b) => partialText(b) === 'visible prefix'));
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
