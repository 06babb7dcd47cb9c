/**
 * The zod schemas of every core event (./events.ts has their types): clients and tests validate what a session
 * returns with them (`eventProblem`). Lazy (./lazy.ts). Pure.
 */
import { z } from 'zod';
import { lazy } from './lazy';
import { BUDGET_LIMIT_KEYS, BudgetLimitsSchema, type BudgetKey } from './budget';
import { ErrorInfoSchema, ToolCallInfoSchema, TranscriptEntrySchema } from './entry';
import { isCoreEventType, type CoreEventType } from './events';
import { TextBlockSchema, ToolResultContentSchema, UserMessageSchema } from './messages';
import { describeZodIssue } from './util';

const budgetUsedShape = () =>
  Object.fromEntries(BUDGET_LIMIT_KEYS.map((k) => [k, z.number()])) as Record<BudgetKey, z.ZodNumber>;

const CancelCauseSchema = lazy(() =>
  z.discriminatedUnion('kind', [
    z.object({ kind: z.literal('user') }),
    z.object({ kind: z.literal('hook'), reason: z.string() }),
    z.object({ kind: z.literal('disposed') }),
  ]),
);
export const TurnEndReasonSchema = lazy(() =>
  z.discriminatedUnion('kind', [
    z.object({ kind: z.literal('completed') }),
    z.object({ kind: z.literal('aborted'), reason: CancelCauseSchema }),
    z.object({ kind: z.literal('blocked'), message: z.string().optional() }),
    z.object({ kind: z.literal('error'), error: ErrorInfoSchema }),
    z.object({ kind: z.literal('max-tokens') }),
  ]),
);
/** The turn and step fields of a step's events (a function: module-level schemas would be built eagerly, ./lazy.ts). */
const turnStep = () => ({ turn: z.number().int().min(1), step: z.number().int().min(1) });
/** A reported usage (`Usage`), optional where it appears. */
const usageSchema = () =>
  z
    .object({
      inputTokens: z.number().optional(),
      outputTokens: z.number().optional(),
      totalTokens: z.number().optional(),
      costMicros: z.number().optional(),
    })
    .optional();
export const EventDataSchemas = {
  'agent/inbox/spliced': lazy(() =>
    z.object({
      target: z.enum(['next-turn', 'next-step']),
      start: z.number().int().min(0),
      removedCount: z.number().int().min(1).optional(),
      inserted: z.array(UserMessageSchema),
      outcome: z.literal('canceled').optional(),
    }),
  ),
  'turn/start': lazy(() => z.object({ turn: z.number().int().min(1) })),
  'turn/end': lazy(() => z.object({ turn: z.number().int().min(1), reason: TurnEndReasonSchema })),
  'step/start': lazy(() => z.object(turnStep())),
  'step/end': lazy(() => z.object(turnStep())),
  'user/message': lazy(() => z.object({ message: UserMessageSchema })),
  'assistant/message': lazy(() =>
    z.object({
      ...turnStep(),
      message: z.object({
        id: z.string(),
        role: z.literal('assistant'),
        content: z.array(TextBlockSchema),
        toolCalls: z.array(ToolCallInfoSchema).optional(),
      }),
      usage: usageSchema(),
      tools: z.object({ names: z.array(z.string()), hash: z.string() }).optional(),
      interrupted: z.literal(true).optional(),
    }),
  ),
  'tool/call': lazy(() => z.object({ ...turnStep(), ...ToolCallInfoSchema.shape })),
  'tool/result': lazy(() =>
    z.object({
      ...turnStep(),
      callId: z.string(),
      content: ToolResultContentSchema,
      error: ErrorInfoSchema.optional(),
    }),
  ),
  'tool/approval-requested': lazy(() =>
    z.object({
      ...turnStep(),
      callId: z.string(),
      name: z.string(),
      arguments: z.record(z.string(), z.unknown()),
    }),
  ),
  'tool/approval-resolved': lazy(() =>
    z.object({
      ...turnStep(),
      callId: z.string(),
      decision: z.enum(['approve', 'deny']),
      reason: z.string().optional(),
      by: z.enum(['caller', 'timeout', 'cancel']),
    }),
  ),
  'budget/exceeded': lazy(() =>
    z.object({
      ...turnStep(),
      used: z.object(budgetUsedShape()),
      limits: BudgetLimitsSchema,
      over: z.array(z.enum(BUDGET_LIMIT_KEYS)),
      waits: z.boolean(),
    }),
  ),
  'budget/resolved': lazy(() =>
    z.object({
      ...turnStep(),
      decision: z.enum(['extend', 'deny']),
      limits: BudgetLimitsSchema,
      reason: z.string().optional(),
      by: z.enum(['caller', 'cancel']),
    }),
  ),
  'session/forked': lazy(() =>
    z.object({
      from: z.string(),
      throughSeq: z.number().int().min(0),
      messages: z.array(TranscriptEntrySchema),
    }),
  ),
  'compaction/summary': lazy(() =>
    z.object({
      ...turnStep(),
      throughSeq: z.number().int().min(0),
      pinned: z.number().int().min(0).optional(),
      summary: z.string(),
      tokensBefore: z.number().int().min(0),
      tokensAfter: z.number().int().min(0),
      model: z.string(),
      usage: usageSchema(),
    }),
  ),
  'subsession/started': lazy(() => z.object({ ...turnStep(), callId: z.string(), session: z.string() })),
  'subsession/ended': lazy(() =>
    z.object({
      ...turnStep(),
      callId: z.string(),
      session: z.string(),
      reason: TurnEndReasonSchema,
      used: z.object(budgetUsedShape()).optional(),
    }),
  ),
  'session/disposed': lazy(() => z.object({})),
} satisfies Record<CoreEventType, z.ZodType>;

export const EventEnvelopeSchema = lazy(() =>
  z.object({
    seq: z.number().int().min(0),
    type: z.string().min(1),
    time: z.number(),
    data: z.unknown(),
  }),
);

/** Validates one event: envelope always, data when the type is a core type. Returns a problem or undefined. */
export function eventProblem(event: unknown): string | undefined {
  const envelope = EventEnvelopeSchema.safeParse(event);
  if (!envelope.success) return `envelope: ${envelope.error.issues[0]?.message}`;
  const { type, data } = envelope.data;
  if (!isCoreEventType(type)) return undefined;
  const parsed = EventDataSchemas[type].safeParse(data);
  return parsed.success ? undefined : `${type} data: ${describeZodIssue(parsed.error.issues, 'data')}`;
}
