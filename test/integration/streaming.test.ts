/**
 * Live text for watchers (SessionClient.stream) on the dev server: while a model step runs, a watcher sees its text
 * grow, with (turn, step, attempt) on each delta; one that joins mid-step gets the text so far first; the durable
 * answer is still the step's `assistant/message`, and streaming adds nothing to history.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StreamItem, TextDelta } from '../../src/client';
import { newId, settle, startSessionTestEnv, type SessionTestEnv } from '../support/sessionEnv';

let t: SessionTestEnv;
beforeAll(async () => {
  t = await startSessionTestEnv('dev');
});
afterAll(async () => {
  await t?.teardown();
});

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
});
