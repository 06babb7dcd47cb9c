/**
 * Hooks: named handlers registered on the worker that sessions select by name (SessionConfig.hooks). Two kinds —
 * `pre-step` (enter, optionally adding messages, or reject) and `post-tool` (additional contexts, or block with
 * feedback) — and three implementations behind one `call(input, ctx)`: a function, an HTTP endpoint, a command.
 * This file holds the shared shapes and the JSON protocol every implementation answers in. Runs in activities.
 */
import { z } from 'zod';
import { MessageInputSchema } from '../../domain/messages';
import { isName, NAME_MAX_CHARS, NAME_RULE } from '../../domain/names';
import type { HookKind, PostToolHookInput, PreStepHookInput } from '../types';

export type { HookKind, PostToolHookInput, PreStepHookInput };
export type HookInput = PreStepHookInput | PostToolHookInput;

/** What a hook implementation gets besides its input: the call's abort signal and a heartbeat. */
export interface HookCallContext {
  /** Aborted when the hook activity is cancelled (the turn was cancelled). */
  signal: AbortSignal;
  heartbeat(details?: unknown): void;
}

/** A registered hook: its name, its kind, what it is (for messages) and how to call it. */
export interface HookDefinition {
  readonly name: string;
  readonly kind: HookKind;
  /** e.g. `function`, `http POST http://127.0.0.1:8080/guard`, `command /usr/local/bin/guard`. */
  readonly describe: string;
  /** Returns the hook's raw answer (validated by the runner); throws HookError (or any error) on failure. */
  call(input: HookInput, ctx: HookCallContext): Promise<unknown>;
}

/** A hook failure with whether another attempt could help. */
export class HookError extends Error {
  override name = 'HookError';
  constructor(
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
  }
}

const MessagesSchema = z.array(MessageInputSchema).max(64, 'at most 64 messages');

/**
 * A pre-step hook's answer (JSON): `{"decision":"enter","messages":[…]}` enters, adding the messages after the
 * downstream batch (each `{id?, content, source?}`; the source defaults to `{kind:'hook', hook}`);
 * `{"decision":"reject","reason":"…"}` rejects. `{}` enters with nothing added.
 */
export const PreStepHookOutputSchema = z.object({
  decision: z.enum(['enter', 'reject']).default('enter'),
  messages: MessagesSchema.optional(),
  reason: z.string().max(4096).optional(),
});
export type PreStepHookOutput = z.input<typeof PreStepHookOutputSchema>;

/**
 * A post-tool hook's answer (JSON): `{"additionalContexts":[…]}` adds contexts after the tool's own;
 * `{"decision":"block","feedback":"…"}` replaces the result with the feedback and keeps only this hook's contexts.
 * `{}` changes nothing.
 */
export const PostToolHookOutputSchema = z
  .object({
    decision: z.enum(['continue', 'block']).default('continue'),
    feedback: z
      .string()
      .min(1)
      .max(256 * 1024)
      .optional(),
    additionalContexts: MessagesSchema.optional(),
  })
  .refine((o) => o.decision !== 'block' || o.feedback !== undefined, {
    path: ['feedback'],
    message: "required when decision is 'block'",
  });
export type PostToolHookOutput = z.input<typeof PostToolHookOutputSchema>;

/** Hook names follow tool names (what SessionConfig.hooks accepts). Throws an Error saying what a name may hold. */
export function checkHookName(name: string): void {
  if (!isName(name)) throw new Error(`hook name "${name}": ${NAME_RULE} (1–${NAME_MAX_CHARS})`);
}
