/**
 * Pre-step listeners for a user's own workflow module (the waterfall itself is src/domain/waterfall.ts): the types,
 * and `contextMessage` to build an identified, frozen context message with the workflow's deterministic ids.
 */
import { uuid4 } from '@temporalio/workflow';
import { makeUserMessage, type MessageSource, type TextBlock, type UserMessage } from '../domain/messages';

export type { PreStepDecision } from '../domain/effects';
export { runPreStep } from '../domain/waterfall';
export type { PreStepContext, PreStepListener } from '../domain/waterfall';

/** A new identified, frozen context message for a listener to return in `enter` (rule 7). */
export function contextMessage(
  content: string | TextBlock[],
  source: MessageSource,
  id?: string,
): UserMessage {
  return makeUserMessage({ content, ...(id ? { id } : {}) }, source, uuid4);
}
