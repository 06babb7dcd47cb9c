/**
 * Waiting inside one activity attempt: sleeps that heartbeat (so Temporal sees the attempt alive and a cancel reaches
 * it), the attempt's deadline, and the waits of a model call the provider rate-limited (429): each waits for the
 * provider's Retry-After (or a backoff when it sent none) plus jitter, then the call is sent again in the same
 * attempt, so a 429 does not use up the attempts budget (./attempts.ts) and calls that wait on the same window are
 * spread. The waits of one call are bounded by the worker's `rateLimitWaitMs` and by the attempt's deadline; past
 * them the 429 is final (`MODEL_RATE_LIMITED`). Not deterministic: reads the clock, uses randomness.
 */
import type { Context, Info } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { FailureTypes } from '../contract';
import { BEAT_EVERY_MS, type Attempt } from './attempts';

/** Default bound of one model call's rate-limit waits (AGENT_SESSIONS_MODEL_RATE_LIMIT_WAIT_MS). */
export const DEFAULT_RATE_LIMIT_WAIT_MS = 5 * 60_000;
/** Backoff of a 429 without Retry-After: 1 s, doubling, at most 30 s. */
const BACKOFF_FIRST_MS = 1000;
const BACKOFF_MAX_MS = 30_000;
/** Jitter added to each wait: a random part of half the wait, at least of this much. */
const MIN_JITTER_MS = 500;

/** Sleeps in slices, heartbeating between them (with the last details given), so a cancel is learned promptly. */
export async function heartbeatingSleep(ctx: Context, attempt: Attempt, ms: number): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    const left = until - Date.now();
    if (left <= 0) return;
    attempt.pulse();
    await ctx.sleep(Math.min(left, BEAT_EVERY_MS));
  }
}

/** When the running attempt times out: its start-to-close timeout from now, or the call's schedule-to-close. */
export function attemptDeadline(
  info: Pick<Info, 'startToCloseTimeoutMs' | 'scheduleToCloseTimeoutMs' | 'scheduledTimestampMs'>,
  now = Date.now(),
): number | undefined {
  const ends = [
    info.startToCloseTimeoutMs > 0 ? now + info.startToCloseTimeoutMs : Infinity,
    info.scheduleToCloseTimeoutMs > 0 ? info.scheduledTimestampMs + info.scheduleToCloseTimeoutMs : Infinity,
  ];
  const end = Math.min(...ends);
  return Number.isFinite(end) ? end : undefined;
}

export interface RateLimitWaitOptions {
  /** Most milliseconds one call waits for rate limits in total; 0: no waiting (each 429 fails the attempt). */
  maxWaitMs: number;
  /** Epoch ms by which the attempt must end (ModelCallContext.deadlineAt). */
  deadlineAt?: number | undefined;
  /** Time kept before the deadline for the request sent after the wait (the provider's chunk timeout). */
  reserveMs: number;
  /** Sleeps, heartbeating; rejects when the activity is cancelled. */
  sleep(ms: number): Promise<void>;
  /** Told before each wait (the provider heartbeats it). */
  onWait?(ms: number): void;
  random?: () => number;
  now?: () => number;
}

/**
 * A waiter for one model call: given the call's `ModelRateLimited` failure, it sleeps for the provider's delay
 * (`nextRetryDelay`, from Retry-After) or the backoff, plus jitter, and resolves (send again); when that wait would
 * pass the bound or the deadline, it throws the failure as final, saying how long the call waited. With
 * `maxWaitMs` 0 it rethrows the failure unchanged (Temporal retries it as an attempt).
 */
export function rateLimitWaiter(opts: RateLimitWaitOptions): (failure: ApplicationFailure) => Promise<void> {
  const random = opts.random ?? Math.random;
  const now = opts.now ?? Date.now;
  let waited = 0;
  let waits = 0;
  return async (failure) => {
    if (opts.maxWaitMs <= 0) throw failure;
    const asked = typeof failure.nextRetryDelay === 'number' ? failure.nextRetryDelay : undefined;
    const base = asked ?? Math.min(BACKOFF_FIRST_MS * 2 ** waits, BACKOFF_MAX_MS);
    const ms = Math.round(base + random() * Math.max(base / 2, MIN_JITTER_MS));
    const pastBound = waited + ms > opts.maxWaitMs;
    const pastDeadline = opts.deadlineAt !== undefined && now() + ms + opts.reserveMs > opts.deadlineAt;
    if (pastBound || pastDeadline) {
      const limit = pastBound
        ? `the worker's bound of ${seconds(opts.maxWaitMs)} s (AGENT_SESSIONS_MODEL_RATE_LIMIT_WAIT_MS)`
        : "the model call's deadline";
      throw ApplicationFailure.create({
        type: FailureTypes.ModelRateLimited,
        nonRetryable: true,
        message: `${failure.message}; still rate-limited after waiting ${seconds(waited)} s in ${waits} wait(s), and the next wait (${seconds(ms)} s) would pass ${limit}`,
      });
    }
    opts.onWait?.(ms);
    await opts.sleep(ms);
    waited += ms;
    waits += 1;
  };
}

function seconds(ms: number): string {
  return String(Math.round(ms / 100) / 10);
}
