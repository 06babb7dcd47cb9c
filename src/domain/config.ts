/**
 * The session's config (the start argument, wire; docs/protocol.md): the model and its script, tools and hooks,
 * approvals, budget, token budget (`context`), fork and sub-session links, as zod schemas. Pure; lazy (./lazy.ts).
 */
import { z } from 'zod';
import { lazy } from './lazy';
import { BUDGET_LIMIT_KEYS, BudgetLimitsSchema } from './budget';
import { TranscriptEntrySchema } from './entry';
import { NameSchema, ToolSelectorSchema } from './names';

export const ScriptedToolCallSchema = lazy(() =>
  z.strictObject({
    name: z.string().min(1).max(128),
    args: z.record(z.string(), z.unknown()).default({}),
  }),
);

export const ScriptedStepSchema = lazy(() =>
  z.strictObject({
    text: z.string().optional(),
    toolCalls: z.array(ScriptedToolCallSchema).max(64).optional(),
    delayMs: z.number().int().min(0).max(3_600_000).optional(),
    /** Reveal `text` word by word over this long, as a streaming provider would, before `delayMs`. */
    streamMs: z.number().int().min(0).max(600_000).optional(),
    finish: z.enum(['stop', 'max-tokens']).optional(),
    fail: z.string().min(1).optional(),
    /** Token usage the step reports, as a real provider would (usage totals, budgets). */
    usage: z
      .strictObject({
        inputTokens: z.number().int().min(0).max(1e9).optional(),
        outputTokens: z.number().int().min(0).max(1e9).optional(),
      })
      .optional(),
  }),
);
export type ScriptedStep = z.infer<typeof ScriptedStepSchema>;

/** The real model providers a session can name (`scripted` is the offline one). */
export const MODEL_PROVIDERS = ['openai', 'anthropic', 'openai-compatible'] as const;

/**
 * How the model may use the session's tools on a request (the AI SDK's `toolChoice`): `auto` (the provider's
 * default), `required` (must call one), `none` (must answer), or one named tool.
 */
export const ToolChoiceSchema = lazy(() =>
  z.union([
    z.enum(['auto', 'required', 'none']),
    z.strictObject({ type: z.literal('tool'), toolName: NameSchema }),
  ]),
);

export const ModelSpecSchema = lazy(() =>
  z.discriminatedUnion('provider', [
    z.strictObject({
      provider: z.literal('scripted'),
      steps: z.array(ScriptedStepSchema).max(10_000).default([]),
      toolChoice: ToolChoiceSchema.optional(),
    }),
    z.strictObject({
      provider: z.enum(MODEL_PROVIDERS),
      model: z.string().min(1).max(256),
      toolChoice: ToolChoiceSchema.optional(),
    }),
    /** A GGUF model the worker runs itself; `model` names one the worker's configuration allows (default: its own). */
    z.strictObject({
      provider: z.literal('local'),
      model: z.string().min(1).max(256).optional(),
      toolChoice: ToolChoiceSchema.optional(),
    }),
  ]),
);
export type ModelSpec = z.infer<typeof ModelSpecSchema>;

/**
 * Parses a model reference as a worker's configuration writes it: `scripted`, `local`, or `provider:model` (e.g.
 * `openai:gpt-4o-mini`, `openai-compatible:llama3.1`, `local:qwen`). Throws an Error saying the expected form.
 */
export function parseModelRef(ref: string): ModelSpec {
  const text = ref.trim();
  if (text === 'scripted') return { provider: 'scripted', steps: [] };
  if (text === 'local') return { provider: 'local' };
  const at = text.indexOf(':');
  const parsed = ModelSpecSchema.safeParse({
    provider: text.slice(0, Math.max(at, 0)),
    model: text.slice(at + 1),
  });
  if (at <= 0 || !parsed.success || parsed.data.provider === 'scripted') {
    throw new Error(
      `model "${ref}": expected "scripted", "local" or "<${[...MODEL_PROVIDERS, 'local'].join('|')}>:<model>", e.g. "openai:gpt-4o-mini"`,
    );
  }
  return parsed.data;
}

/** The reference {@link parseModelRef} reads back: `scripted`, `local`, `local:<name>` or `provider:model`. */
export function formatModelRef(spec: ModelSpec): string {
  if (spec.provider === 'scripted') return 'scripted';
  return spec.model ? `${spec.provider}:${spec.model}` : spec.provider;
}

/**
 * A session's model as operators see it: `provider:model` of its ModelSpec (`scripted`, `local`,
 * `openai:gpt-4o-mini`), `default` when it names none (the worker's default model answers). The
 * `AgentSessionModel` search attribute and the state's usage per model use it.
 */
export function modelLabel(model: { provider: string; model?: string } | undefined): string {
  if (!model) return 'default';
  return model.model ? `${model.provider}:${model.model}` : model.provider;
}

/** Longest `approvals.timeoutMs` a session may set: 30 days. */
export const MAX_APPROVAL_TIMEOUT_MS = 30 * 24 * 3_600_000;

/** Most characters of a fork's snapshot (its JSON), so a session's start stays well under Temporal's 2 MB payload. */
export const MAX_FORK_SNAPSHOT_CHARS = 1_000_000;

/**
 * A session forked from another (`SessionClient.fork`): the source, the turn boundary, and the source's model-visible
 * messages up to it. The messages are in the start argument of the fork's first run only (its history freezes them);
 * later runs carry `from` and `throughSeq`.
 */
export const ForkSchema = lazy(() =>
  z.strictObject({
    from: z.string().regex(/^[\x21-\x7e]{1,255}$/, 'printable ASCII without spaces, at most 255 characters'),
    throughSeq: z.number().int().min(0),
    messages: z
      .array(TranscriptEntrySchema)
      .refine((m) => JSON.stringify(m).length <= MAX_FORK_SNAPSHOT_CHARS, {
        message: `at most ${MAX_FORK_SNAPSHOT_CHARS} characters of JSON: fork at an earlier turn`,
      })
      .optional(),
  }),
);
export type Fork = z.infer<typeof ForkSchema>;

/**
 * The model-visible context's token budget (src/domain/compaction.ts): before a request that would pass
 * `compactAt × maxTokens` (default 0.8), the oldest part is summarised by `model` (default: the session's), keeping
 * the newest `keepRecent` entries (default 4), the latest direct message and what came after it verbatim.
 */
export const ContextConfigSchema = lazy(() =>
  z.strictObject({
    maxTokens: z.number().int().min(256).max(10_000_000),
    compactAt: z.number().min(0.1).max(1).optional(),
    keepRecent: z.number().int().min(0).max(1000).optional(),
    model: ModelSpecSchema.optional(),
  }),
);
export type ContextConfig = z.infer<typeof ContextConfigSchema>;
/** How deep sub-sessions nest: a session at this depth cannot delegate (the root session is depth 0). */
export const MAX_SUBSESSION_DEPTH = 2;
/** What a child session's config says of its parent (`SessionConfig.subsession`). */
export const SubsessionLinkSchema = lazy(() =>
  z.strictObject({
    /** The parent session's id. */
    parent: z.string().min(1).max(1024),
    /** The parent's `delegate` call. */
    callId: z.string().min(1).max(256),
    /** 1 for a child of a root session. */
    depth: z.number().int().min(1).max(MAX_SUBSESSION_DEPTH),
    /** Id of the followup that carries the task; the child ends after that message's turn. */
    messageId: z.string().min(1).max(256),
  }),
);
export type SubsessionLink = z.infer<typeof SubsessionLinkSchema>;

/** Longest tenant id (`SessionConfig.tenant`). */
export const MAX_TENANT_CHARS = 64;
/** A tenant id: 1–64 of lowercase letters, digits, `_` and `-`, starting with a letter or digit. */
export const TenantSchema = lazy(() =>
  z
    .string()
    .regex(
      /^[a-z0-9][a-z0-9_-]{0,63}$/,
      `a tenant id: 1–${MAX_TENANT_CHARS} of a-z 0-9 _ -, starting with a letter or digit`,
    ),
);

/** Start argument (wire). All fields optional. */
export const SessionConfigSchema = lazy(() =>
  z.strictObject({
    model: ModelSpecSchema.optional(),
    system: z
      .string()
      .max(256 * 1024)
      .optional(),
    tools: z.array(ToolSelectorSchema).max(128).optional(),
    hooks: z.array(NameSchema).max(64).optional(),
    maxParallelToolCalls: z.number().int().min(1).max(100).optional(),
    /** Events a run may log before it continues as new at the next quiet point (default 10,000). */
    continueAsNewAfterEvents: z.number().int().min(10).max(1_000_000).optional(),
    /** Labels an operator filters sessions by (`AgentSessionLabels`; `agent-sessions list --label`). */
    /**
     * The tenant the session belongs to (`AgentSessionTenant`; scoped tokens see only theirs). Absent: the single
     * default tenant. Set at start, kept by continue-as-new, forks and sub-sessions.
     */
    tenant: TenantSchema.optional(),
    labels: z
      .array(
        z
          .string()
          .min(1)
          .max(64)
          .regex(/^[A-Za-z0-9_.:=/@-]+$/, 'letters, digits and _ . : = / @ - only'),
      )
      .max(16)
      .optional(),
    /**
     * Tool calls that wait for a person's decision (`approve` update) before they run: the named tools, or every
     * tool (`'*'`). Adds to what the worker requires; a session can never lift a worker's requirement. With
     * `timeoutMs`, a call with no decision by then is answered APPROVAL_TIMEOUT.
     */
    approvals: z
      .strictObject({
        tools: z.union([z.literal('*'), z.array(NameSchema).max(128)]),
        timeoutMs: z.number().int().min(1).max(MAX_APPROVAL_TIMEOUT_MS).optional(),
      })
      .optional(),
    /** Set by `SessionClient.fork`: where this session was forked from, and (first run) the snapshot it starts with. */
    fork: ForkSchema.optional(),
    /** A token budget for what the model sees: older messages are compacted into a summary (docs/protocol.md). */
    context: ContextConfigSchema.optional(),
    /**
     * Spending limits. Before a model step the ledger says would breach one, the session logs `budget/exceeded` and
     * waits for a person's `budget` decision (extend or deny); with `onExceeded: 'stop'` it ends the turn at once with
     * error BUDGET_EXCEEDED.
     */
    budget: BudgetLimitsSchema.extend({ onExceeded: z.enum(['ask', 'stop']).optional() })
      .refine((b) => BUDGET_LIMIT_KEYS.some((k) => b[k] !== undefined), {
        message: `name at least one limit (${BUDGET_LIMIT_KEYS.join(', ')})`,
      })
      .optional(),
    /** Set on a sub-session (a child session a `delegate` call started): its parent, depth and task message. */
    subsession: SubsessionLinkSchema.optional(),
  }),
);
export type SessionConfig = z.infer<typeof SessionConfigSchema>;
export const DEFAULT_MAX_PARALLEL_TOOL_CALLS = 10;
