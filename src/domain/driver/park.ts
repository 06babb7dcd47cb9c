/**
 * The park/resume rule of the loop's waiting effects: whether the loop, having yielded one, may be answered now or
 * waits until something arrives (a delivery, a decision, a cancel). Both interpreters call it: the workflow's as the
 * predicate of a durable `condition` (src/workflows/interpreter.ts, src/workflows/budgetPause.ts), the in-memory
 * one (test/support/interpreter.ts) to park the generator until an arrival. Pure.
 */
import type { Effect } from '../effects';

/** What the rule reads of the driver (`SessionDriver` has it). */
export interface ParkView {
  hasWork(): boolean;
  readonly core: { readonly budgetPaused: unknown; readonly canceling: unknown };
}

/** What the rule reads of a tool batch that asks for its next settled call. */
export interface BatchView {
  /** Calls started and not yet settled. */
  running: number;
  /** An approval was resolved (or a cancel came) since the batch last asked. */
  woken: boolean;
}

/**
 * Whether the loop may be answered at an effect now: `wait-for-work` once the driver has waking work or a dispose
 * (rules 8, 31); `await-budget` once a `budget` decision ended the pause or a cancel reached the turn (the driver
 * then closes it aborted); `tool-settled` once a call can settle or a decision woke the batch; any other effect at
 * once (it is performed, not waited for).
 */
export function mayResume(
  effect: Effect['type'],
  driver: ParkView,
  batch: BatchView = { running: 0, woken: false },
): boolean {
  switch (effect) {
    case 'wait-for-work':
      return driver.hasWork();
    case 'await-budget':
      return driver.core.budgetPaused === undefined || driver.core.canceling !== undefined;
    case 'tool-settled':
      return batch.woken || batch.running > 0;
    default:
      return true;
  }
}
