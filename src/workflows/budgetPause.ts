/**
 * The `await-budget` effect: the session waits at its budget until a caller's `budget` decision (./handlers.ts)
 * ends the pause. Deterministic (workflow sandbox).
 */
import { condition, isCancellation } from '@temporalio/workflow';
import type { Answer } from '../domain/effects';
import type { SessionDriver } from '../domain/driver';

/**
 * Waits durably (no activity, no timer, no polling) until a `budget` decision ends the pause; a cancel of the turn
 * ends the wait through the turn's cancellation scope, and the driver closes the turn aborted.
 */
export async function budgetPause(core: SessionDriver['core']): Promise<Answer> {
  try {
    await condition(() => core.budgetPaused === undefined || core.canceling !== undefined);
  } catch (err) {
    if (!isCancellation(err)) throw err;
  }
  return undefined;
}
