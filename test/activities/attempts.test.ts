/**
 * The attempt budget of an activity (src/activities/attempts.ts), run in a mock activity context: how the count of
 * the call's own failures travels in heartbeat details, when a failure becomes final and that it keeps its type and
 * message, and what is not counted (cancellation, failures that are not retried anyway). The real-process side —
 * that the count survives a SIGKILLed worker and the failure heartbeat reaches the next attempt — is
 * test/integration/attempt-budget.test.ts.
 */
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { describe, expect, it } from 'vitest';
import {
  failedAttemptsOf,
  FAILED_ATTEMPTS_KEY,
  withAttemptBudget,
  withFailedAttempts,
} from '../../src/activities/attempts';

const mark = (n: number) => ({ [FAILED_ATTEMPTS_KEY]: { failedAttempts: n } });

/** Runs one attempt whose previous attempts left `details`; returns what it threw and every heartbeat it sent. */
async function attempt(
  details: unknown,
  body: Parameters<typeof withAttemptBudget>[1],
  opts: { budget?: number; nonRetryableErrorTypes?: string[] } = {},
) {
  const env = new MockActivityEnvironment({
    heartbeatDetails: details,
    retryPolicy: { nonRetryableErrorTypes: opts.nonRetryableErrorTypes ?? ['Fatal'] },
  });
  const beats: unknown[] = [];
  env.on('heartbeat', (d: unknown) => beats.push(d));
  let thrown: unknown;
  let result: unknown;
  try {
    result = await env.run(() => withAttemptBudget(opts.budget ?? 3, body));
  } catch (err) {
    thrown = err;
  }
  return { thrown, result, beats, env };
}

const unavailable = () =>
  ApplicationFailure.create({
    type: 'ModelUnavailable',
    message: 'provider failed (503)',
    nextRetryDelay: 5,
  });

describe('the count in heartbeat details', () => {
  it('sits beside the fields of object details, wraps other details, and is absent before the first failure', () => {
    expect(withFailedAttempts({ partialText: 'ab' }, 2)).toEqual({ partialText: 'ab', ...mark(2) });
    expect(withFailedAttempts('progress', 1)).toEqual({ details: 'progress', ...mark(1) });
    expect(withFailedAttempts(undefined, 1)).toEqual(mark(1));
    expect(withFailedAttempts({ partialText: 'ab' }, 0)).toEqual({ partialText: 'ab' });
    expect(withFailedAttempts(7, 0)).toBe(7);
    // A tool's own field under our key cannot fake a count.
    expect(withFailedAttempts({ ...mark(9), n: 1 }, 0)).toEqual({ n: 1 });
  });

  it('is read back from what the previous attempt left, and anything else reads as 0', () => {
    expect(failedAttemptsOf({ partialText: 'x', ...mark(3) })).toBe(3);
    for (const other of [undefined, null, 'x', 4, [mark(2)], { partialText: 'x' }, mark(-1), mark(1.5)])
      expect(failedAttemptsOf(other)).toBe(0);
  });
});

describe('an attempt of a budgeted call', () => {
  it("carries the previous attempts' count in every heartbeat, keeping the details it is given", async () => {
    const { result, beats } = await attempt(mark(2), async (a) => {
      expect(a.failedBefore).toBe(2);
      a.beat({ partialText: 'he' });
      a.pulse();
      return 'ok';
    });
    expect(result).toBe('ok');
    expect(beats).toEqual([
      { partialText: 'he', ...mark(2) },
      { partialText: 'he', ...mark(2) },
    ]);
  });

  it('heartbeats by itself every second while the call runs', async () => {
    const { beats } = await attempt(undefined, async () => {
      await new Promise((resolve) => setTimeout(resolve, 1_300));
    });
    expect(beats.length).toBeGreaterThanOrEqual(1);
  });

  it('an own retryable failure is rethrown as it is, after a heartbeat with the count plus one', async () => {
    const err = unavailable();
    const { thrown, beats } = await attempt(mark(1), async (a) => {
      a.beat({ partialText: 'p' });
      throw err;
    });
    expect(thrown).toBe(err);
    expect(beats.at(-1)).toEqual({ partialText: 'p', ...mark(2) });
  });

  it('the failure that spends the budget is final, with the same type, message and details', async () => {
    const { thrown } = await attempt(mark(2), async () => {
      throw ApplicationFailure.create({
        type: 'ModelUnavailable',
        message: 'provider failed (503)',
        details: [1],
      });
    });
    expect(thrown).toBeInstanceOf(ApplicationFailure);
    const f = thrown as ApplicationFailure;
    expect([f.type, f.message, f.nonRetryable, f.details]).toEqual([
      'ModelUnavailable',
      'provider failed (503)',
      true,
      [1],
    ]);
  });

  it('a plain Error keeps the type and message Temporal gives it when it becomes final', async () => {
    class TranscriptBroken extends Error {}
    const { thrown } = await attempt(mark(2), async () => {
      throw new TranscriptBroken('prefix hash differs');
    });
    const f = thrown as ApplicationFailure;
    const asTemporalSeesIt = ApplicationFailure.fromError(new TranscriptBroken('prefix hash differs'));
    expect([f.type, f.message, f.nonRetryable]).toEqual([asTemporalSeesIt.type, 'prefix hash differs', true]);
    expect(f.stack).toContain('prefix hash differs');
  });

  it('the first failure of a budget of one is final', async () => {
    const { thrown } = await attempt(undefined, async () => Promise.reject(unavailable()), { budget: 1 });
    expect((thrown as ApplicationFailure).nonRetryable).toBe(true);
  });

  it('does not count failures that are not retried anyway, nor a cancellation', async () => {
    const nonRetryable = ApplicationFailure.create({ type: 'X', message: 'no', nonRetryable: true });
    const listed = ApplicationFailure.create({ type: 'Fatal', message: 'never retried' });
    for (const err of [nonRetryable, listed, new CancelledFailure('cancelled')]) {
      const { thrown, beats } = await attempt(mark(2), async () => {
        throw err;
      });
      expect(thrown).toBe(err);
      expect(beats).toEqual([]);
    }
  });

  it('does not count a failure thrown after the attempt was cancelled', async () => {
    const err = unavailable();
    const env = new MockActivityEnvironment({ heartbeatDetails: mark(2) });
    const beats: unknown[] = [];
    env.on('heartbeat', (d: unknown) => beats.push(d));
    const running = env.run(() =>
      withAttemptBudget(3, async () => {
        await new Promise((resolve) => setTimeout(resolve, 50));
        throw err;
      }),
    );
    env.cancel();
    await expect(running).rejects.toBe(err);
    expect(beats).toEqual([]);
  });
});
