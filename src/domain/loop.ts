/**
 * The turn loop's decisions, as pure functions the workflow calls at each boundary (rules 13–17, 20, 21).
 * The workflow awaits activities between them; the property tests drive the same functions with random outcomes.
 */
import type { PreStepDecision } from './effects';
import type { TurnEndReason } from './events';
import type { UserMessage } from './messages';

export type { PreStepDecision };

/** What the loop does after pre-step decided. */
export type AfterPreStep = { kind: 'step'; messages: UserMessage[] } | { kind: 'end'; reason: TurnEndReason };

/**
 * After pre-step: reject ends the turn blocked (rule 15); an empty enter ends the turn completed unless tools owe
 * the model a request (rule 17); otherwise a step opens with the returned messages.
 */
export function afterPreStep(decision: PreStepDecision, toolsOweRequest: boolean): AfterPreStep {
  if (decision.kind === 'reject') {
    const reason: TurnEndReason = { kind: 'blocked' };
    if (decision.reason) reason.message = decision.reason;
    return { kind: 'end', reason };
  }
  if (decision.messages.length === 0 && !toolsOweRequest)
    return { kind: 'end', reason: { kind: 'completed' } };
  return { kind: 'step', messages: decision.messages };
}

/** What a finished step left behind. */
export interface StepOutcome {
  /** The assistant asked for tools whose results the model has not seen yet. */
  toolsOweRequest: boolean;
  /** A tool concluded the turn. */
  concluded: boolean;
  /** The model stopped at its token limit. */
  maxTokens: boolean;
  /** `next-step` is non-empty after the step's commits. */
  nextStepPending: boolean;
}

/** After a step: another pre-step boundary, or the end of the turn (rules 17, 20, 21). */
export function afterStep(
  outcome: StepOutcome,
): { kind: 'continue' } | { kind: 'end'; reason: TurnEndReason } {
  if (outcome.nextStepPending) return { kind: 'continue' };
  if (outcome.concluded) return { kind: 'end', reason: { kind: 'completed' } };
  if (outcome.toolsOweRequest) return { kind: 'continue' };
  if (outcome.maxTokens) return { kind: 'end', reason: { kind: 'max-tokens' } };
  return { kind: 'end', reason: { kind: 'completed' } };
}
