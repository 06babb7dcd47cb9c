/**
 * The tool calls of one assistant step, as part of the driver (rules 18, 19, 29): calls start in the model's order,
 * in parallel up to `maxParallel`, exclusive tools alone as barriers; `tool/call` is appended when a call starts;
 * results commit in the model's call order whatever order they settle in, each followed by its additional contexts
 * inserted at the end of `next-step`. Once the turn is canceling no further call starts: calls already started are
 * asked to cancel by the interpreter, settle, go through their post-tool hooks and commit like any other; calls
 * never started get synthetic `tool/call` + `tool/result` pairs with ABORTED_BEFORE_DISPATCH after them.
 * A call the session may not use, or whose arguments were not a JSON object, is answered at once and never runs.
 * Pure: a generator of effects (./effects.ts).
 */
import { ErrorCodes } from './codes';
import type { Answer, AnswerMap, Effect, ToolDescriptor, ToolExecResult } from './effects';
import type { ErrorInfo, ToolCallInfo } from './events';
import { makeUserMessage } from './messages';
import type { SessionCore } from './session';

export interface ToolBatchOptions {
  core: SessionCore;
  /** Tools this session may call, by name. */
  allowed: ReadonlyMap<string, ToolDescriptor>;
  maxParallel: number;
  /** The session's post-tool hooks, in order. */
  postToolHooks: readonly string[];
  newId(): string;
  /** Called right after a result commits whose content the tool activity's result holds (./entryRefs.ts). */
  onHeldResult?(callId: string): void;
}

export function* runToolBatch(
  calls: readonly ToolCallInfo[],
  opts: ToolBatchOptions,
): Generator<Effect, { concluded: boolean }, Answer> {
  const { core } = opts;
  const results: (ToolExecResult | undefined)[] = calls.map(() => undefined);
  /** Indexes of the results whose content the tool activity returned (`held` in their settled answer). */
  const held = new Set<number>();
  let committed = 0;
  let running = 0;
  let concluded = false;

  const commit = () => {
    for (let r = results[committed]; r && committed < calls.length; r = results[committed]) {
      const call = calls[committed]!;
      core.toolResult(call.callId, r.content, r.error);
      if (held.has(committed)) opts.onHeldResult?.(call.callId);
      for (const ctx of r.additionalContexts) {
        const message = makeUserMessage(
          { content: ctx.content, ...(ctx.id ? { id: ctx.id } : {}) },
          ctx.source ?? { kind: 'tool', callId: call.callId },
          opts.newId,
        );
        core.insertContext(message);
      }
      if (r.concludesTurn) concluded = true;
      committed += 1;
    }
  };
  /** Waits for one started call to settle and commits what can be committed. */
  function* settleOne(): Generator<Effect, void, Answer> {
    const settled = (yield { type: 'tool-settled' }) as AnswerMap['tool-settled'];
    results[settled.index] = settled.result;
    if (settled.held) held.add(settled.index);
    running -= 1;
    commit();
  }
  const answerAtOnce = (index: number, call: ToolCallInfo, error: ErrorInfo) => {
    core.toolCall(call);
    results[index] = failedResult(error);
    commit();
  };

  let firstNotStarted = calls.length;
  for (const [index, call] of calls.entries()) {
    if (core.canceling) {
      firstNotStarted = index;
      break;
    }
    const tool = opts.allowed.get(call.name);
    if (!tool) {
      answerAtOnce(index, call, {
        code: ErrorCodes.ToolNotAllowed,
        message: `tool "${call.name}" is not available in this session (available: ${[...opts.allowed.keys()].join(', ') || 'none'})`,
      });
      continue;
    }
    if (call.arguments === null) {
      answerAtOnce(index, call, {
        code: ErrorCodes.ToolInvalidArguments,
        message: `invalid arguments for ${call.name}: not a JSON object (${JSON.stringify((call.rawArguments ?? '').slice(0, 200))}); call ${call.name} again with a JSON object that matches its schema`,
      });
      continue;
    }
    while (running > 0 && (tool.exclusive || running >= opts.maxParallel)) yield* settleOne();
    if (core.canceling) {
      firstNotStarted = index;
      break;
    }
    core.toolCall(call);
    running += 1;
    yield {
      type: 'start-tool',
      start: {
        turn: core.turn,
        step: core.step,
        index,
        call: { ...call, arguments: call.arguments },
        postToolHooks: opts.postToolHooks,
      },
    };
    if (tool.exclusive) while (running > 0) yield* settleOne();
  }
  while (running > 0) yield* settleOne();
  commit();
  for (let index = firstNotStarted; index < calls.length; index++) {
    answerAtOnce(index, calls[index]!, {
      code: ErrorCodes.AbortedBeforeDispatch,
      message: 'the turn was cancelled before this call started',
    });
  }
  return { concluded };
}

/** A tool result that reports an error to the model. */
export function failedResult(error: ErrorInfo): ToolExecResult {
  return {
    content: [{ type: 'text', text: `error: ${error.message}` }],
    error,
    additionalContexts: [],
    concludesTurn: false,
  };
}
