/**
 * Worker hooks inside the workflow (the session's `hooks`, resolved by name on the worker). A pre-step hook is a
 * waterfall listener that calls the `preStepHook` activity with the claimed batch: reject returns at once; enter
 * runs the rest of the waterfall and adds the hook's messages after the downstream batch (rule 13). A failed hook
 * activity throws, so the turn ends in error with no step (rule 16). A post-tool hook call is one activity whose
 * decision (or failure) src/domain/waterfall.ts folds into the tool's result (rule 19). Deterministic.
 */
import { uuid4 } from '@temporalio/workflow';
import { ErrorCodes } from '../contract';
import type { ToolExecResult, ToolStart } from '../domain/effects';
import { makeUserMessage } from '../domain/messages';
import type { PostToolHookOutcome, PreStepListener } from '../domain/waterfall';
import { hookActivities } from './activities';
import { errorInfo } from './errors';

/** The waterfall listener of one pre-step hook. */
export function preStepHookListener(hook: string): PreStepListener {
  return async (ctx, next) => {
    const out = await hookActivities.preStepHook.executeWithOptions({ summary: `hook pre-step ${hook}` }, [
      {
        event: 'pre-step',
        hook,
        sessionId: ctx.sessionId,
        turn: ctx.turn,
        step: ctx.step,
        batch: [...ctx.batch],
      },
    ]);
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

/** One post-tool hook call on a settled tool result; a failure after its retries is returned as data. */
export async function postToolHookCall(
  hook: string,
  at: ToolStart & { sessionId: string },
  result: ToolExecResult,
): Promise<PostToolHookOutcome> {
  try {
    const decision = await hookActivities.postToolHook.executeWithOptions(
      { summary: `hook post-tool ${hook} #${at.call.callId}` },
      [
        {
          event: 'post-tool',
          hook,
          sessionId: at.sessionId,
          turn: at.turn,
          step: at.step,
          call: { callId: at.call.callId, name: at.call.name, arguments: at.call.arguments },
          result: { content: result.content, ...(result.error ? { error: result.error } : {}) },
        },
      ],
    );
    return { kind: 'ok', result: decision };
  } catch (err) {
    return { kind: 'failed', error: errorInfo(err, ErrorCodes.PostToolHookFailed) };
  }
}
