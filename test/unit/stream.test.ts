/** The delta fold behind SessionClient.stream (src/client/stream.ts): growth, resets on a new attempt, answered steps. */
import { describe, expect, it } from 'vitest';
import { DeltaFold, liveTextOf } from '../../src/client/stream';
import type { SessionEvent } from '../../src/domain/events';

const at = (turn: number, step: number, attempt: number, text: string) => ({ turn, step, attempt, text });

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
    const ev = (type: string, data: object) => ({ seq: 0, time: 0, type, data }) as SessionEvent;
    fold.event(ev('step/start', { turn: 1, step: 1 }));
    expect(fold.modelRunning).toBe(true);
    fold.event(
      ev('assistant/message', { turn: 1, step: 1, message: { id: 'a', role: 'assistant', content: [] } }),
    );
    expect(fold.modelRunning).toBe(false);
    expect(fold.next(at(1, 1, 1, 'late heartbeat'))).toBeUndefined();
  });

  it('reads only our heartbeat details', () => {
    expect(liveTextOf({ partialText: 'x', turn: 2, step: 3, failed: 1 }, 4)).toEqual(at(2, 3, 4, 'x'));
    for (const other of [undefined, 'x', { partialText: 'x' }, { turn: 1, step: 1 }])
      expect(liveTextOf(other, 1)).toBeUndefined();
  });
});
