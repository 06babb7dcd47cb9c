/**
 * Runs one hook call for an activity: calls the implementation, validates its answer against the protocol and
 * normalizes it to a PreStepHookResult / PostToolHookResult. Failures become named ApplicationFailures:
 * HookFailed (retryable unless the implementation said otherwise) and HookInvalidOutput (not retryable), each with
 * a message naming the hook and what it is. Does I/O through the hook.
 */
import { ApplicationFailure } from '@temporalio/common';
import { FailureTypes } from '../../contract';
import { toBlocks, type MessageInput } from '../../domain/messages';
import { describeZodIssue } from '../../domain/util';
import type {
  ContextOutput,
  PostToolHookInput,
  PostToolHookResult,
  PreStepHookInput,
  PreStepHookResult,
} from '../types';
import {
  HookError,
  PostToolHookOutputSchema,
  PreStepHookOutputSchema,
  type HookCallContext,
  type HookDefinition,
  type HookInput,
} from './types';

export async function runPreStepHook(
  hook: HookDefinition,
  input: PreStepHookInput,
  ctx: HookCallContext,
): Promise<PreStepHookResult> {
  const raw = await callHook(hook, input, ctx);
  const parsed = PreStepHookOutputSchema.safeParse(raw);
  if (!parsed.success) throw invalidOutput(hook, describeZodIssue(parsed.error.issues, 'answer'));
  const out = parsed.data;
  if (out.decision === 'reject') return { kind: 'reject', ...(out.reason ? { reason: out.reason } : {}) };
  return {
    kind: 'enter',
    messages: (out.messages ?? []).map((m) => contextOf(hook, m, { kind: 'hook', hook: hook.name })),
  };
}

export async function runPostToolHook(
  hook: HookDefinition,
  input: PostToolHookInput,
  ctx: HookCallContext,
): Promise<PostToolHookResult> {
  const raw = await callHook(hook, input, ctx);
  const parsed = PostToolHookOutputSchema.safeParse(raw);
  if (!parsed.success) throw invalidOutput(hook, describeZodIssue(parsed.error.issues, 'answer'));
  const out = parsed.data;
  const source = { kind: 'hook', hook: hook.name, callId: input.call.callId };
  const additionalContexts = (out.additionalContexts ?? []).map((m) => contextOf(hook, m, source));
  if (out.decision === 'block') return { kind: 'block', feedback: out.feedback!, additionalContexts };
  return { kind: 'continue', additionalContexts };
}

async function callHook(hook: HookDefinition, input: HookInput, ctx: HookCallContext): Promise<unknown> {
  if (hook.kind !== input.event) {
    throw ApplicationFailure.create({
      type: FailureTypes.HookFailed,
      nonRetryable: true,
      message: `hook "${hook.name}" is a ${hook.kind} hook, not a ${input.event} hook`,
    });
  }
  try {
    return await hook.call(input, ctx);
  } catch (err) {
    if (ctx.signal.aborted) throw err; // a cancelled call reports cancellation
    if (err instanceof ApplicationFailure) throw err;
    const retryable = err instanceof HookError ? err.retryable : true;
    const message = err instanceof Error ? err.message : String(err);
    throw ApplicationFailure.create({
      type: FailureTypes.HookFailed,
      nonRetryable: !retryable,
      message: `${hook.kind} hook "${hook.name}" (${hook.describe}) failed: ${message}`,
    });
  }
}

function invalidOutput(hook: HookDefinition, problem: string): ApplicationFailure {
  return ApplicationFailure.create({
    type: FailureTypes.HookInvalidOutput,
    nonRetryable: true,
    message: `${hook.kind} hook "${hook.name}" (${hook.describe}) answered an invalid decision: ${problem}`,
  });
}

/** A message a hook added; its source names the hook unless it names another producer (never the user). */
function contextOf(
  hook: HookDefinition,
  m: MessageInput,
  defaultSource: Record<string, unknown> & { kind: string },
): ContextOutput {
  if (m.source?.kind === 'user')
    throw invalidOutput(hook, "message.source: kind 'user' is reserved for direct input");
  return {
    content: toBlocks(m.content),
    source: (m.source ?? defaultSource) as ContextOutput['source'] & object,
    ...(m.id ? { id: m.id } : {}),
  };
}
