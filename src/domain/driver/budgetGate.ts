/**
 * The budget gate before each model step: when the ledger says the step would breach the session's budget, log
 * `budget/exceeded` and wait for a person's `budget` decision (with `onExceeded: 'stop'`, do not wait). The ledger
 * and the pause live in the core (../core/ledger.ts); this is only the loop's side of it. Pure.
 */
import { ErrorCodes } from '../codes';
import type { Answer, Effect } from '../effects';
import type { SessionCore } from '../session';
import { budgetBreaches, type SessionConfig } from '../wire';
import { ask, type PartEnd } from './ask';

/**
 * Returns the turn's end when the budget is not extended; `pass` when the step may run (or a cancel came: the loop
 * then closes the turn aborted).
 */
export function* budgetGate(
  core: SessionCore,
  config: SessionConfig,
): Generator<Effect, PartEnd | { kind: 'pass' }, Answer> {
  const pass = { kind: 'pass' } as const;
  const limits = core.budgetLimits;
  if (!limits) return pass;
  const used = core.budgetUsed();
  const over = budgetBreaches(used, limits);
  if (!over.length) return pass;
  const waits = config.budget?.onExceeded !== 'stop';
  core.budgetExceeded(over, waits);
  if (waits) {
    yield* ask({ type: 'await-budget' });
    if (core.canceling) return pass;
    if (core.lastBudgetDecision === 'extend') return pass;
  }
  const what = over.map((k) => `${k} ${used[k]} of ${limits[k]}`).join(', ');
  return {
    kind: 'end',
    reason: {
      kind: 'error',
      error: {
        code: ErrorCodes.BudgetExceeded,
        message: `budget exceeded before step ${core.step + 1}: ${what}`,
      },
    },
  };
}
