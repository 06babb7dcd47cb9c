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
  it('heartbeats the text as it grows, at most every 100 ms and not per chunk, then once a second', async () => {
    // The once-a-second liveness beat runs on a fake clock: every beat seen before we advance it came from text.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      oa.script({ chunks: ['a', 'b', 'c', 'd', 'e', 'f'], hold: true });
      const abort = new AbortController();
      const { ctx, beats } = callContext(abort.signal);
      const pending = provider(oa.url).step(request, ctx);
      expect(beats.map(partialText)).toEqual(['']);
      await waitFor(() => oa.streamed.length === 6);
      // The whole text goes out soon after its chunks, without the liveness beat.
      await waitFor(() => beats.some((b) => partialText(b) === 'abcdef'));
      // Six chunks that came together gave a few beats, not one each.
      expect(beats.length).toBeLessThan(6);
      expect(beats.map(partialText).every((text) => 'abcdef'.startsWith(text))).toBe(true);
      // Nothing new: the liveness beat repeats the text once a second.
      const before = beats.length;
      vi.advanceTimersByTime(1000);
      expect(beats).toHaveLength(before + 1);
      expect(partialText(beats.at(-1)!)).toBe('abcdef');

      abort.abort();
      expect(await pending).toMatchObject({ text: 'abcdef', interrupted: true });
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
