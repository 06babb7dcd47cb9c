/**
 * Attempt budgets of the session's activities: losing a worker does not use up the attempts meant for the call's
 * own failures (docs/reliability.md, "Attempt budgets").
 *
 * Temporal counts every attempt against the retry policy's `maximumAttempts`, whether it failed with the call's own
 * error (a provider's 5xx, a hook's non-2xx, a bug) or timed out because its worker was lost (SIGKILL, OOM, a machine
 * gone: a heartbeat timeout). So the workflow's policies allow many attempts (the budget below plus a bounded
 * allowance for lost workers, src/workflows/activities.ts), and the activity counts its own failures in its heartbeat
 * details, which Temporal hands to the next attempt as `info.heartbeatDetails`: the SDK flushes the last heartbeat
 * before it reports a failure, and an attempt lost with its worker leaves the details of its last heartbeat. Once a
 * call has failed `budget` times with its own retryable error, that failure is raised as non-retryable with the same
 * type and message, so the workflow sees what it saw before: the same error code after the same number of genuine
 * attempts.
 *
 * Every heartbeat of a budgeted call must go through {@link Attempt.beat} (it carries the count), and the call
 * heartbeats every second by itself, so a heartbeat timeout means the worker process is gone or its event loop is
 * blocked, never that a tool forgot to heartbeat. Not deterministic: runs in activities.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';

/** How many times each activity may fail with its own retryable error before the failure is final. */
export const GENUINE_ATTEMPTS = {
  modelStep: 5,
  executeTool: 3,
  preStepHook: 3,
  postToolHook: 3,
} as const;

/** Interval of the automatic heartbeat of a budgeted call. */
export const BEAT_EVERY_MS = 1000;

/** The key of the count in a call's heartbeat details (kept beside the details a provider or tool gives). */
export const FAILED_ATTEMPTS_KEY = 'agentSessions';

export interface Attempt {
  /** Failed attempts (own errors) before this one. */
  readonly failedBefore: number;
  /** Heartbeats with `details` (plus the count); later automatic heartbeats repeat them. */
  beat(details?: unknown): void;
  /** Heartbeats again with the last details given. */
  pulse(): void;
}

/** The count of own failures carried in heartbeat details (0 when there is none). */
export function failedAttemptsOf(details: unknown): number {
  if (!isPlainObject(details)) return 0;
  const mark = details[FAILED_ATTEMPTS_KEY];
  if (!isPlainObject(mark)) return 0;
  const n = mark.failedAttempts;
  return typeof n === 'number' && Number.isInteger(n) && n > 0 ? n : 0;
}

/**
 * Heartbeat details carrying `failed`: an object keeps its fields and gets the count beside them (so a provider's
 * `partialText` stays where readers look for it); anything else is wrapped as `{details, agentSessions}`. With no
 * failure yet, details go out unchanged (a key of ours a tool might have used is dropped).
 */
export function withFailedAttempts(details: unknown, failed: number): unknown {
  if (failed <= 0) {
    if (!isPlainObject(details) || !(FAILED_ATTEMPTS_KEY in details)) return details;
    const { [FAILED_ATTEMPTS_KEY]: _ours, ...rest } = details;
    return rest;
  }
  const mark = { [FAILED_ATTEMPTS_KEY]: { failedAttempts: failed } };
  if (isPlainObject(details)) return { ...details, ...mark };
  return details === undefined ? mark : { details, ...mark };
}

/**
 * Runs one attempt of a budgeted call. A retryable failure of the call's own (not a cancellation, not already
 * non-retryable, not of a type the retry policy never retries) is counted; the `budget`-th is rethrown as a
 * non-retryable ApplicationFailure with the same type, message, details and stack. Must run inside an activity.
 */
export async function withAttemptBudget<T>(
  budget: number,
  body: (attempt: Attempt) => Promise<T>,
): Promise<T> {
  const ctx = Context.current();
  const failedBefore = failedAttemptsOf(ctx.info.heartbeatDetails);
  let last: unknown;
  const attempt: Attempt = {
    failedBefore,
    beat(details) {
      last = details;
      ctx.heartbeat(withFailedAttempts(details, failedBefore));
    },
    pulse() {
      ctx.heartbeat(withFailedAttempts(last, failedBefore));
    },
  };
  const timer = setInterval(() => attempt.pulse(), BEAT_EVERY_MS);
  try {
    return await body(attempt);
  } catch (err) {
    if (!isOwnRetryableFailure(err, ctx)) throw err;
    const failed = failedBefore + 1;
    if (failed >= budget) throw finalFailure(err);
    // Flushed by the SDK before the failure is reported; the next attempt reads it.
    ctx.heartbeat(withFailedAttempts(last, failed));
    throw err;
  } finally {
    clearInterval(timer);
  }
}

/** Whether Temporal would retry `err` and it is the call's own failure (not a cancellation of the attempt). */
function isOwnRetryableFailure(err: unknown, ctx: Context): boolean {
  if (ctx.cancellationSignal.aborted || err instanceof CancelledFailure) return false;
  const failure = ApplicationFailure.fromError(err);
  if (failure.nonRetryable) return false;
  const never = ctx.info.retryPolicy?.nonRetryableErrorTypes ?? [];
  return !(failure.type && never.includes(failure.type));
}

/** The same failure as Temporal would record for `err`, made non-retryable. */
function finalFailure(err: unknown): ApplicationFailure {
  const failure = ApplicationFailure.fromError(err);
  const final = ApplicationFailure.create({
    message: failure.message,
    type: failure.type ?? undefined,
    nonRetryable: true,
    ...(failure.details ? { details: [...failure.details] } : {}),
    ...(failure.cause ? { cause: failure.cause } : {}),
    ...(failure.category ? { category: failure.category } : {}),
  });
  final.stack = failure.stack ?? '';
  return final;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
