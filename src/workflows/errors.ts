/**
 * Turns failures caught in the workflow into `{message, code}` data (outcomes are data, STYLE.md 6). The code is
 * always UPPER_SNAKE: an ApplicationFailure's type is converted (`HookFailed` → `HOOK_FAILED`), anything else gets
 * the caller's fallback code. {@link failed} is the answer of an effect that failed, marked when a cancel caused it.
 */
import { ActivityFailure, ApplicationFailure, isCancellation, TemporalFailure } from '@temporalio/workflow';
import { codeOf } from '../domain/codes';
import type { Failed } from '../domain/effects';
import type { ErrorInfo } from '../domain/events';

export function errorInfo(err: unknown, fallbackCode: string): ErrorInfo {
  let cause: unknown = err;
  if (err instanceof ActivityFailure && err.cause) cause = err.cause;
  if (cause instanceof ApplicationFailure) {
    return { message: cause.message, code: codeOf(cause.type ?? undefined, fallbackCode) };
  }
  if (cause instanceof TemporalFailure) return { message: cause.message, code: fallbackCode };
  if (cause instanceof Error) return { message: cause.message, code: fallbackCode };
  return { message: String(cause), code: fallbackCode };
}

/** The ApplicationFailure type of an activity's failure (or of the failure itself), if it has one. */
export function failureType(err: unknown): string | undefined {
  const cause = err instanceof ActivityFailure && err.cause ? err.cause : err;
  return cause instanceof ApplicationFailure ? (cause.type ?? undefined) : undefined;
}

/** An effect's failed answer: the failure as data, `canceled` when the turn's cancellation caused it. */
export function failed(err: unknown, fallbackCode: string): Failed {
  return {
    kind: 'failed',
    error: errorInfo(err, fallbackCode),
    ...(isCancellation(err) ? { canceled: true } : {}),
  };
}
