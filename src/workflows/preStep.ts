/**
 * The pre-step waterfall (rule 13): listeners composed outside-in, each given the claimed batch and a `next()`
 * that runs the rest; the innermost default enters with the claimed batch. Workflow-side and deterministic:
 * listeners may await timers, conditions or activities, never do I/O themselves.
 */
import { uuid4 } from '@temporalio/workflow';
import type { PreStepDecision } from '../domain/loop';
import { makeUserMessage, type ContentBlock, type MessageSource, type UserMessage } from '../domain/messages';
import type { SessionConfig } from '../domain/wire';

export type { PreStepDecision };

export interface PreStepContext {
  sessionId: string;
  turn: number;
  /** Number of the step this pre-step would open. */
  step: number;
  /** The claimed batch, in claim order (next-step items, then the next-turn item at a turn boundary). */
  batch: readonly UserMessage[];
  config: Readonly<SessionConfig>;
}

export type PreStepListener = (
  ctx: PreStepContext,
  next: () => Promise<PreStepDecision>,
) => PreStepDecision | Promise<PreStepDecision>;

/** Runs the waterfall. Whatever a listener throws propagates (the turn then ends in error, rule 16). */
export function runPreStep(
  listeners: readonly PreStepListener[],
  ctx: PreStepContext,
): Promise<PreStepDecision> {
  const dispatch = async (i: number): Promise<PreStepDecision> => {
    const listener = listeners[i];
    if (!listener) return { kind: 'enter', messages: [...ctx.batch] };
    return listener(ctx, () => dispatch(i + 1));
  };
  return dispatch(0);
}

/** A new identified, frozen context message for a listener to return in `enter` (rule 7). */
export function contextMessage(
  content: string | ContentBlock[],
  source: MessageSource,
  id?: string,
): UserMessage {
  return makeUserMessage({ content, ...(id ? { id } : {}) }, source, uuid4);
}
