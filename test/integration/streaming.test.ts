/**
 * Live text for watchers (SessionClient.stream) on the dev server: while a model step runs, a watcher sees its text
 * grow, with (turn, step, attempt) on each delta; one that joins mid-step gets the text so far first; the durable
 * answer is still the step's `assistant/message`, and streaming adds nothing to history. When an attempt fails after
 * writing part of its answer, the retry's text comes as a reset, and the durable answer is the retry's alone. The
 * last delta of a step carries its whole answer, also when the model ends faster than the worker's heartbeat throttle
 * (a scripted step, and an OpenAI-compatible server streaming over real HTTP).
 */
import { randomUUID } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ModelProvider } from '../../src/activities/model';
import { SessionClient, type StreamItem, type TextDelta } from '../../src/client';
import { FailureTypes } from '../../src/contract';
import { createSessionWorker, modelsFromConfig } from '../../src/worker';
import { loadConfig } from '../../src/worker/config';
import { FakeModelServer } from '../providers/fakeModelServer';
import { newId, settle, startSessionTestEnv, type SessionTestEnv } from '../support/sessionEnv';

let t: SessionTestEnv;
let compat: FakeModelServer;
beforeAll(async () => {
  compat = await FakeModelServer.start('openai');
  const config = loadConfig({
    OPENAI_COMPATIBLE_BASE_URL: compat.url,
    OPENAI_COMPATIBLE_API_KEY: 'compat-key',
  });
  t = await startSessionTestEnv('dev', [], { providers: modelsFromConfig(config).providers });
});
afterAll(async () => {
  await t?.teardown();
  await compat?.close();
});

const FIRST_TRY = 'the first try writes this and then its connection drops';
const SECOND_TRY = 'the second try writes the whole answer';

/**
 * A provider that writes word by word, as a streaming one does; its first attempt of each request fails retryably
 * (as a dropped connection does) after writing half its words.
 */
const flakyStreamer: ModelProvider = {
  name: 'openai-compatible',
  async step(_input, ctx) {
    const attempt = Context.current().info.attempt;
    const words = (attempt === 1 ? FIRST_TRY : SECOND_TRY).match(/\S+\s*/g)!;
    let shown = '';
    for (const [k, word] of words.entries()) {
      if (attempt === 1 && k === Math.floor(words.length / 2))
        throw ApplicationFailure.create({ type: FailureTypes.ModelUnavailable, message: 'connection reset' });
      shown += word;
      ctx.heartbeat({ partialText: shown });
      await ctx.sleep(300);
    }
    return { text: shown, toolCalls: [], finish: 'stop' };
  },
};

const ANSWER = 'one two three four five six seven eight nine ten';

/** Stream items until the first assistant/message (or the timeout). */
async function collect(
  stream: AsyncGenerator<StreamItem>,
  onDelta: (d: TextDelta) => void = () => {},
): Promise<StreamItem[]> {
  const items: StreamItem[] = [];
  for await (const item of stream) {
    items.push(item);
    if (item.kind === 'delta') onDelta(item);
    if (item.kind === 'event' && item.event.type === 'assistant/message') break;
  }
  return items;
}

describe('streaming to watchers', () => {
  it('a watcher sees the text grow while the step runs; a late watcher gets the text so far; history is unchanged', async () => {
    const s = t.sessions();
    const id = newId('stream');
    await s.start(id, { model: { provider: 'scripted', steps: [{ text: ANSWER, streamMs: 4_000 }] } });
    const abort = new AbortController();
    let late: Promise<StreamItem[]> | undefined;
    const first = collect(s.stream(id, { signal: abort.signal }), (d) => {
      // A second watcher joins once the text has begun.
      late ??= collect(s.stream(id, { signal: abort.signal }));
      expect(d).toMatchObject({ turn: 1, step: 1, attempt: 1 });
    });
    await s.followup(id, 'count to ten');
    const items = await first;
    const lateItems = await late!;
    abort.abort();

    const deltas = items.filter((i): i is TextDelta => i.kind === 'delta');
    expect(deltas.length).toBeGreaterThanOrEqual(3);
    // Each delta extends the text before it; together they are the text so far.
    for (const [k, d] of deltas.entries()) {
      expect(d.reset).toBe(false);
      expect(d.text).toBe(
        deltas
          .slice(0, k + 1)
          .map((x) => x.delta)
          .join(''),
      );
      expect(ANSWER.startsWith(d.text)).toBe(true);
    }
    const answer = items.find((i) => i.kind === 'event' && i.event.type === 'assistant/message');
    expect(
      answer?.kind === 'event' &&
        answer.event.type === 'assistant/message' &&
        answer.event.data.message.content[0]?.text,
    ).toBe(ANSWER);
    // Every delta came before the durable answer.
    expect(items.findIndex((i) => i.kind === 'delta')).toBeLessThan(items.indexOf(answer!));

    const lateDeltas = lateItems.filter((i): i is TextDelta => i.kind === 'delta');
    expect(lateDeltas.length).toBeGreaterThan(0);
    expect(lateDeltas[0]!.delta).toBe(lateDeltas[0]!.text);
    expect(lateDeltas[0]!.text.length).toBeGreaterThan(0);

    // The same answer without streaming: the same events, and history as large (heartbeats are not history).
    const plain = newId('plain');
    await s.start(plain, { model: { provider: 'scripted', steps: [{ text: ANSWER, delayMs: 4_000 }] } });
    await s.followup(plain, 'count to ten');
    const streamed = await settle(s, id);
    const notStreamed = await settle(s, plain);
    expect(streamed.map((e) => e.type)).toEqual(notStreamed.map((e) => e.type));
    // From the model call on (no signal or query arrives then), the two histories hold the same events; the
    // model call's events are as large (its input differs only in the script's field name and value).
    const modelPart = async (wf: string) => {
      const events = (await t.env.client.workflow.getHandle(wf).fetchHistory()).events ?? [];
      const from = events.findIndex(
        (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'modelStep',
      );
      const tail = events.slice(from);
      const bytes = tail
        .filter((e) => !e.activityTaskScheduledEventAttributes)
        .reduce(
          (n, e) => n + JSON.stringify(e.activityTaskCompletedEventAttributes?.result ?? null).length,
          0,
        );
      return { types: tail.map((e) => e.eventType), bytes };
    };
    const [a, b] = [await modelPart(id), await modelPart(plain)];
    expect(a.types).toEqual(b.types);
    expect(a.bytes).toBe(b.bytes);
  });

  it('a retried attempt starts its text again: a reset delta with the new attempt, and only its answer is durable', async () => {
    const taskQueue = `stream-retry-${randomUUID()}`;
    const worker: Worker = await createSessionWorker({
      connection: t.env.nativeConnection,
      taskQueue,
      // Sessions name one of the known providers; this worker answers `openai-compatible` with the flaky one.
      providers: { 'openai-compatible': flakyStreamer },
      workflowBundle: { codePath: inject('workflowBundlePath') },
    });
    const running = worker.run();
    try {
      const s = new SessionClient({ client: t.env.client, taskQueue });
      const id = newId('stream-retry');
      await s.start(id, { model: { provider: 'openai-compatible', model: 'words' } });
      const abort = new AbortController();
      const watching = collect(s.stream(id, { signal: abort.signal }));
      await s.followup(id, 'write it');
      const items = await watching;
      abort.abort();

      const deltas = items.filter((i): i is TextDelta => i.kind === 'delta');
      const first = deltas.filter((d) => d.attempt === 1);
      const second = deltas.filter((d) => d.attempt === 2);
      expect(first.length).toBeGreaterThan(0);
      expect(FIRST_TRY.startsWith(first.at(-1)!.text)).toBe(true);
      // The retry's first delta says to drop what the watcher shows and carries the retry's text from its start.
      expect(second[0]).toMatchObject({ turn: 1, step: 1, attempt: 2, reset: true });
      expect(second[0]!.delta).toBe(second[0]!.text);
      expect(second.slice(1).every((d) => !d.reset)).toBe(true);
      // The step's last delta carries the whole answer of the attempt that made it.
      expect(second.at(-1)!.text).toBe(SECOND_TRY);
      expect(deltas.indexOf(second[0]!)).toBeGreaterThan(deltas.indexOf(first.at(-1)!));

      const events = await settle(s, id);
      const answers = events.filter((e) => e.type === 'assistant/message');
      expect(answers).toHaveLength(1);
      expect(answers[0]!.type === 'assistant/message' && answers[0]!.data.message.content[0]?.text).toBe(
        SECOND_TRY,
      );
    } finally {
      worker.shutdown();
      await running;
    }
  });
});

describe('the last delta of a step carries its whole answer', () => {
  /** Streams one followup's answer; checks that the deltas, joined, are the answer and end with it before the message. */
  async function streamedAnswer(id: string, expected: string) {
    const s = t.sessions();
    const abort = new AbortController();
    const watching = collect(s.stream(id, { signal: abort.signal }));
    await s.followup(id, 'write it');
    const items = await watching;
    abort.abort();
    const deltas = items.filter((i): i is TextDelta => i.kind === 'delta');
    const answer = items.at(-1)!;
    expect(answer.kind === 'event' && answer.event.type === 'assistant/message').toBe(true);
    expect(deltas.length).toBeGreaterThanOrEqual(2);
    expect(deltas.every((d) => !d.reset)).toBe(true);
    expect(deltas.map((d) => d.delta).join('')).toBe(expected);
    expect(deltas.at(-1)).toMatchObject({ turn: 1, step: 1, attempt: 1, text: expected });
    expect(items.indexOf(deltas.at(-1)!)).toBeLessThan(items.indexOf(answer));
  }

  it('a scripted step of 30 words streamed over 4 s (the last word comes within the throttle interval)', async () => {
    const words = Array.from({ length: 30 }, (_, k) => `word${k + 1}`).join(' ');
    const id = newId('stream-last');
    await t
      .sessions()
      .start(id, { model: { provider: 'scripted', steps: [{ text: words, streamMs: 4_000 }] } });
    await streamedAnswer(id, words);
  });

  it('an OpenAI-compatible server streaming 25 pieces over HTTP', async () => {
    const pieces = Array.from({ length: 25 }, (_, k) => `piece${k + 1} `);
    compat.script({ chunks: pieces, chunkDelayMs: 40 });
    const id = newId('stream-compat');
    await t.sessions().start(id, { model: { provider: 'openai-compatible', model: 'fake-model' } });
    await streamedAnswer(id, pieces.join(''));
    expect(compat.requests).toHaveLength(1);
  });
});
