/**
 * The turn loop (docs/semantics.md): wait for waking work (rules 7, 8, 23) → open the turn → claim (rule 10) →
 * pre-step waterfall (13–17) → step (./modelStep.ts; 18–21) → next boundary, until the turn ends (22, 24, 26);
 * cancel and dispose close the turn well-formed (27–31); between turns, at a quiet point, continue as new (33).
 * Every awaited part of a turn is followed by one gate (`turnOver`): a cancel that came meanwhile closes the turn
 * aborted, else a part that ended the turn closes it with its reason. Pure: a generator of effects.
 */
import { ErrorCodes } from '../codes';
import type { Failed } from '../effects';
import { afterPreStep, afterStep } from '../loop';
import { ask, messageOf, type DriverGenerator, type PartEnd } from './ask';
import { budgetGate } from './budgetGate';
import { DEFAULT_CONTINUE_AS_NEW_AFTER_EVENTS } from './carry';
import { modelStep, type StepContext } from './modelStep';
import type { ResolvedNames } from './resolvedNames';

/** What the loop works with: the step's parts, the name memo, and the driver's callbacks. */
export interface LoopContext extends StepContext {
  names: ResolvedNames;
  /** Whether a dispose was requested (the loop ends after the turn). */
  disposing(): boolean;
  /** Forgets an `upgrade` signal: it has woken the loop, which has looked for a new version. */
  clearUpgradeAsk(): void;
  /** Whether this is still a quiet point to continue as new at. */
  canContinueAsNew(): boolean;
  deps: {
    continueAsNewSuggested?(): boolean;
    newVersionWaits?(): boolean;
    onInternalError?(turn: number, err: unknown): void;
  };
}

/** The session's life: turns while there is waking work, continue-as-new at quiet points, dispose at the end. */
export function* runSession(ctx: LoopContext): DriverGenerator {
  const core = ctx.core;
  for (;;) {
    yield* ask({ type: 'wait-for-work' });
    if (ctx.disposing()) break;
    // A new version waits (docs/upgrades.md): move before the turn starts; the next run carries the waking message.
    // An `upgrade` signal only woke the loop to look.
    ctx.clearUpgradeAsk();
    if (ctx.canContinueAsNew() && ctx.deps.newVersionWaits?.() === true)
      yield* ask({ type: 'continue-as-new' });
    if (!core.hasWakingWork()) continue;
    yield* turn(ctx);
    if (shouldContinueAsNew(ctx)) yield* ask({ type: 'continue-as-new' });
  }
  // Dispose (rule 31): pending work is discarded, the session is idle here; the last event is session/disposed.
  core.cancel({ kind: 'disposed' }, false);
  core.dispose();
}

function shouldContinueAsNew(ctx: LoopContext): boolean {
  if (!ctx.canContinueAsNew()) return false;
  const budget = ctx.config.continueAsNewAfterEvents ?? DEFAULT_CONTINUE_AS_NEW_AFTER_EVENTS;
  if (ctx.deps.continueAsNewSuggested?.() === true || ctx.core.log.length >= budget) return true;
  return ctx.deps.newVersionWaits?.() === true;
}

/** One turn; every turn/start gets its turn/end (rule 24), whatever fails inside. */
function* turn(ctx: LoopContext): DriverGenerator {
  const core = ctx.core;
  const number = core.openTurn();
  try {
    yield* steps(ctx);
  } catch (err) {
    if (!core.turnOpen) throw err;
    if (abortedIfCanceling(ctx)) return;
    // A bug or an unexpected failure inside the loop still closes the turn; the session lives on (rule 26).
    ctx.deps.onInternalError?.(number, err);
    core.endTurn({ kind: 'error', error: { message: messageOf(err), code: ErrorCodes.Internal } });
  }
  if (core.turnOpen) abortedIfCanceling(ctx);
}

function* steps(ctx: LoopContext): DriverGenerator {
  const core = ctx.core;
  let boundary: 'turn' | 'step' = 'turn';
  let toolsOweRequest = false;
  for (;;) {
    const batch = core.claim(boundary);
    boundary = 'step';
    const hooks = yield* ctx.names.resolveHooks();
    if (turnOver(ctx, hooks)) return;
    const preStep = yield* ask({
      type: 'pre-step',
      request: {
        turn: core.turn,
        step: core.step + 1,
        batch,
        hooks: hooks.value.filter((h) => h.kind === 'pre-step').map((h) => h.name),
      },
    });
    if (turnOver(ctx, preStep)) return;
    const next = afterPreStep(preStep.decision, toolsOweRequest);
    if (next.kind === 'end') return core.endTurn(next.reason);
    const tools = yield* ctx.names.resolveTools();
    if (turnOver(ctx, tools)) return;
    const gate = yield* budgetGate(core, ctx.config);
    if (turnOver(ctx, gate)) return;
    core.startStep(next.messages);
    ctx.meter.stepStarted(next.messages.length);
    ctx.cursor.holdDelivered(next.messages);
    const step = yield* modelStep(ctx, tools.value, hooks.value);
    if (turnOver(ctx, step)) return;
    core.endStep();
    const after = afterStep({ ...step.outcome, nextStepPending: core.inbox.nextStep.length > 0 });
    if (after.kind === 'end') return core.endTurn(after.reason);
    toolsOweRequest = step.outcome.toolsOweRequest;
  }
}

/**
 * The gate after every awaited part of a turn: closes the turn `aborted` if a cancel came meanwhile (the first
 * cause), else with the part's end (`error` for a failed effect); says whether the turn is over.
 */
function turnOver<A extends { kind: string }>(
  ctx: LoopContext,
  answer: A,
): answer is Extract<A, Failed | PartEnd> {
  if (abortedIfCanceling(ctx)) return true;
  const a = answer as { kind: string } as Failed | PartEnd | { kind: 'other' };
  if (a.kind === 'failed') ctx.core.endTurn({ kind: 'error', error: a.error });
  else if (a.kind === 'end') ctx.core.endTurn(a.reason);
  else return false;
  return true;
}

/** If the turn is being cancelled, closes it `aborted` with the first cause (step/end first) and says so. */
function abortedIfCanceling(ctx: LoopContext): boolean {
  const cause = ctx.core.canceling;
  if (!cause || !ctx.core.turnOpen) return false;
  ctx.core.endTurn({ kind: 'aborted', reason: cause });
  return true;
}
