/**
 * Wire payloads (DESIGN.md "Wire protocol"): the start argument, signal and update arguments and query arguments,
 * as zod schemas. Pure. These are the only shapes accepted from outside; each error names the field.
 */
import { z } from 'zod';
import { MessageInputSchema, MessageSourceSchema } from './messages';

export const LANES = ['followup', 'steer', 'inject'] as const;
export type Lane = (typeof LANES)[number];
export const LaneSchema = z.enum(LANES);

/** Which inbox list a lane targets and whether it wakes an idle session (rule 1). */
export const LANE_RULES: Record<Lane, { target: 'next-turn' | 'next-step'; wakes: boolean }> = {
  followup: { target: 'next-turn', wakes: true },
  steer: { target: 'next-step', wakes: true },
  inject: { target: 'next-step', wakes: false },
};

export const ScriptedToolCallSchema = z.strictObject({
  name: z.string().min(1).max(128),
  args: z.record(z.string(), z.unknown()).default({}),
});

export const ScriptedStepSchema = z.strictObject({
  text: z.string().optional(),
  toolCalls: z.array(ScriptedToolCallSchema).max(64).optional(),
  delayMs: z.number().int().min(0).max(3_600_000).optional(),
  finish: z.enum(['stop', 'max-tokens']).optional(),
  fail: z.string().min(1).optional(),
});
export type ScriptedStep = z.infer<typeof ScriptedStepSchema>;

export const ModelSpecSchema = z.discriminatedUnion('provider', [
  z.strictObject({
    provider: z.literal('scripted'),
    steps: z.array(ScriptedStepSchema).max(10_000).default([]),
    /** Index of steps[0] in the session's script: the workflow sends a model request only the step it needs. */
    firstStep: z.number().int().min(0).optional(),
  }),
  z.strictObject({
    provider: z.enum(['openai', 'anthropic', 'openai-compatible']),
    model: z.string().min(1).max(256),
  }),
]);
export type ModelSpec = z.infer<typeof ModelSpecSchema>;

/**
 * Parses a model reference as a worker's configuration writes it: `scripted`, or `provider:model` (e.g.
 * `openai:gpt-4o-mini`, `openai-compatible:llama3.1`). Throws an Error saying the expected form.
 */
export function parseModelRef(ref: string): ModelSpec {
  const text = ref.trim();
  if (text === 'scripted') return { provider: 'scripted', steps: [] };
  const at = text.indexOf(':');
  const parsed = ModelSpecSchema.safeParse({
    provider: text.slice(0, Math.max(at, 0)),
    model: text.slice(at + 1),
  });
  if (at <= 0 || !parsed.success || parsed.data.provider === 'scripted') {
    throw new Error(
      `model "${ref}": expected "scripted" or "<openai|anthropic|openai-compatible>:<model>", e.g. "openai:gpt-4o-mini"`,
    );
  }
  return parsed.data;
}

const NameSchema = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9_.:-]+$/, 'letters, digits and _ . : - only');

/** Start argument (wire). All fields optional. */
export const SessionConfigSchema = z.strictObject({
  model: ModelSpecSchema.optional(),
  system: z
    .string()
    .max(256 * 1024)
    .optional(),
  tools: z.array(NameSchema).max(128).optional(),
  hooks: z.array(NameSchema).max(64).optional(),
  maxParallelToolCalls: z.number().int().min(1).max(100).optional(),
  /** Events a run may log before it continues as new at the next quiet point (default 10,000). */
  continueAsNewAfterEvents: z.number().int().min(10).max(1_000_000).optional(),
});
export type SessionConfig = z.infer<typeof SessionConfigSchema>;
export const DEFAULT_MAX_PARALLEL_TOOL_CALLS = 10;

/** `followup` / `steer` / `inject` signal argument (wire). */
export const LaneSignalSchema = z.strictObject({ message: MessageInputSchema });
export type LaneSignal = z.infer<typeof LaneSignalSchema>;

/** `deliver` update argument (wire). */
export const DeliverInputSchema = z.strictObject({ lane: LaneSchema, message: MessageInputSchema });
export type DeliverInput = z.infer<typeof DeliverInputSchema>;

/** `deliver` update result (wire). */
export interface DeliveryReceipt {
  messageId: string;
  lane: Lane;
  duplicate: boolean;
}

/** `cancel` signal argument (wire). */
export const CancelCauseSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('user') }),
  z.strictObject({ kind: z.literal('hook'), reason: z.string().max(4096) }),
]);
export const CancelInputSchema = z.strictObject({
  cause: CancelCauseSchema.optional(),
  keepInbox: z.boolean().optional(),
});
export type CancelInput = z.infer<typeof CancelInputSchema>;

/** `events` query argument (wire). */
export const EventsQuerySchema = z.strictObject({
  afterSeq: z.number().int().min(-1).optional(),
  limit: z.number().int().min(1).max(10_000).optional(),
});
export type EventsQuery = z.infer<typeof EventsQuerySchema>;
export const DEFAULT_EVENTS_LIMIT = 1000;

/** Inject requires an explicit source (wire: "required for inject"). */
export function laneInputProblem(lane: Lane, message: { source?: unknown }): string | undefined {
  if (lane === 'inject' && message.source === undefined) return 'message.source: required for inject';
  return undefined;
}

export { MessageSourceSchema };
