/**
 * Worker hooks inside the workflow (the session's `hooks`, resolved by name on the worker). A pre-step hook is a
 * waterfall listener that calls the `preStepHook` activity with the claimed batch: reject returns at once; enter
 * runs the rest of the waterfall and adds the hook's messages after the downstream batch (rule 13). A failed hook
 * activity throws, so the turn ends in error with no step (rule 16). Post-tool hooks run after a tool's activity,
 * in the session's order: their contexts follow the body's own; a block replaces the result with the feedback and
 * keeps only that hook's contexts (rule 19). Deterministic (workflow sandbox).
 */
import { isCancellation, uuid4 } from '@temporalio/workflow';
import type { ContextOutput, ToolExecResult } from '../activities/types';
import { ErrorCodes } from '../contract';
import type { ToolCallInfo } from '../domain/events';
import { makeUserMessage } from '../domain/messages';
import { hookActivities } from './activities';
import { errorInfo } from './errors';
import type { PreStepListener } from './preStep';

/** The waterfall listener of one pre-step hook. */
export function preStepHookListener(hook: string): PreStepListener {
  return async (ctx, next) => {
    const out = await hookActivities.preStepHook({
      event: 'pre-step',
      hook,
      sessionId: ctx.sessionId,
      turn: ctx.turn,
      step: ctx.step,
      batch: [...ctx.batch],
    });
    if (out.kind === 'reject') return { kind: 'reject', reason: out.reason ?? `rejected by hook ${hook}` };
    const downstream = await next();
    if (downstream.kind !== 'enter' || out.messages.length === 0) return downstream;
    const added = out.messages.map((m) =>
      makeUserMessage(
        { content: m.content, ...(m.id ? { id: m.id } : {}) },
        m.source ?? { kind: 'hook', hook },
        uuid4,
      ),
    );
    return { kind: 'enter', messages: [...downstream.messages, ...added] };
  };
}

export interface PostToolHookCall {
  sessionId: string;
  turn: number;
  step: number;
  call: ToolCallInfo;
}

/**
 * The result of a tool call after the session's post-tool hooks. A hook that fails after its retries (or is
 * cancelled) withholds the tool's result: the model reads an error instead of content no hook has passed.
 */
export async function applyPostToolHooks(
  hooks: readonly string[],
  at: PostToolHookCall,
  result: ToolExecResult,
): Promise<ToolExecResult> {
  const added: ContextOutput[] = [];
  for (const hook of hooks) {
    let out;
    try {
      out = await hookActivities.postToolHook({
        event: 'post-tool',
        hook,
        sessionId: at.sessionId,
        turn: at.turn,
        step: at.step,
        call: { callId: at.call.callId, name: at.call.name, arguments: at.call.arguments },
        result: { content: result.content, ...(result.error ? { error: result.error } : {}) },
      });
    } catch (err) {
      const error = isCancellation(err)
        ? {
            code: ErrorCodes.Aborted,
            message: `the tool call was cancelled while post-tool hook ${hook} ran`,
          }
        : {
            code: ErrorCodes.PostToolHookFailed,
            message: errorInfo(err, ErrorCodes.PostToolHookFailed).message,
          };
      return {
        content: [{ type: 'text', text: `error: ${error.message}` }],
        error,
        additionalContexts: [],
        concludesTurn: false,
      };
    }
    if (out.kind === 'block') {
      return {
        content: [{ type: 'text', text: out.feedback }],
        error: { code: ErrorCodes.ToolBlocked, message: `blocked by hook ${hook}` },
        additionalContexts: out.additionalContexts,
        concludesTurn: false,
      };
    }
    added.push(...out.additionalContexts);
  }
  return added.length ? { ...result, additionalContexts: [...result.additionalContexts, ...added] } : result;
}
