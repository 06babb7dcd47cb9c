/**
 * The wire protocol in code (DESIGN.md "Wire protocol"): workflow type, default task queue, signal / update /
 * query handles with their payload types, and the failure type names clients branch on. The workflow, the client
 * and the CLI import the protocol only from here. Safe for the workflow sandbox (no I/O).
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { SessionEvent } from '../domain/events';
import type { SessionStateView } from '../domain/session';
import type { TranscriptEntry } from '../domain/transcript';
import type { CancelInput, DeliverInput, DeliveryReceipt, EventsQuery, LaneSignal } from '../domain/wire';

export const WORKFLOW_TYPE = 'agentSession';
export const DEFAULT_TASK_QUEUE = 'agent-sessions';
export const PROTOCOL_VERSION = 1;

// Signals, each with one JSON object argument. Their payloads are typed as `unknown` on the workflow side: a
// signal cannot reject, so the handler validates and counts refusals (rule 5).
export const followupSignal = defineSignal<[LaneSignal]>('followup');
export const steerSignal = defineSignal<[LaneSignal]>('steer');
export const injectSignal = defineSignal<[LaneSignal]>('inject');
export const cancelSignal = defineSignal<[CancelInput]>('cancel');
export const disposeSignal = defineSignal<[Record<string, never>?]>('dispose');

export const deliverUpdate = defineUpdate<DeliveryReceipt, [DeliverInput]>('deliver');

export interface EventsPage {
  events: SessionEvent[];
  /** Seq of the last event in the whole log (-1 when the log is empty). */
  lastSeq: number;
  /** Seq of the first event this run holds; earlier events are in `previousRunId` (continue-as-new chain). */
  firstSeq: number;
  previousRunId?: string;
}
export const eventsQuery = defineQuery<EventsPage, [EventsQuery?]>('events');
export const stateQuery = defineQuery<SessionStateView>('state');
export const transcriptQuery = defineQuery<TranscriptView>('transcript');

/** A page of model-visible entries held by one run (answer of the internal `modelContext` query). */
export interface ModelContextPage {
  /** Entries with index in [from, to) that this run holds, in order, starting at index `max(from, base)`. */
  entries: TranscriptEntry[];
  /** Index of this run's first entry; entries before it live in `previousRunId`. */
  base: number;
  previousRunId?: string;
}

/**
 * Internal query (not part of the wire protocol): model-visible entries with index in [from, to) held by this run,
 * used by model activities to fill their transcript cache.
 */
export const modelContextQuery = defineQuery<ModelContextPage, [{ from: number; to: number }]>('__modelContext');

export interface TranscriptView {
  system?: string;
  /** The model-visible messages this run holds, starting at index `base` of the whole transcript. */
  messages: TranscriptEntry[];
  base: number;
  /** The run holding the messages before `base`. */
  previousRunId?: string;
}

/** Failure type names (ApplicationFailure.type) that clients branch on. */
export const FailureTypes = {
  InvalidPayload: 'InvalidPayload',
  SessionDisposed: 'SessionDisposed',
  ModelFailed: 'ModelFailed',
  ModelRequestInvalid: 'ModelRequestInvalid',
  UnknownTool: 'UnknownTool',
  ToolFailed: 'ToolFailed',
  ScriptedFailure: 'ScriptedFailure',
} as const;
export type FailureType = (typeof FailureTypes)[keyof typeof FailureTypes];

/** Error codes written into `tool/result.error.code` and `turn/end` error reasons. */
export const ErrorCodes = {
  ToolNotAllowed: 'TOOL_NOT_ALLOWED',
  ToolInvalidArguments: 'TOOL_INVALID_ARGUMENTS',
  ToolFailed: 'TOOL_FAILED',
  AbortedBeforeDispatch: 'ABORTED_BEFORE_DISPATCH',
  Aborted: 'ABORTED',
  ModelFailed: 'MODEL_FAILED',
  PreStepFailed: 'PRE_STEP_FAILED',
  UnknownTool: 'UNKNOWN_TOOL',
  Internal: 'INTERNAL',
} as const;
