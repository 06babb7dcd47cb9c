/**
 * The session log's core event types (wire, docs/protocol.md) as TypeScript types; their zod schemas are in
 * ./eventSchemas.ts. Envelope `{seq, type, time, data}`: seq from 0 without gaps, time in workflow milliseconds.
 * Plugins may add types; consumers skip types they do not know. Pure.
 */
import type { BudgetKey, BudgetLimits, BudgetUsed } from './budget';
import type { ContentBlock, UserMessage } from './messages';
import type { AssistantMessage, ErrorInfo, ToolCallInfo, TranscriptEntry } from './entry';

export { TranscriptEntrySchema } from './entry';
export type { AssistantMessage, ErrorInfo, ToolCallInfo } from './entry';

export type InboxTarget = 'next-turn' | 'next-step';

export interface SpliceData {
  target: InboxTarget;
  start: number;
  removedCount?: number;
  inserted: UserMessage[];
  outcome?: 'canceled';
}

export type CancelCause = { kind: 'user' } | { kind: 'hook'; reason: string } | { kind: 'disposed' };

/** Why a turn ended (closed union). */
export type TurnEndReason =
  | { kind: 'completed' }
  | { kind: 'aborted'; reason: CancelCause }
  | { kind: 'blocked'; message?: string }
  | { kind: 'error'; error: ErrorInfo }
  | { kind: 'max-tokens' };

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

/** Whether an event type is one of ours (consumers skip the others). */
export function isCoreEventType(type: string): type is CoreEventType {
  return (CORE_EVENT_TYPES as readonly string[]).includes(type);
}
