/**
 * The two extension chains of a step, as pure compositions over listener functions, so the workflow and the tests
 * run the same code. Pre-step (rule 13): listeners composed outside-in, each given the claimed batch and a `next()`
 * that runs the rest; the innermost default enters with the claimed batch. Post-tool (rule 19): the session's hooks
 * in order; their contexts follow the tool body's own; a block replaces the result with the hook's feedback and
 * keeps only that hook's contexts; a hook that fails withholds the tool's result. Pure: listeners may await, but
 * this file does no I/O.
 */
import { ErrorCodes } from './codes';
import type { ErrorInfo } from './events';
import type {
  ContextOutput,
  PostToolHookResult,
  PreStepDecision,
  PreStepRequest,
  ToolExecResult,
} from './effects';
import type { SessionConfig } from './wire';
import { failedResult } from './results';

export interface PreStepContext {
  sessionId: string;
  turn: number;
  /** Number of the step this pre-step would open. */
  step: number;
  /** The claimed batch, in claim order (next-step items, then the next-turn item at a turn boundary). */
  batch: PreStepRequest['batch'];
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

/** How one post-tool hook call ended: its decision, or the failure that replaced it. */
export type PostToolHookOutcome =
  { kind: 'ok'; result: PostToolHookResult } | { kind: 'failed'; error: ErrorInfo };

/**
 * The session's post-tool hooks over one settled result, as a generator: it yields each hook to call (with the
 * result the hook sees) and returns the result that commits. A hook that fails after its retries withholds the
 * tool's result: the model reads an error instead of content no hook has passed.
 */
export function* postToolChain(
  hooks: readonly string[],
  result: ToolExecResult,
): Generator<{ hook: string; result: ToolExecResult }, ToolExecResult, PostToolHookOutcome> {
  const added: ContextOutput[] = [];
  for (const hook of hooks) {
    const out = yield { hook, result };
    if (out.kind === 'failed')
      return failedResult({ code: ErrorCodes.PostToolHookFailed, message: out.error.message });
    if (out.result.kind === 'block') {
      return {
        content: [{ type: 'text', text: out.result.feedback }],
        error: { code: ErrorCodes.ToolBlocked, message: `blocked by hook ${hook}` },
        additionalContexts: out.result.additionalContexts,
        concludesTurn: false,
      };
    }
    added.push(...out.result.additionalContexts);
  }
  return added.length ? { ...result, additionalContexts: [...result.additionalContexts, ...added] } : result;
}

/** Runs `postToolChain` with an async hook call (the workflow's interpreter). */
export async function applyPostToolHooks(
  hooks: readonly string[],
  result: ToolExecResult,
  callHook: (hook: string, result: ToolExecResult) => Promise<PostToolHookOutcome>,
): Promise<ToolExecResult> {
  const chain = postToolChain(hooks, result);
  let next = chain.next();
  while (!next.done) next = chain.next(await callHook(next.value.hook, next.value.result));
  return next.value;
}
