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
export const modelContextQuery = defineQuery<ModelContextPage, [{ from: number; to: number }]>(
  '__modelContext',
);

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
  /** The provider answered 429: retried by Temporal, after Retry-After when the provider sent one. */
  ModelRateLimited: 'ModelRateLimited',
  /** 5xx, 408/409, a connection error or a reset: retried by Temporal. */
  ModelUnavailable: 'ModelUnavailable',
  /** No chunk within the worker's chunk timeout: retried by Temporal. */
  ModelTimeout: 'ModelTimeout',
  /** 401/403: the worker's key was rejected; not retried (the message names the variable to fix). */
  ModelAuthFailed: 'ModelAuthFailed',
  /** A session names a hook this worker does not register. */
  UnknownHook: 'UnknownHook',
  /** A hook failed (threw, timed out, answered non-2xx, exited non-zero); retryable unless the failure says not. */
  HookFailed: 'HookFailed',
  /** A hook answered something that is not a valid decision; not retried. */
  HookInvalidOutput: 'HookInvalidOutput',
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
  /** A post-tool hook blocked the result; the content is the hook's feedback. */
  ToolBlocked: 'TOOL_BLOCKED',
  /** A post-tool hook failed after its retries; the tool's own result is withheld from the model. */
  PostToolHookFailed: 'POST_TOOL_HOOK_FAILED',
  UnknownHook: 'UNKNOWN_HOOK',
} as const;
