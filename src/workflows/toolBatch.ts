/**
 * Runs the tool calls of one assistant step (rules 18, 19): activities in parallel up to `maxParallel`, exclusive
 * tools alone as barriers; `tool/call` is appended when a call starts; results commit in the model's call order
 * whatever order the activities finish in, each followed by its additional contexts inserted into `next-step`.
 * Deterministic (workflow sandbox).
 */
import { condition, uuid4 } from '@temporalio/workflow';
import type { ToolDescriptor, ToolExecResult } from '../activities/types';
import { ErrorCodes } from '../contract';
import type { ErrorInfo, ToolCallInfo } from '../domain/events';
import { makeUserMessage } from '../domain/messages';
import type { SessionCore } from '../domain/session';
import { toolActivities } from './activities';
import { errorInfo } from './errors';

export interface ToolBatchOptions {
  sessionId: string;
  core: SessionCore;
  /** Tools this session may call, by name. */
  allowed: ReadonlyMap<string, ToolDescriptor>;
  maxParallel: number;
}

export interface ToolBatchOutcome {
  concluded: boolean;
}

export async function runToolBatch(calls: readonly ToolCallInfo[], opts: ToolBatchOptions): Promise<ToolBatchOutcome> {
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
    return toolActivities
      .executeTool({ sessionId: opts.sessionId, turn, step, callId: call.callId, name: call.name, arguments: call.arguments })
      .then(
        (r) => {
          results[index] = r;
        },
        (err: unknown) => {
          results[index] = failed(errorInfo(err, ErrorCodes.ToolFailed));
        },
      )
      .finally(() => {
        running -= 1;
        commit();
      });
  };

  for (const [index, call] of calls.entries()) {
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
    if (tool.exclusive) {
      await Promise.all(inflight);
      await start(index, call);
      continue;
    }
    await condition(() => running < opts.maxParallel);
    inflight.push(start(index, call));
  }
  await Promise.all(inflight);
  commit();
  return { concluded };
}

function failed(error: ErrorInfo): ToolExecResult {
  return { content: [{ type: 'text', text: `error: ${error.message}` }], error, additionalContexts: [], concludesTurn: false };
}
