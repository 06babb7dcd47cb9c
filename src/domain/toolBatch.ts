/**
 * The tool calls of one assistant step, as part of the driver (rules 18, 19, 29): calls start in the model's order,
 * in parallel up to `maxParallel`, exclusive tools alone as barriers; `tool/call` is appended when a call starts;
 * results commit in the model's call order whatever order they settle in, each followed by its additional contexts
 * inserted at the end of `next-step`. Once the turn is canceling no further call starts: calls already started are
 * asked to cancel by the interpreter, settle, go through their post-tool hooks and commit like any other; calls
 * never started get synthetic `tool/call` + `tool/result` pairs with ABORTED_BEFORE_DISPATCH after them.
 * A call the session may not use, or whose arguments were not a JSON object, is answered at once and never runs.
 * A call that needs approval logs `tool/approval-requested` where it would have started and waits for its decision
 * while the other calls go on: approved, it starts when a slot is free (an exclusive one alone); denied or timed out,
 * it is answered DENIED / APPROVAL_TIMEOUT without running; a cancel resolves it and it is aborted before dispatch.
 * Pure: a generator of effects (./effects.ts).
 */
import { ErrorCodes } from './codes';
import type { Answer, AnswerMap, Effect, ToolDescriptor } from './effects';
import { failedResult, type ToolExecResult } from './results';
import type { ErrorInfo, ToolCallInfo } from './events';
import { makeUserMessage } from './messages';
import type { SessionCore } from './session';
import type { DelegateStart } from './effects';
import type { DelegatePlan } from './subsession';

export { failedResult } from './results';

export interface ToolBatchOptions {
  core: SessionCore;
  /** Tools this session may call, by name. */
  allowed: ReadonlyMap<string, ToolDescriptor>;
  maxParallel: number;
  /** The session's post-tool hooks, in order. */
  postToolHooks: readonly string[];
  /** What the session requires approval for (on top of the worker's requirements). */
  approvals?: { tools: readonly string[] | '*'; timeoutMs?: number };
  newId(): string;
  /** Called right after a result commits whose content the tool activity's result holds (./entryRefs.ts). */
  onHeldResult?(callId: string): void;
  /** Plans a call of a delegate tool when it would start (./subsession.ts): the child to start, or a refusal. */
  planDelegate?(call: { callId: string; name: string; arguments: Record<string, unknown> }): DelegatePlan;
}

export function* runToolBatch(
  calls: readonly ToolCallInfo[],
  opts: ToolBatchOptions,
): Generator<Effect, { concluded: boolean }, Answer> {
  const { core } = opts;
  const results: (ToolExecResult | undefined)[] = calls.map(() => undefined);
  /** Calls that started (or were answered at once). */
  const started = calls.map(() => false);
  /** Indexes of the results whose content the tool activity returned (`held` in their settled answer). */
  const held = new Set<number>();
  let committed = 0;
  let running = 0;
  let exclusiveRunning = false;
  let concluded = false;
  /** Calls waiting for a decision (callId → index), and approved calls not started yet (in decision order). */
  const awaiting = new Map<string, number>();
  const approved: number[] = [];
  /** Delegate calls that started their sub-session (index → child session id). */
  const subsessions = new Map<number, string>();

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
  const answerAtOnce = (index: number, error: ErrorInfo) => {
    started[index] = true;
    core.toolCall(calls[index]!);
    results[index] = failedResult(error);
    commit();
  };
  /** Moves resolved approvals on: approved calls queue to start, denied and timed-out ones are answered. */
  const collectDecisions = () => {
    for (const [callId, index] of [...awaiting]) {
      const approval = core.approvalOf(callId);
      if (approval?.status !== 'resolved') continue;
      awaiting.delete(callId);
      if (approval.decision === 'approve') approved.push(index);
      else if (approval.by === 'timeout')
        answerAtOnce(index, {
          code: ErrorCodes.ApprovalTimeout,
          message: `no decision on this call within ${opts.approvals?.timeoutMs ?? 0} ms; it did not run`,
        });
      else if (approval.by === 'caller')
        answerAtOnce(index, {
          code: ErrorCodes.Denied,
          message: `the call was denied${approval.reason ? `: ${approval.reason}` : ''}`,
        });
      // Resolved by a cancel: answered ABORTED_BEFORE_DISPATCH with the other calls that never started.
    }
  };
  /** Waits for a started call to settle or an approval to be resolved, and commits what can be committed. */
  function* wake(): Generator<Effect, void, Answer> {
    const answer = (yield { type: 'tool-settled' }) as AnswerMap['tool-settled'];
    if (answer.kind === 'settled') {
      const session = subsessions.get(answer.index);
      if (session !== undefined) {
        const error = answer.result.error;
        core.subsessionEnded(
          calls[answer.index]!.callId,
          session,
          answer.subsession?.reason ?? (error ? { kind: 'error', error } : { kind: 'completed' }),
          answer.subsession?.used,
        );
      }
      results[answer.index] = answer.result;
      if (answer.held) held.add(answer.index);
      running -= 1;
      if (running === 0) exclusiveRunning = false;
      commit();
    }
    collectDecisions();
  }
  function* start(index: number): Generator<Effect, void, Answer> {
    const call = calls[index]!;
    const tool = opts.allowed.get(call.name);
    const exclusive = tool?.exclusive === true;
    let delegate: DelegateStart | undefined;
    if (tool?.kind === 'delegate') {
      // A delegate call starts a sub-session, or is refused (limits, tools) with a result the model reads.
      const plan: DelegatePlan = opts.planDelegate?.({
        callId: call.callId,
        name: call.name,
        arguments: call.arguments ?? {},
      }) ?? {
        kind: 'refused',
        error: { code: ErrorCodes.SubsessionRefused, message: 'sub-sessions are not available here' },
      };
      if (plan.kind === 'refused') return answerAtOnce(index, plan.error);
      delegate = plan.start;
    }
    started[index] = true;
    core.toolCall(call);
    if (delegate) {
      core.subsessionStarted(call.callId, delegate.session);
      subsessions.set(index, delegate.session);
    }
    running += 1;
    if (exclusive) exclusiveRunning = true;
    yield {
      type: 'start-tool',
      start: {
        turn: core.turn,
        step: core.step,
        index,
        call: { ...call, arguments: call.arguments ?? {} },
        postToolHooks: opts.postToolHooks,
        ...(delegate ? { delegate } : {}),
      },
    };
  }
  const canStart = (index: number) => {
    if (running === 0) return true;
    return (
      !exclusiveRunning &&
      opts.allowed.get(calls[index]!.name)?.exclusive !== true &&
      running < opts.maxParallel
    );
  };

  const needsApproval = yield* approvalsNeeded(calls, opts);
  for (const [index, call] of calls.entries()) {
    if (core.canceling) break;
    const tool = opts.allowed.get(call.name);
    if (!tool) {
      answerAtOnce(index, {
        code: ErrorCodes.ToolNotAllowed,
        message: `tool "${call.name}" is not available in this session (available: ${[...opts.allowed.keys()].join(', ') || 'none'})`,
      });
      continue;
    }
    if (call.arguments === null) {
      answerAtOnce(index, {
        code: ErrorCodes.ToolInvalidArguments,
        message: `invalid arguments for ${call.name}: not a JSON object (${JSON.stringify((call.rawArguments ?? '').slice(0, 200))}); call ${call.name} again with a JSON object that matches its schema`,
      });
      continue;
    }
    if (needsApproval.has(call.callId)) {
      // The call waits for its decision; the other calls of the batch go on (its result still commits in order).
      core.requestApproval({ callId: call.callId, name: call.name, arguments: call.arguments });
      awaiting.set(call.callId, index);
      const timeoutMs = opts.approvals?.timeoutMs;
      yield {
        type: 'await-approval',
        approval: { callId: call.callId, ...(timeoutMs !== undefined ? { timeoutMs } : {}) },
      };
      continue;
    }
    while (!canStart(index)) yield* wake();
    if (core.canceling) break;
    yield* start(index);
    if (tool.exclusive) while (running > 0) yield* wake();
  }
  // Approved calls start as slots allow, until every call has started or been answered.
  while (!core.canceling && (running > 0 || awaiting.size > 0 || approved.length > 0)) {
    if (approved.length > 0 && canStart(approved[0]!)) yield* start(approved.shift()!);
    else yield* wake();
  }
  // Canceling: what waits for a decision is resolved by the cancel (rule 29); started calls settle and commit.
  for (const callId of awaiting.keys()) core.resolveApproval(callId, 'deny', 'cancel');
  awaiting.clear();
  while (running > 0) yield* wake();
  commit();
  for (const [index] of calls.entries()) {
    if (started[index]) continue;
    answerAtOnce(index, {
      code: ErrorCodes.AbortedBeforeDispatch,
      message: 'the turn was cancelled before this call started',
    });
  }
  return { concluded };
}

/**
 * The calls that wait for a decision before they run: the worker requires it for their tool (always, or when its
 * predicate says so), or the session does. A predicate the worker could not answer requires approval (fail closed).
 */
function* approvalsNeeded(
  calls: readonly ToolCallInfo[],
  opts: ToolBatchOptions,
): Generator<Effect, Set<string>, Answer> {
  const sessionTools = opts.approvals?.tools;
  const needs = new Set<string>();
  const check: { callId: string; name: string; arguments: Record<string, unknown> }[] = [];
  for (const call of calls) {
    const tool = opts.allowed.get(call.name);
    if (!tool || call.arguments === null) continue;
    if (tool.approval === 'always' || sessionTools === '*' || sessionTools?.includes(call.name))
      needs.add(call.callId);
    else if (tool.approval === 'check')
      check.push({ callId: call.callId, name: call.name, arguments: call.arguments });
  }
  if (check.length === 0) return needs;
  const answer = (yield {
    type: 'check-approvals',
    check: { turn: opts.core.turn, step: opts.core.step, calls: check },
  }) as AnswerMap['check-approvals'];
  const required = answer.kind === 'ok' ? new Set(answer.value) : new Set(check.map((c) => c.callId));
  for (const c of check) if (required.has(c.callId)) needs.add(c.callId);
  return needs;
}
