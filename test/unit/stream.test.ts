/**
 * The delta fold behind SessionClient.stream (src/client/stream.ts): growth, resets on a new attempt, answered steps,
 * the last delta that completes a step's text; and the poll loop (src/client/poll.ts) yielding it before the answer.
 */
import { describe, expect, it } from 'vitest';
import { follow } from '../../src/client/poll';
import { DeltaFold, liveTextOf, type LiveText, type StreamItem } from '../../src/client/stream';
import type { SessionEvent } from '../../src/domain/events';

const at = (turn: number, step: number, attempt: number, text: string) => ({ turn, step, attempt, text });
const ev = (type: string, data: object, seq = 0) => ({ seq, time: 0, type, data }) as SessionEvent;
const answer = (turn: number, step: number, text: string, seq = 0) =>
  ev(
    'assistant/message',
    { turn, step, message: { id: 'a', role: 'assistant', content: [{ type: 'text', text }] } },
    seq,
  );

describe('DeltaFold', () => {
  it('yields what is new as the text grows, and nothing when it did not change', () => {
    const fold = new DeltaFold();
    expect(fold.next(at(1, 1, 1, 'Hel'))).toMatchObject({ text: 'Hel', delta: 'Hel', reset: false });
    expect(fold.next(at(1, 1, 1, 'Hello'))).toMatchObject({ text: 'Hello', delta: 'lo', reset: false });
    expect(fold.next(at(1, 1, 1, 'Hello'))).toBeUndefined();
  });

  it('a new attempt of the same step resets the text; a new step starts fresh', () => {
    const fold = new DeltaFold();
    fold.next(at(1, 1, 1, 'Hello wor'));
    expect(fold.next(at(1, 1, 2, 'Hi'))).toEqual({
      kind: 'delta',
      turn: 1,
      step: 1,
      attempt: 2,
      text: 'Hi',
      delta: 'Hi',
      reset: true,
    });
    expect(fold.next(at(1, 2, 1, 'Next'))).toMatchObject({ delta: 'Next', reset: false });
  });

  it('nothing for a step whose answer is in the log; the log tells when a model call may run', () => {
    const fold = new DeltaFold();
    fold.event(ev('step/start', { turn: 1, step: 1 }));
    expect(fold.modelRunning).toBe(true);
    fold.event(
      ev('assistant/message', { turn: 1, step: 1, message: { id: 'a', role: 'assistant', content: [] } }),
    );
    expect(fold.modelRunning).toBe(false);
    expect(fold.next(at(1, 1, 1, 'late heartbeat'))).toBeUndefined();
  });

  it('the answer of a step whose text it read completes that text: a last delta with what was not delivered', () => {
    const fold = new DeltaFold();
    fold.event(ev('step/start', { turn: 1, step: 1 }));
    fold.next(at(1, 1, 1, 'word1 word2 '));
    // The heartbeat with the last word never came (the call ended within the worker's throttle interval).
    expect(fold.event(answer(1, 1, 'word1 word2 word3'))).toEqual({
      kind: 'delta',
      turn: 1,
      step: 1,
      attempt: 1,
      text: 'word1 word2 word3',
      delta: 'word3',
      reset: false,
    });
    expect(fold.next(at(1, 1, 1, 'word1 word2 word3'))).toBeUndefined();
    // Read as empty so far (the call had written nothing yet): the whole answer comes as the step's one delta.
    fold.event(ev('step/start', { turn: 1, step: 2 }));
    fold.next(at(1, 2, 1, ''));
    expect(fold.event(answer(1, 2, 'all at once'))).toMatchObject({
      text: 'all at once',
      delta: 'all at once',
    });
  });

  it('no last delta when the deltas hold the answer, or the step was never read; a reset when the text differs', () => {
    const fold = new DeltaFold();
    fold.next(at(1, 1, 1, 'done'));
    expect(fold.event(answer(1, 1, 'done'))).toBeUndefined();
    // A step this fold never read (it ran between two polls, or before the watcher came): its answer is the message.
    expect(fold.event(answer(1, 2, 'unseen'))).toBeUndefined();
    // The read text is not the start of the answer (an attempt whose text the fold never read answered): replace it.
    fold.next(at(2, 1, 1, 'first try'));
    expect(fold.event(answer(2, 1, 'second'))).toMatchObject({
      text: 'second',
      delta: 'second',
      reset: true,
    });
    // The next step read before the poll that brings this step's answer: each step's text is completed on its own.
    fold.next(at(3, 1, 1, 'one '));
    fold.next(at(3, 2, 1, 'tw'));
    expect(fold.event(answer(3, 1, 'one more'))).toMatchObject({ step: 1, text: 'one more', delta: 'more' });
    expect(fold.event(answer(3, 2, 'two'))).toMatchObject({ step: 2, text: 'two', delta: 'o' });
  });

  it('reads only our heartbeat details', () => {
    expect(liveTextOf({ partialText: 'x', turn: 2, step: 3, failed: 1 }, 4)).toEqual(at(2, 3, 4, 'x'));
    for (const other of [undefined, 'x', { partialText: 'x' }, { turn: 1, step: 1 }])
      expect(liveTextOf(other, 1)).toBeUndefined();
  });
});

describe('follow with a live-text reader', () => {
  it('yields the delta that completes the text before the step’s assistant/message', async () => {
    const rounds: SessionEvent[][] = [
      [ev('step/start', { turn: 1, step: 1 }, 0)],
      [answer(1, 1, 'Hello world', 1), ev('session/disposed', {}, 2)],
    ];
    const readings: LiveText[] = [at(1, 1, 1, 'Hello wor')];
    const items: StreamItem[] = [];
    const read = { events: async () => rounds.shift() ?? [], liveText: async () => readings.shift() };
    for await (const item of follow(read, { pollMs: 0, streamPollMs: 0 })) items.push(item);
    expect(
      items.map((i) =>
        i.kind === 'delta' ? `delta ${i.delta}` : i.kind === 'event' ? i.event.type : i.kind,
      ),
    ).toEqual(['step/start', 'delta Hello wor', 'delta ld', 'assistant/message', 'session/disposed']);
  });
});
