/**
 * Sub-sessions (docs/protocol.md "Sub-sessions"): a `delegate` tool call starts a child session, a child workflow of
 * the same type, and its result is the answer of the child's one turn. This module is the pure part: the call's
 * arguments, the limits (depth, fan-out per turn), the child's id and config, and how the child's outcome becomes the
 * call's result. Pure.
 */
import { z } from 'zod';
import { lazy } from './lazy';
import type { BudgetUsed } from './budget';
import { ErrorCodes } from './codes';
import type { DelegateStart, ToolDescriptor } from './effects';
import type { ErrorInfo, TurnEndReason } from './events';
import { NameSchema } from './names';
import { failedResult, type ToolExecResult } from './results';
import { MAX_SUBSESSION_DEPTH, ScriptedStepSchema, type SessionConfig, type WaitOutcome } from './wire';

export { MAX_SUBSESSION_DEPTH, SubsessionLinkSchema, type SubsessionLink } from './wire';
export type { DelegateStart } from './effects';
/** How many sub-sessions one turn of a session may start. */
export const MAX_SUBSESSIONS_PER_TURN = 8;

/** The `delegate` tool's arguments (the worker's tool shows this schema to the model). */
export const DelegateArgsSchema = lazy(() =>
  z.strictObject({
    task: z
      .string()
      .min(1)
      .max(64 * 1024)
      .describe('What the sub-session should do; its answer is returned.'),
    tools: z
      .array(NameSchema)
      .max(128)
      .optional()
      .describe("Tools the sub-session may use (default: all of this session's tools it is allowed)."),
    script: z
      .array(ScriptedStepSchema)
      .max(100)
      .optional()
      .describe('Scripted model only (tests): the steps of the sub-session’s scripted model.'),
  }),
);
export type DelegateArgs = z.infer<typeof DelegateArgsSchema>;

export type DelegatePlan = { kind: 'start'; start: DelegateStart } | { kind: 'refused'; error: ErrorInfo };

/** The id of the child session a delegate call starts. */
export function subsessionId(parentId: string, callId: string): string {
  return `${parentId}/sub/${callId}`;
}

/** The depth of a session (0 for a root session). */
export function depthOf(config: SessionConfig): number {
  return config.subsession?.depth ?? 0;
}

/**
 * Plans one delegate call: refused (a TOOL_INVALID_ARGUMENTS or SUBSESSION_REFUSED result the model reads) or the
 * child to start. `allowed` are the parent's resolved tools; `startedInTurn` the sub-sessions the turn started.
 */
export function planDelegate(input: {
  parentId: string;
  config: SessionConfig;
  allowed: ReadonlyMap<string, ToolDescriptor>;
  call: { callId: string; name: string; arguments: Record<string, unknown> };
  startedInTurn: number;
}): DelegatePlan {
  const { parentId, config, allowed, call } = input;
  const parsed = DelegateArgsSchema.safeParse(call.arguments);
  if (!parsed.success)
    return refused(
      ErrorCodes.ToolInvalidArguments,
      `invalid arguments for ${call.name}: ${parsed.error.issues[0]?.path.join('.') || 'arguments'}: ${parsed.error.issues[0]?.message}`,
    );
  const depth = depthOf(config);
  if (depth >= MAX_SUBSESSION_DEPTH)
    return refused(
      ErrorCodes.SubsessionRefused,
      `sub-sessions nest at most ${MAX_SUBSESSION_DEPTH} deep; this session is at depth ${depth}`,
    );
  if (input.startedInTurn >= MAX_SUBSESSIONS_PER_TURN)
    return refused(
      ErrorCodes.SubsessionRefused,
      `a turn may start at most ${MAX_SUBSESSIONS_PER_TURN} sub-sessions; do the rest in a later turn`,
    );
  const args = parsed.data;
  const childDepth = depth + 1;
  const mayUse = (name: string) => {
    const tool = allowed.get(name);
    return tool !== undefined && (tool.kind !== 'delegate' || childDepth < MAX_SUBSESSION_DEPTH);
  };
  const asked = args.tools ?? [...allowed.keys()];
  const denied = (args.tools ?? []).filter((name) => !allowed.has(name));
  if (denied.length)
    return refused(
      ErrorCodes.SubsessionRefused,
      `a sub-session may only use this session's tools; not available here: ${denied.join(', ')}`,
    );
  const tools = asked.filter(mayUse);
  const model =
    config.model?.provider === 'scripted' ? { ...config.model, steps: args.script ?? [] } : config.model;
  const messageId = `task-${call.callId}`;
  const childConfig: SessionConfig = {
    ...(model ? { model } : {}),
    ...(config.system !== undefined ? { system: config.system } : {}),
    ...(tools.length ? { tools } : {}),
    ...(config.hooks ? { hooks: config.hooks } : {}),
    ...(config.maxParallelToolCalls ? { maxParallelToolCalls: config.maxParallelToolCalls } : {}),
    ...(config.labels ? { labels: config.labels } : {}),
    ...(config.approvals ? { approvals: config.approvals } : {}),
    ...(config.tenant !== undefined ? { tenant: config.tenant } : {}),
    subsession: { parent: parentId, callId: call.callId, depth: childDepth, messageId },
  };
  return {
    kind: 'start',
    start: {
      session: subsessionId(parentId, call.callId),
      config: childConfig,
      message: { id: messageId, content: args.task },
    },
  };
}

function refused(code: string, message: string): DelegatePlan {
  return { kind: 'refused', error: { code, message } };
}

/**
 * The delegate call's result from how the child ended: its answer when its turn completed, ABORTED when the
 * parent's turn was cancelled meanwhile (rule 29), a SUBSESSION_FAILED error otherwise. Also the `reason` that
 * `subsession/ended` records.
 */
export function delegateOutcome(outcome: SubsessionOutcome | undefined, canceled: boolean): DelegateSettled {
  const settled = delegateSettled(outcome, canceled);
  return outcome?.used ? { ...settled, used: outcome.used } : settled;
}

/** What a sub-session's workflow returns: its task's outcome and what it used (its budget ledger). */
export type SubsessionOutcome = WaitOutcome & { used?: BudgetUsed };

/** A settled delegate call: its result, how the child's turn ended, and what the child used. */
export interface DelegateSettled {
  result: ToolExecResult;
  reason: TurnEndReason;
  used?: BudgetUsed;
}

function delegateSettled(outcome: WaitOutcome | undefined, canceled: boolean): DelegateSettled {
  if (outcome?.status === 'ended' && outcome.reason.kind === 'completed')
    return {
      result: {
        content: [{ type: 'text', text: outcome.answer ?? '' }],
        additionalContexts: [],
        concludesTurn: false,
      },
      reason: outcome.reason,
    };
  const reason: TurnEndReason =
    outcome?.status === 'ended'
      ? outcome.reason
      : canceled
        ? { kind: 'aborted', reason: { kind: 'user' } }
        : {
            kind: 'error',
            error: {
              code: ErrorCodes.SubsessionFailed,
              message: 'the sub-session ended before its task ran',
            },
          };
  if (canceled)
    return {
      result: failedResult({
        code: ErrorCodes.Aborted,
        message: 'the turn was cancelled while the sub-session ran',
      }),
      reason,
    };
  return {
    result: failedResult({
      code: ErrorCodes.SubsessionFailed,
      message: `the sub-session ${describe(reason)}`,
    }),
    reason,
  };
}

/** The result and reason of a delegate call whose child could not be started or followed. */
export function delegateFailure(error: ErrorInfo): { result: ToolExecResult; reason: TurnEndReason } {
  const info = { code: ErrorCodes.SubsessionFailed, message: error.message };
  return { result: failedResult(info), reason: { kind: 'error', error: info } };
}

function describe(reason: TurnEndReason): string {
  switch (reason.kind) {
    case 'completed':
      return 'completed';
    case 'aborted':
      return `was aborted (${reason.reason.kind})`;
    case 'blocked':
      return `was blocked${reason.message ? `: ${reason.message}` : ''}`;
    case 'error':
      return `failed: ${reason.error.message} (${reason.error.code})`;
    case 'max-tokens':
      return 'stopped at the model’s token limit';
  }
}
