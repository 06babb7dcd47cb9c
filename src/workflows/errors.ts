/** Turns failures caught in the workflow into `{message, code}` data (outcomes are data, STYLE.md 6). */
import { ActivityFailure, ApplicationFailure, TemporalFailure } from '@temporalio/workflow';
import type { ErrorInfo } from '../domain/events';

export function errorInfo(err: unknown, fallbackCode: string): ErrorInfo {
  let cause: unknown = err;
  if (err instanceof ActivityFailure && err.cause) cause = err.cause;
  if (cause instanceof ApplicationFailure) {
    return { message: cause.message, code: cause.type ?? fallbackCode };
  }
  if (cause instanceof TemporalFailure) return { message: cause.message, code: fallbackCode };
  if (cause instanceof Error) return { message: cause.message, code: fallbackCode };
  return { message: String(cause), code: fallbackCode };
}
