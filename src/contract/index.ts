/**
 * The wire protocol in code (docs/protocol.md): workflow type, default task queue, signal / update /
 * query handles with their payload types (named from the one table, ../domain/wireNames.ts), and the failure type
 * names clients branch on. The workflow, the client and the CLI import the protocol only from here. Safe for the
 * workflow sandbox (no I/O).
 */
import { defineQuery, defineSignal, defineUpdate, type Sinks } from '@temporalio/workflow';
import type { EventsPage, ModelContextPage } from '../domain/pages';
import type { SessionStateView } from '../domain/session';
import type { TranscriptEntry } from '../domain/transcript';
import type { QueryName, SignalName, UpdateName } from '../domain/wireNames';
import type {
  ApprovalReceipt,
  ApproveInput,
  BudgetDecision,
  BudgetReceipt,
  CancelInput,
  DeliverInput,
  DeliveryReceipt,
  EventsQuery,
  LaneSignal,
  SessionConfig,
} from '../domain/wire';

export const WORKFLOW_TYPE = 'agentSession';
/** The workflow one firing of a schedule runs: it delivers the schedule's followup (src/workflows/scheduled.ts). */
export const SCHEDULED_FOLLOWUP_WORKFLOW_TYPE = 'scheduledFollowup';
export const DEFAULT_TASK_QUEUE = 'agent-sessions';

// Each handle's name is one of the table's (../domain/wireNames.ts), checked: a name not in it does not compile.
const signal = <Args extends unknown[]>(name: SignalName) => defineSignal<Args>(name);
const update = <Ret, Args extends unknown[]>(name: UpdateName) => defineUpdate<Ret, Args>(name);
const query = <Ret, Args extends unknown[] = []>(name: QueryName) => defineQuery<Ret, Args>(name);

// Signals, each with one JSON object argument. Their payloads are typed as `unknown` on the workflow side: a
// signal cannot reject, so the handler validates and counts refusals (rule 5).
export const followupSignal = signal<[LaneSignal]>('followup');
export const steerSignal = signal<[LaneSignal]>('steer');
export const injectSignal = signal<[LaneSignal]>('inject');
export const cancelSignal = signal<[CancelInput]>('cancel');
export const disposeSignal = signal<[Record<string, never>?]>('dispose');
/** Moves the session to its deployment's new version at its next quiet point (docs/upgrades.md). */
export const upgradeSignal = signal<[{ reason?: string }?]>('upgrade');

export type { EventsPage, ModelContextPage };

export const deliverUpdate = update<DeliveryReceipt, [DeliverInput]>('deliver');
/** A decision on a tool call waiting for approval; the validator refuses a call that is not waiting, naming it. */
export const approveUpdate = update<ApprovalReceipt, [ApproveInput]>('approve');
/** A decision on a session waiting at its budget; the validator refuses it when the session does not wait. */
export const budgetUpdate = update<BudgetReceipt, [BudgetDecision]>('budget');

export const eventsQuery = query<EventsPage, [EventsQuery?]>('events');
export const stateQuery = query<SessionStateView>('state');
/** The session's config (a fork's without its snapshot): what `fork` copies. */
export const configQuery = query<SessionConfig>('config');
export const transcriptQuery = query<TranscriptView>('transcript');

/**
 * Internal query (not part of the wire protocol): model-visible entries with index in [from, to) held by this run,
 * used by model activities to fill their transcript cache.
 */
export const modelContextQuery = query<ModelContextPage, [{ from: number; to: number }]>('__modelContext');

/**
 * Internal sink (not part of the wire protocol): the workflow hands the worker the entries a model request sends by
 * reference, so the model activity on the same worker resolves them without reading history. Registered with
 * `callDuringReplay: true`, so a worker that replays the session fills its store again. Arguments: the entries, by
 * the seq of the log event that added each.
 */
export interface TranscriptRefSinks extends Sinks {
  transcriptRefs: {
    remember(entries: { seq: number; entry: TranscriptEntry }[]): void;
  };
}

export interface TranscriptView {
  system?: string;
  /** The model-visible messages this run holds, starting at index `base` of the whole transcript. */
  messages: TranscriptEntry[];
  base: number;
  /** The run holding the messages before `base`. */
  previousRunId?: string;
}

export { ErrorCodes, FailureTypes, codeOf } from '../domain/codes';
export type { ErrorCode, FailureType } from '../domain/codes';
