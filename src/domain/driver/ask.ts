/**
 * The driver's vocabulary for waiting: `ask` yields one effect and returns its typed answer, and a part of a turn
 * either goes on or ends the turn with a reason (`PartEnd`). How a failed or cancelled effect ends the turn is
 * decided here, once, for every part that awaits one. Pure.
 */
import type { Answer, AnswerMap, Effect, Failed } from '../effects';
import type { CancelCause, TurnEndReason } from '../events';

export type DriverGenerator = Generator<Effect, void, Answer>;

/** Yields one effect and returns its typed answer (the interpreter answers each effect type with its own shape). */
export function* ask<T extends Effect>(effect: T): Generator<Effect, AnswerMap[T['type']], Answer> {
  return (yield effect) as AnswerMap[T['type']];
}

/** A part of a turn that ends it, with the reason. */
export interface PartEnd {
  kind: 'end';
  reason: TurnEndReason;
}

/**
 * How a failed effect ends the turn: `aborted` when the cancel in progress interrupted it, else `error` with the
 * failure (a model call, a compaction).
 */
export function failedEnd(answer: Failed, canceling: CancelCause | undefined): PartEnd {
  if (answer.canceled && canceling) return { kind: 'end', reason: { kind: 'aborted', reason: canceling } };
  return { kind: 'end', reason: { kind: 'error', error: answer.error } };
}

export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
