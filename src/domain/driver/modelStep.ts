/**
 * One step after its messages entered: the compaction check, the model request, the answer logged (an interrupted
 * call keeps its visible text, rule 29), then the tool calls it asked for (../toolBatch.ts), with delegate calls
 * planned against the turn's sub-session limit (../subsession.ts). Pure: a generator of effects.
 */
import { assistantMessage } from '../entryRefs';
import type { Answer, Effect, HookDescriptor, ToolDescriptor } from '../effects';
import type { StepOutcome } from '../loop';
import type { SessionCore } from '../session';
import { planDelegate, type DelegatePlan } from '../subsession';
import { runToolBatch } from '../toolBatch';
import { DEFAULT_MAX_PARALLEL_TOOL_CALLS, modelLabel, type SessionConfig } from '../wire';
import { ask, failedEnd, type PartEnd } from './ask';
import type { TokenMeter } from './contextMeter';
import type { RequestCursor } from './requestCursor';

export type StepResult = { kind: 'done'; outcome: Omit<StepOutcome, 'nextStepPending'> } | PartEnd;

/** What a step works with: the driver's parts. */
export interface StepContext {
  core: SessionCore;
  config: SessionConfig;
  /** The session's id (sub-session ids derive from it). */
  sessionId: string | undefined;
  newId(): string;
  cursor: RequestCursor;
  meter: TokenMeter;
  subsessions: SubsessionCount;
}

export function* modelStep(
  ctx: StepContext,
  allowed: ReadonlyMap<string, ToolDescriptor>,
  hooks: readonly HookDescriptor[],
): Generator<Effect, StepResult, Answer> {
  const { core, config } = ctx;
  const compaction = yield* ctx.meter.compactIfOver();
  if (compaction) return compaction;
  const call = ctx.cursor.modelCall(config, [...allowed.keys()]);
  const answer = yield* ask({ type: 'model', call });
  if (answer.kind === 'failed') return failedEnd(answer, core.canceling);
  const result = answer.result;
  if (result.interrupted) {
    // Visible output of a cancelled call stays in the log, marked interrupted (rule 29).
    if (result.text)
      core.assistant(
        { id: ctx.newId(), role: 'assistant', content: [{ type: 'text', text: result.text }] },
        { interrupted: true },
      );
    return {
      kind: 'end',
      reason: core.canceling ? { kind: 'aborted', reason: core.canceling } : { kind: 'completed' },
    };
  }
  const id = ctx.newId();
  core.assistant(assistantMessage(id, result), {
    ...(result.usage ? { usage: result.usage, model: modelLabel(config.model) } : {}),
    ...(result.tools ? { tools: result.tools } : {}),
  });
  ctx.cursor.hold({ in: 'model', requestIndex: call.requestIndex, id });
  ctx.meter.answered(result.usage);
  const maxTokens = result.finish === 'max-tokens';
  if (result.toolCalls.length === 0)
    return { kind: 'done', outcome: { toolsOweRequest: false, concluded: false, maxTokens } };
  const batch = yield* runToolBatch(result.toolCalls, {
    core,
    allowed,
    maxParallel: config.maxParallelToolCalls ?? DEFAULT_MAX_PARALLEL_TOOL_CALLS,
    postToolHooks: hooks.filter((h) => h.kind === 'post-tool').map((h) => h.name),
    ...(config.approvals ? { approvals: config.approvals } : {}),
    newId: ctx.newId,
    onHeldResult: (callId) => ctx.cursor.hold({ in: 'tool', callId }),
    planDelegate: (c) => ctx.subsessions.plan(ctx, c, allowed),
  });
  return { kind: 'done', outcome: { toolsOweRequest: true, concluded: batch.concluded, maxTokens } };
}

/** Sub-sessions the open turn has started (the per-turn limit). */
export class SubsessionCount {
  private counted = { turn: 0, started: 0 };

  /** Plans a delegate call (../subsession.ts); a started sub-session counts against the turn's limit. */
  plan(
    ctx: Pick<StepContext, 'core' | 'config' | 'sessionId'>,
    call: { callId: string; name: string; arguments: Record<string, unknown> },
    allowed: ReadonlyMap<string, ToolDescriptor>,
  ): DelegatePlan {
    const turn = ctx.core.turn;
    if (this.counted.turn !== turn) this.counted = { turn, started: 0 };
    const plan = planDelegate({
      parentId: ctx.sessionId ?? 'session',
      config: ctx.config,
      allowed,
      call,
      startedInTurn: this.counted.started,
    });
    if (plan.kind === 'start') this.counted.started += 1;
    return plan;
  }
}
