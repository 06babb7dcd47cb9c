/**
 * The `await-budget` effect: the session waits at its budget until a caller's `budget` decision (./handlers.ts)
 * ends the pause (the rule, shared with the in-memory interpreter: ../domain/driver/park.ts). Deterministic
 * (workflow sandbox).
 */
import { condition, isCancellation } from '@temporalio/workflow';
import { mayResume, type ParkView } from '../domain/driver/park';
import type { Answer } from '../domain/effects';

/**
 * Waits durably (no activity, no timer, no polling) until a `budget` decision ends the pause; a cancel of the turn
 * ends the wait through the turn's cancellation scope, and the driver closes the turn aborted.
 */
export async function budgetPause(driver: ParkView): Promise<Answer> {
  try {
    await condition(() => mayResume('await-budget', driver));
  } catch (err) {
    if (!isCancellation(err)) throw err;
  }
  return undefined;
}
