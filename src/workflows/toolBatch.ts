/**
 * Runs the tool calls of one assistant step (rules 18, 19): activities in parallel up to `maxParallel`, exclusive
 * tools alone as barriers; `tool/call` is appended when a call starts; results commit in the model's call order
 * whatever order the activities finish in, each followed by its additional contexts inserted into `next-step`.
 * Cancellation (rule 29): once the turn is canceling no further call starts; calls already started settle (their
 * activities are asked to cancel) and commit in order; calls never started get synthetic `tool/call` +
 * `tool/result` pairs with ABORTED_BEFORE_DISPATCH after them. The session's post-tool hooks run on each result
 * before it commits (./hooks). Deterministic (workflow sandbox).
 */
import { condition, isCancellation, uuid4 } from '@temporalio/workflow';
import type { ToolDescriptor, ToolExecResult } from '../activities/types';
import { ErrorCodes } from '../contract';
import type { ErrorInfo, ToolCallInfo } from '../domain/events';
import { makeUserMessage } from '../domain/messages';
import type { SessionCore } from '../domain/session';
import { toolActivities } from './activities';
import { errorInfo } from './errors';
import { applyPostToolHooks } from './hooks';

export interface ToolBatchOptions {
  sessionId: string;
  core: SessionCore;
  /** Tools this session may call, by name. */
  allowed: ReadonlyMap<string, ToolDescriptor>;
  maxParallel: number;
  /** Whether the turn is being cancelled. */
  canceling(): boolean;
  /** The session's post-tool hooks, in order; they see each result before it commits (rule 19). */
  postToolHooks?: readonly string[];
}

export interface ToolBatchOutcome {
  concluded: boolean;
}

export async function runToolBatch(
  calls: readonly ToolCallInfo[],
  opts: ToolBatchOptions,
): Promise<ToolBatchOutcome> {
  const { core } = opts;
  const results: (ToolExecResult | undefined)[] = calls.map(() => undefined);
  let committed = 0;
  let running = 0;
  let concluded = false;
  const inflight: Promise<void>[] = [];

  const commit = () => {
    for (let r = results[committed]; r && committed < calls.length; r = results[committed]) {
      const call = calls[committed]!;
      core.toolResult(call.callId, r.content, r.error);
      for (const ctx of r.additionalContexts) {
        const message = makeUserMessage(
          { content: ctx.content, ...(ctx.id ? { id: ctx.id } : {}) },
          ctx.source ?? { kind: 'tool', callId: call.callId },
          uuid4,
        );
        core.insertContext(message);
      }
      if (r.concludesTurn) concluded = true;
      committed += 1;
    }
  };

  const start = (index: number, call: ToolCallInfo): Promise<void> => {
    core.toolCall(call);
    running += 1;
    const { turn, step } = core;
    const hooks = opts.postToolHooks ?? [];
    let settled = toolActivities.executeTool({
      sessionId: opts.sessionId,
      turn,
      step,
      callId: call.callId,
      name: call.name,
      arguments: call.arguments,
    });
    if (hooks.length)
      settled = settled.then((r) =>
        applyPostToolHooks(hooks, { sessionId: opts.sessionId, turn, step, call }, r),
      );
    return settled
      .then(
        (r) => {
          results[index] = r;
        },
        (err: unknown) => {
          results[index] = failed(
            isCancellation(err)
              ? { code: ErrorCodes.Aborted, message: 'the tool call was cancelled while it ran' }
              : errorInfo(err, ErrorCodes.ToolFailed),
          );
        },
      )
      .finally(() => {
        running -= 1;
        commit();
      });
  };

  let firstNotStarted = calls.length;
  for (const [index, call] of calls.entries()) {
    if (opts.canceling()) {
      firstNotStarted = index;
      break;
    }
    const tool = opts.allowed.get(call.name);
    if (!tool) {
      core.toolCall(call);
      results[index] = failed({
        code: ErrorCodes.ToolNotAllowed,
        message: `tool "${call.name}" is not available in this session (available: ${[...opts.allowed.keys()].join(', ') || 'none'})`,
      });
      commit();
      continue;
    }
    if (tool.exclusive) await Promise.all(inflight);
    else await waitForCapacity(() => running < opts.maxParallel || opts.canceling());
    if (opts.canceling()) {
      firstNotStarted = index;
      break;
    }
    const started = start(index, call);
    if (tool.exclusive) await started;
    else inflight.push(started);
  }
  await Promise.all(inflight);
  commit();
  for (let index = firstNotStarted; index < calls.length; index++) {
    core.toolCall(calls[index]!);
    results[index] = failed({
      code: ErrorCodes.AbortedBeforeDispatch,
      message: 'the turn was cancelled before this call started',
    });
    commit();
  }
  return { concluded };
}

/** Waits for a free slot; a cancelled turn scope ends the wait (the caller then checks canceling). */
async function waitForCapacity(ready: () => boolean): Promise<void> {
  try {
    await condition(ready);
  } catch (err) {
    if (!isCancellation(err)) throw err;
  }
}

function failed(error: ErrorInfo): ToolExecResult {
  return {
    content: [{ type: 'text', text: `error: ${error.message}` }],
    error,
    additionalContexts: [],
    concludesTurn: false,
  };
}
