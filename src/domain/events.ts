/**
 * The session log's core event types (wire, docs/protocol.md) as TypeScript types and zod schemas.
 * Envelope `{seq, type, time, data}`: seq from 0 without gaps, time in workflow milliseconds. Plugins may add types;
 * consumers skip types they do not know. Pure.
 */
import { z } from 'zod';
import { lazy } from './lazy';
import {
  BUDGET_LIMIT_KEYS,
  BudgetLimitsSchema,
  type BudgetKey,
  type BudgetLimits,
  type BudgetUsed,
} from './budget';
import { describeZodIssue } from './util';
import {
  MessageSourceSchema,
  TextBlockSchema,
  ToolResultContentSchema,
  UserMessageSchema,
  type ContentBlock,
  type TextBlock,
  type UserMessage,
} from './messages';
import type { TranscriptEntry } from './transcript';

export type InboxTarget = 'next-turn' | 'next-step';

export interface SpliceData {
  target: InboxTarget;
  start: number;
  removedCount?: number;
  inserted: UserMessage[];
  outcome?: 'canceled';
}

export type CancelCause = { kind: 'user' } | { kind: 'hook'; reason: string } | { kind: 'disposed' };

export interface ErrorInfo {
  message: string;
  code: string;
}

/** Why a turn ended (closed union). */
export type TurnEndReason =
  | { kind: 'completed' }
  | { kind: 'aborted'; reason: CancelCause }
  | { kind: 'blocked'; message?: string }
  | { kind: 'error'; error: ErrorInfo }
  | { kind: 'max-tokens' };

/**
 * One tool call of an assistant message. `arguments` is the parsed JSON object, or `null` when the model's
 * arguments were not a JSON object; then `rawArguments` holds the text as the model wrote it, and the call is
 * answered with a TOOL_INVALID_ARGUMENTS result without running.
 */
export interface ToolCallInfo {
  callId: string;
  name: string;
  arguments: Record<string, unknown> | null;
  rawArguments?: string;
}

export interface AssistantMessage {
  id: string;
  role: 'assistant';
  content: TextBlock[];
  toolCalls?: ToolCallInfo[];
}

/** The tool definitions one model request carried (logged on its `assistant/message`). */
export interface ToolsOffered {
  names: string[];
  /** First 16 hex characters of the sha256 of the definitions' JSON, in the order offered. */
  hash: string;
}

export interface Usage {
  inputTokens?: number;
  outputTokens?: number;
  totalTokens?: number;
  /** What the answer cost by the worker's price table (millionths of its currency); absent without a price. */
  costMicros?: number;
}

/** A caller's decision on a tool call that needs approval. */
export type ApprovalDecision = 'approve' | 'deny';
/** Who resolved an approval: a caller's `approve` update, the session's approval timeout, or a cancel/dispose. */
export type ApprovalResolvedBy = 'caller' | 'timeout' | 'cancel';

/** A tool call waiting for a person's decision (rule 18 still orders its result among the batch's). */
export interface ApprovalRequest {
  turn: number;
  step: number;
  callId: string;
  name: string;
  arguments: Record<string, unknown>;
}

export interface ApprovalResolution {
  turn: number;
  step: number;
  callId: string;
  decision: ApprovalDecision;
  reason?: string;
  by: ApprovalResolvedBy;
}

/** The session's budget would be breached by the next model step (`budget/exceeded`). */
export interface BudgetExceeded {
  turn: number;
  /** The step that waits to open. */
  step: number;
  used: BudgetUsed;
  limits: BudgetLimits;
  /** The limits the next model step would breach. */
  over: BudgetKey[];
  /** Whether the session waits for a decision (`ask`) or ends the turn at once (`stop`). */
  waits: boolean;
}

/** How a budget pause ended (`budget/resolved`). */
export interface BudgetResolution {
  turn: number;
  step: number;
  decision: 'extend' | 'deny';
  /** The limits in force after the decision. */
  limits: BudgetLimits;
  reason?: string;
  by: 'caller' | 'cancel';
}

/** Where a forked session came from, and the model-visible messages it starts with (`session/forked`). */
export interface SessionForked {
  from: string;
  /** Seq of the source's `turn/end` the fork was taken at. */
  throughSeq: number;
  messages: TranscriptEntry[];
}

/**
 * A compaction inside a step, before its model request (`compaction/summary`, src/domain/compaction.ts): from here
 * on the model sees `summary` in place of every entry logged up to `throughSeq`.
 */
export interface CompactionSummary {
  turn: number;
  step: number;
  throughSeq: number;
  /** The seq of the latest direct message when it was logged before `throughSeq`: it stays, after the summary. */
  pinned?: number;
  summary: string;
  /** Tokens of the projection before and after (the compactor's tokenizer where one fits, else the estimate). */
  tokensBefore: number;
  tokensAfter: number;
  /** The compactor (`provider:model`). */
  model: string;
  /**
   * What the compactor's provider reported for the summary (absent for a scripted compactor without steps): counted
   * in the session's usage totals under `model`, and by its budget's token and cost limits.
   */
  usage?: Usage;
}

/** A delegate call started its sub-session (`subsession/started`), right after the call's `tool/call`. */
export interface SubsessionStarted {
  turn: number;
  step: number;
  callId: string;
  /** The child session's id (`<parent>/sub/<callId>`). */
  session: string;
}

/** A delegate call's sub-session ended its turn, or could not run it (`subsession/ended`), before its result. */
export interface SubsessionEnded extends SubsessionStarted {
  reason: TurnEndReason;
  /** What the child used (its budget ledger); the parent's budget counts it. */
  used?: BudgetUsed;
}

export interface EventDataMap {
  'agent/inbox/spliced': SpliceData;
  'turn/start': { turn: number };
  'turn/end': { turn: number; reason: TurnEndReason };
  'step/start': { turn: number; step: number };
  'step/end': { turn: number; step: number };
  'user/message': { message: UserMessage };
  'assistant/message': {
    turn: number;
    step: number;
    message: AssistantMessage;
    usage?: Usage;
    /** The tool definitions the model request carried (names, and a hash of the definitions). */
    tools?: ToolsOffered;
    interrupted?: true;
  };
  'tool/call': { turn: number; step: number } & ToolCallInfo;
  'tool/result': { turn: number; step: number; callId: string; content: ContentBlock[]; error?: ErrorInfo };
  'tool/approval-requested': ApprovalRequest;
  'tool/approval-resolved': ApprovalResolution;
  'budget/exceeded': BudgetExceeded;
  'budget/resolved': BudgetResolution;
  'session/forked': SessionForked;
  'compaction/summary': CompactionSummary;
  'subsession/started': SubsessionStarted;
  'subsession/ended': SubsessionEnded;
  'session/disposed': Record<string, never>;
}

export type CoreEventType = keyof EventDataMap;

export type SessionEvent = {
  [K in CoreEventType]: { seq: number; type: K; time: number; data: EventDataMap[K] };
}[CoreEventType];

export type EventOf<K extends CoreEventType> = Extract<SessionEvent, { type: K }>;

/** Payload of an event before it gets its envelope. */
export type EventDraft = { [K in CoreEventType]: { type: K; data: EventDataMap[K] } }[CoreEventType];

export const CORE_EVENT_TYPES: readonly CoreEventType[] = [
  'agent/inbox/spliced',
  'turn/start',
  'turn/end',
  'step/start',
  'step/end',
  'user/message',
  'assistant/message',
  'tool/call',
  'tool/result',
  'tool/approval-requested',
  'tool/approval-resolved',
  'budget/exceeded',
  'budget/resolved',
  'session/forked',
  'compaction/summary',
  'subsession/started',
  'subsession/ended',
  'session/disposed',
];

const budgetUsedShape = () =>
  Object.fromEntries(BUDGET_LIMIT_KEYS.map((k) => [k, z.number()])) as Record<BudgetKey, z.ZodNumber>;

// ---- zod schemas of every core event (used by clients and tests to validate what a session returns) ----

const ErrorInfoSchema = lazy(() => z.object({ message: z.string(), code: z.string() }));
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
const ToolCallInfoSchema = lazy(() =>
  z.object({
    callId: z.string(),
    name: z.string(),
    arguments: z.record(z.string(), z.unknown()).nullable(),
    rawArguments: z.string().optional(),
  }),
);

/** One model-visible message (src/domain/transcript.ts), as a fork's snapshot carries it. */
export const TranscriptEntrySchema = lazy(() =>
  z.discriminatedUnion('role', [
    z.strictObject({
      role: z.literal('user'),
      id: z.string().min(1),
      content: z.array(TextBlockSchema),
      source: MessageSourceSchema,
    }),
    z.strictObject({
      role: z.literal('assistant'),
      id: z.string().min(1),
      content: z.array(TextBlockSchema),
      toolCalls: z.array(ToolCallInfoSchema).optional(),
      interrupted: z.literal(true).optional(),
    }),
    z.strictObject({
      role: z.literal('tool'),
      callId: z.string().min(1),
      name: z.string(),
      content: ToolResultContentSchema,
      error: ErrorInfoSchema.optional(),
    }),
  ]),
);

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

/** Whether an event type is one of ours (consumers skip the others). */
export function isCoreEventType(type: string): type is CoreEventType {
  return (CORE_EVENT_TYPES as readonly string[]).includes(type);
}

/** Validates one event: envelope always, data when the type is a core type. Returns a problem or undefined. */
export function eventProblem(event: unknown): string | undefined {
  const envelope = EventEnvelopeSchema.safeParse(event);
  if (!envelope.success) return `envelope: ${envelope.error.issues[0]?.message}`;
  const { type, data } = envelope.data;
  if (!isCoreEventType(type)) return undefined;
  const parsed = EventDataSchemas[type].safeParse(data);
  return parsed.success ? undefined : `${type} data: ${describeZodIssue(parsed.error.issues, 'data')}`;
}
