/**
 * The session log's core events (wire, docs/protocol.md): each event's data written once, as a zod schema, and its
 * TypeScript type derived from it (`z.infer`), so the type and the check cannot drift. Clients and tests validate
 * what a session returns with `eventProblem`. Envelope `{seq, type, time, data}`: seq from 0 without gaps, time in
 * workflow milliseconds. Plugins may add types; consumers skip types they do not know. Lazy schemas (./lazy.ts).
 * Pure.
 */
import { z } from 'zod';
import { lazy } from './lazy';
import { BUDGET_LIMIT_KEYS, BudgetLimitsSchema, type BudgetKey } from './budget';
import { ToolResultContentSchema, UserMessageSchema, type UserMessage } from './messages';
import {
  AssistantMessageSchema,
  ErrorInfoSchema,
  ToolCallInfoSchema,
  TranscriptEntrySchema,
  type TranscriptEntry,
} from './entry';
import { describeZodIssue } from './util';

export { TranscriptEntrySchema } from './entry';
export type { AssistantMessage, ErrorInfo, ToolCallInfo } from './entry';

/**
 * `schema`, its output typed as `T`: a type written out where the inferred one is wider (the union of message
 * sources) or mutable (the frozen `UserMessage`). Checked: the schema's output must be assignable to `T`.
 */
function outputAs<T>(schema: z.ZodType<T>): z.ZodType<T> {
  return schema;
}
/** What a session has used of each budget limit (`BudgetUsed`). */
const budgetUsed = () =>
  z.object(
    Object.fromEntries(BUDGET_LIMIT_KEYS.map((k) => [k, z.number()])) as Record<BudgetKey, z.ZodNumber>,
  );
/** The turn and step fields of a step's events (a function: module-level schemas would be built eagerly, ./lazy.ts). */
const turnStep = () => ({ turn: z.number().int().min(1), step: z.number().int().min(1) });

export const InboxTargetSchema = lazy(() => z.enum(['next-turn', 'next-step']));
export type InboxTarget = z.infer<typeof InboxTargetSchema>;

export const SpliceDataSchema = lazy(() =>
  z.object({
    target: InboxTargetSchema,
    start: z.number().int().min(0),
    removedCount: z.number().int().min(1).optional(),
    inserted: z.array(outputAs<UserMessage>(UserMessageSchema)),
    outcome: z.literal('canceled').optional(),
  }),
);
export type SpliceData = z.infer<typeof SpliceDataSchema>;

/** A cancel's cause as the log records it (the `cancel` signal's input is ./wire.ts's narrower `CancelCauseSchema`). */
export const CancelCauseLogSchema = lazy(() =>
  z.discriminatedUnion('kind', [
    z.object({ kind: z.literal('user') }),
    z.object({ kind: z.literal('hook'), reason: z.string() }),
    z.object({ kind: z.literal('disposed') }),
  ]),
);
export type CancelCause = z.infer<typeof CancelCauseLogSchema>;

export const TurnEndReasonSchema = lazy(() =>
  z.discriminatedUnion('kind', [
    z.object({ kind: z.literal('completed') }),
    z.object({ kind: z.literal('aborted'), reason: CancelCauseLogSchema }),
    z.object({ kind: z.literal('blocked'), message: z.string().optional() }),
    z.object({ kind: z.literal('error'), error: ErrorInfoSchema }),
    z.object({ kind: z.literal('max-tokens') }),
  ]),
);
/** Why a turn ended (closed union). */
export type TurnEndReason = z.infer<typeof TurnEndReasonSchema>;

export const ToolsOfferedSchema = lazy(() =>
  z.object({
    names: z.array(z.string()),
    /** First 16 hex characters of the sha256 of the definitions' JSON, in the order offered. */
    hash: z.string(),
  }),
);
/** The tool definitions one model request carried (logged on its `assistant/message`). */
export type ToolsOffered = z.infer<typeof ToolsOfferedSchema>;

export const UsageSchema = lazy(() =>
  z.object({
    inputTokens: z.number().optional(),
    outputTokens: z.number().optional(),
    totalTokens: z.number().optional(),
    /** What the answer cost by the worker's price table (millionths of its currency); absent without a price. */
    costMicros: z.number().optional(),
  }),
);
/** What a provider reported for one answer. */
export type Usage = z.infer<typeof UsageSchema>;

/** An `assistant/message`: one model answer of a step. */
export const AssistantMessageDataSchema = lazy(() =>
  z.object({
    ...turnStep(),
    message: AssistantMessageSchema,
    usage: UsageSchema.optional(),
    /** The tool definitions the model request carried (names, and a hash of the definitions). */
    tools: ToolsOfferedSchema.optional(),
    interrupted: z.literal(true).optional(),
  }),
);

/** A `tool/result`: a tool call's content, or its failure. */
export const ToolResultDataSchema = lazy(() =>
  z.object({
    ...turnStep(),
    callId: z.string(),
    content: ToolResultContentSchema,
    error: ErrorInfoSchema.optional(),
  }),
);

export const ApprovalDecisionSchema = lazy(() => z.enum(['approve', 'deny']));
/** A caller's decision on a tool call that needs approval. */
export type ApprovalDecision = z.infer<typeof ApprovalDecisionSchema>;
export const ApprovalResolvedBySchema = lazy(() => z.enum(['caller', 'timeout', 'cancel']));
/** Who resolved an approval: a caller's `approve` update, the session's approval timeout, or a cancel/dispose. */
export type ApprovalResolvedBy = z.infer<typeof ApprovalResolvedBySchema>;

export const ApprovalRequestSchema = lazy(() =>
  z.object({
    ...turnStep(),
    callId: z.string(),
    name: z.string(),
    arguments: z.record(z.string(), z.unknown()),
  }),
);
/** A tool call waiting for a person's decision (rule 18 still orders its result among the batch's). */
export type ApprovalRequest = z.infer<typeof ApprovalRequestSchema>;

export const ApprovalResolutionSchema = lazy(() =>
  z.object({
    ...turnStep(),
    callId: z.string(),
    decision: ApprovalDecisionSchema,
    reason: z.string().optional(),
    by: ApprovalResolvedBySchema,
  }),
);
export type ApprovalResolution = z.infer<typeof ApprovalResolutionSchema>;

export const BudgetExceededSchema = lazy(() =>
  z.object({
    turn: z.number().int().min(1),
    /** The step that waits to open. */
    step: z.number().int().min(1),
    used: budgetUsed(),
    limits: BudgetLimitsSchema,
    /** The limits the next model step would breach. */
    over: z.array(z.enum(BUDGET_LIMIT_KEYS)),
    /** Whether the session waits for a decision (`ask`) or ends the turn at once (`stop`). */
    waits: z.boolean(),
  }),
);
/** The session's budget would be breached by the next model step (`budget/exceeded`). */
export type BudgetExceeded = z.infer<typeof BudgetExceededSchema>;

export const BudgetResolutionSchema = lazy(() =>
  z.object({
    ...turnStep(),
    decision: z.enum(['extend', 'deny']),
    /** The limits in force after the decision. */
    limits: BudgetLimitsSchema,
    reason: z.string().optional(),
    by: z.enum(['caller', 'cancel']),
  }),
);
/** How a budget pause ended (`budget/resolved`). */
export type BudgetResolution = z.infer<typeof BudgetResolutionSchema>;

export const SessionForkedSchema = lazy(() =>
  z.object({
    from: z.string(),
    /** Seq of the source's `turn/end` the fork was taken at. */
    throughSeq: z.number().int().min(0),
    messages: z.array(outputAs<TranscriptEntry>(TranscriptEntrySchema)),
  }),
);
/** Where a forked session came from, and the model-visible messages it starts with (`session/forked`). */
export type SessionForked = z.infer<typeof SessionForkedSchema>;

export const CompactionSummarySchema = lazy(() =>
  z.object({
    ...turnStep(),
    throughSeq: z.number().int().min(0),
    /** The seq of the latest direct message when it was logged before `throughSeq`: it stays, after the summary. */
    pinned: z.number().int().min(0).optional(),
    summary: z.string(),
    /** Tokens of the projection before and after (the compactor's tokenizer where one fits, else the estimate). */
    tokensBefore: z.number().int().min(0),
    tokensAfter: z.number().int().min(0),
    /** The compactor (`provider:model`). */
    model: z.string(),
    /**
     * What the compactor's provider reported for the summary (absent for a scripted compactor without steps): counted
     * in the session's usage totals under `model`, and by its budget's token and cost limits.
     */
    usage: UsageSchema.optional(),
  }),
);
/**
 * A compaction inside a step, before its model request (`compaction/summary`, src/domain/compaction.ts): from here
 * on the model sees `summary` in place of every entry logged up to `throughSeq`.
 */
export type CompactionSummary = z.infer<typeof CompactionSummarySchema>;

export const SubsessionStartedSchema = lazy(() =>
  z.object({
    ...turnStep(),
    callId: z.string(),
    /** The child session's id (`<parent>/sub/<callId>`). */
    session: z.string(),
  }),
);
/** A delegate call started its sub-session (`subsession/started`), right after the call's `tool/call`. */
export type SubsessionStarted = z.infer<typeof SubsessionStartedSchema>;

export const SubsessionEndedSchema = lazy(() =>
  SubsessionStartedSchema.extend({
    reason: TurnEndReasonSchema,
    /** What the child used (its budget ledger); the parent's budget counts it. */
    used: budgetUsed().optional(),
  }),
);
/** A delegate call's sub-session ended its turn, or could not run it (`subsession/ended`), before its result. */
export type SubsessionEnded = z.infer<typeof SubsessionEndedSchema>;

/** The schema of each core event's data, by event type; the order is the order of `CORE_EVENT_TYPES`. */
export const EventDataSchemas = {
  'agent/inbox/spliced': SpliceDataSchema,
  'turn/start': lazy(() => z.object({ turn: z.number().int().min(1) })),
  'turn/end': lazy(() => z.object({ turn: z.number().int().min(1), reason: TurnEndReasonSchema })),
  'step/start': lazy(() => z.object(turnStep())),
  'step/end': lazy(() => z.object(turnStep())),
  'user/message': lazy(() => z.object({ message: outputAs<UserMessage>(UserMessageSchema) })),
  'assistant/message': AssistantMessageDataSchema,
  'tool/call': lazy(() => z.object({ ...turnStep(), ...ToolCallInfoSchema.shape })),
  'tool/result': ToolResultDataSchema,
  'tool/approval-requested': ApprovalRequestSchema,
  'tool/approval-resolved': ApprovalResolutionSchema,
  'budget/exceeded': BudgetExceededSchema,
  'budget/resolved': BudgetResolutionSchema,
  'session/forked': SessionForkedSchema,
  'compaction/summary': CompactionSummarySchema,
  'subsession/started': SubsessionStartedSchema,
  'subsession/ended': SubsessionEndedSchema,
  'session/disposed': lazy(() => z.object({})),
};

/** Each core event's data, by event type (derived from `EventDataSchemas`). */
export type EventDataMap = { [K in keyof typeof EventDataSchemas]: z.infer<(typeof EventDataSchemas)[K]> };

export type CoreEventType = keyof EventDataMap;

export type SessionEvent = {
  [K in CoreEventType]: { seq: number; type: K; time: number; data: EventDataMap[K] };
}[CoreEventType];

export type EventOf<K extends CoreEventType> = Extract<SessionEvent, { type: K }>;

/** Payload of an event before it gets its envelope. */
export type EventDraft = { [K in CoreEventType]: { type: K; data: EventDataMap[K] } }[CoreEventType];

export const CORE_EVENT_TYPES = Object.keys(EventDataSchemas) as readonly CoreEventType[];

/** Whether an event type is one of ours (consumers skip the others). */
export function isCoreEventType(type: string): type is CoreEventType {
  return (CORE_EVENT_TYPES as readonly string[]).includes(type);
}

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
