/**
 * SessionClient and its verbs: typed access to agent sessions over the wire protocol, for services and
 * the CLI. Each verb validates its input before sending (./inputs.ts: errors name the field, message ids are
 * assigned before the first attempt so retries stay idempotent), `deliver` retries transient failures by itself
 * (./retry.ts), and every failure of a call to a session is mapped to a small named error (./failures.ts). The
 * verbs are thin: finding sessions is ./visibility.ts, reading across runs ./paging.ts, following a log ./poll.ts,
 * decoding with SDK internals ./sdk.ts. Does I/O; never imported by workflow code.
 */
import { WithStartWorkflowOperation, type Client } from '@temporalio/client';
import {
  approveUpdate,
  budgetUpdate,
  configQuery,
  cancelSignal,
  deliverUpdate,
  disposeSignal,
  eventsQuery,
  stateQuery,
  transcriptQuery,
  type EventsPage,
  type TranscriptView,
} from '../contract';
import type { SessionEvent } from '../domain/events';
import type { SessionStateView } from '../domain/session';
import {
  ApproveInputSchema,
  BudgetDecisionSchema,
  CancelInputSchema,
  type ApprovalReceipt,
  type BudgetDecision,
  type BudgetReceipt,
  type DeliverInput,
  type CancelInput,
  type DeliveryReceipt,
  type Lane,
  type SessionConfig,
  type WaitOutcome,
} from '../domain/wire';
import { DeliveryRejectedError } from './errors';
import { deliverExplained, explained } from './failures';
import { laneSignal, validInput, validMessage, type MessageArg } from './inputs';
import { forkSession, type ForkOptions, type ForkReceipt } from './fork';
import { readAllEvents, readTranscript } from './paging';
import { follow } from './poll';
import { clientSettings, startArgs, type ClientSettings, type SessionClientOptions } from './options';
import { SessionSchedules } from './schedules';
import { liveTextOfDescription } from './sdk';
import type { LiveText, StreamItem } from './stream';
import {
  listPage,
  rowOfSession,
  usageOf,
  type SessionListFilters,
  type SessionPage,
  type SessionRow,
  type UsageSummary,
} from './visibility';
import type { WatchItem } from './watch';

export class SessionClient {
  readonly client: Client;
  readonly taskQueue: string;
  readonly workflowType: string;
  /** Recurring followups to sessions (Temporal Schedules): create, list, describe, trigger, delete. */
  readonly schedules: SessionSchedules;
  private readonly settings: ClientSettings;

  constructor(opts: SessionClientOptions) {
    this.settings = clientSettings(opts);
    this.client = this.settings.client;
    this.taskQueue = this.settings.taskQueue;
    this.workflowType = this.settings.workflowType;
    this.schedules = new SessionSchedules(this.client, this.taskQueue, this.workflowType, () =>
      this.searchAttributesRegistered(),
    );
  }

  /** Whether the namespace has the session search attributes registered (asked once per client). */
  searchAttributesRegistered(): Promise<boolean> {
    return this.settings.searchAttributesRegistered();
  }

  // ---- starting ----

  /** Starts a session (no message). Throws if a session with this id is already running. */
  async start(sessionId: string, config: SessionConfig = {}): Promise<void> {
    await this.client.workflow.start(this.workflowType, await startArgs(this.settings, sessionId, config));
  }

  /** Signal-with-start: starts the session if needed and delivers a message on a lane. Returns the message id. */
  async startWith(
    sessionId: string,
    lane: Lane,
    message: MessageArg,
    config: SessionConfig = {},
  ): Promise<string> {
    const input = validMessage(lane, message, sessionId);
    await this.client.workflow.signalWithStart(this.workflowType, {
      ...(await startArgs(this.settings, sessionId, config)),
      signal: laneSignal(lane),
      signalArgs: [{ message: input }],
    });
    return input.id!;
  }

  /**
   * Update-with-start: starts the session if needed, delivers, and returns the session's receipt. Retries
   * transient failures like `deliver`.
   */
  async deliverWithStart(
    sessionId: string,
    lane: Lane,
    message: MessageArg,
    config: SessionConfig = {},
  ): Promise<DeliveryReceipt> {
    const input = validMessage(lane, message, sessionId);
    const start = await startArgs(this.settings, sessionId, config);
    return deliverExplained(this.client, this.settings.deliveryRetry, sessionId, message, () =>
      this.client.workflow.executeUpdateWithStart(deliverUpdate, {
        args: [{ lane, message: input }],
        // An operation can be used once: each attempt gets its own.
        startWorkflowOperation: new WithStartWorkflowOperation(this.workflowType, {
          ...start,
          workflowIdConflictPolicy: 'USE_EXISTING',
        }),
      }),
    );
  }

  // ---- the three lanes (signals: fire and forget; the id is the correlation key) ----

  followup(sessionId: string, message: MessageArg): Promise<string> {
    return this.send(sessionId, 'followup', message);
  }
  steer(sessionId: string, message: MessageArg): Promise<string> {
    return this.send(sessionId, 'steer', message);
  }
  inject(sessionId: string, message: MessageArg): Promise<string> {
    return this.send(sessionId, 'inject', message);
  }

  /**
   * Delivers through the `deliver` update and returns the receipt (duplicate ids report the original). Failures
   * the caller cannot act on — the server rejected the workflow task the update rode on, aborted the update, the
   * RPC timed out, or the run continued as new under it — are retried with backoff (`deliveryRetry`); the message
   * keeps its id across attempts, so it is inserted once. Throws InvalidInputError (also when the session's
   * validator refuses the payload, naming the field), SessionDisposedError, SessionNotFoundError or
   * DeliveryRejectedError; after the last attempt, the last transient error as Temporal raised it.
   */
  deliver(sessionId: string, lane: Lane, message: MessageArg): Promise<DeliveryReceipt> {
    return this.deliverMessage(sessionId, lane, message, {});
  }

  /**
   * Sends a message and waits, without polling, for the end of the turn it entered: one `deliver` update with
   * `wait`, which completes when that turn has ended (a follow-up's own turn; the running turn for a steer). Returns
   * the receipt with the turn's end reason and answer (the text of its last assistant message), or
   * `{status:'discarded'}` when a cancel dropped the message first. Throws TurnWaitTimeoutError after `timeoutMs`
   * (default 10 minutes, at most one hour; the message stays accepted), and what `deliver` throws.
   */
  async ask(
    sessionId: string,
    message: MessageArg,
    opts: { lane?: Lane; timeoutMs?: number } = {},
  ): Promise<DeliveryReceipt & { outcome: WaitOutcome }> {
    const wait = opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {};
    const receipt = await this.deliverMessage(sessionId, opts.lane ?? 'followup', message, { wait });
    if (!receipt.outcome) throw new DeliveryRejectedError(`session ${sessionId} answered without an outcome`);
    return receipt as DeliveryReceipt & { outcome: WaitOutcome };
  }

  /**
   * Decides a tool call that waits for approval (the calls waiting are in `state(id).approvals`, and each request is
   * a `tool/approval-requested` event): `approve` runs it, `deny` answers it DENIED with `reason`, which the model
   * reads. Repeating a decision answers `duplicate: true`. Throws ApprovalRefusedError naming the call when it is
   * not waiting (unknown, or already resolved otherwise), InvalidInputError, SessionNotFoundError.
   */
  async approve(
    sessionId: string,
    callId: string,
    decision: 'approve' | 'deny',
    reason?: string,
  ): Promise<ApprovalReceipt> {
    const input = { callId, decision, ...(reason !== undefined ? { reason } : {}) };
    const valid = validInput(ApproveInputSchema, input, approveUpdate.name);
    return this.query(sessionId, () =>
      this.handle(sessionId).executeUpdate(approveUpdate, { args: [valid] }),
    );
  }

  /**
   * Forks a session: starts `newId` with the source's config (overridable: model, tools, system, labels) and the
   * source's model-visible transcript up to a turn boundary (default: its last ended turn), recorded in the new
   * session's history as a snapshot (`session/forked`), so later changes to the source never change it. The source is
   * untouched; it may have continued as new or be disposed. Throws InvalidInputError naming the field (a `throughSeq`
   * that is not the end of a turn names the nearest ones), SessionNotFoundError for an unknown source.
   */
  fork(sourceId: string, options: ForkOptions): Promise<ForkReceipt> {
    return forkSession(this, sourceId, options);
  }

  /**
   * Decides a session waiting at its budget (`budget/exceeded` logged, `state().budget.paused` set): extend with new
   * limits (each must let the waiting step run) or deny (the turn ends BUDGET_EXCEEDED). Throws InvalidInputError
   * naming the field, BudgetRefusedError when the session does not wait.
   */
  async budget(sessionId: string, decision: BudgetDecision): Promise<BudgetReceipt> {
    const valid = validInput(BudgetDecisionSchema, decision, budgetUpdate.name);
    return this.query(sessionId, () => this.handle(sessionId).executeUpdate(budgetUpdate, { args: [valid] }));
  }

  async cancel(sessionId: string, input: CancelInput = {}): Promise<void> {
    const valid = validInput(CancelInputSchema, input, cancelSignal.name);
    await this.query(sessionId, () => this.handle(sessionId).signal(cancelSignal, valid));
  }

  async dispose(sessionId: string): Promise<void> {
    await this.query(sessionId, () => this.handle(sessionId).signal(disposeSignal, {}));
  }

  // ---- finding sessions (visibility) ----

  /**
   * One page of the sessions matched by Temporal visibility, newest first: at most `limit` (default 50, at most
   * 1000). `nextPageToken` is there when visibility has more to give: pass it as `pageToken` (with the same filters)
   * for the next page; the last page may come back empty. By default only running sessions (not disposed); `status`
   * filters by AgentSessionStatus, `label` / `model` by those attributes, `idleForMs` keeps idle sessions whose last
   * activity is older, and `query` adds a raw visibility query (ANDed). Needs the search attributes registered
   * (docs/operations.md).
   */
  list(filters: SessionListFilters = {}): Promise<SessionPage> {
    return listPage(this.client, this.workflowType, filters);
  }

  /**
   * Token usage summed over the sessions a visibility query matches (the `list` filters; default: running sessions),
   * in total and per model (AgentSessionModel). Counts what the sessions' last turn ends recorded.
   */
  usage(filters: Omit<SessionListFilters, 'limit' | 'pageToken'> = {}): Promise<UsageSummary> {
    return usageOf(this.client, this.workflowType, filters);
  }

  /** The visibility row of one session (what `list` shows for it). */
  row(sessionId: string): Promise<SessionRow> {
    return rowOfSession(this.client, sessionId);
  }

  // ---- reading ----

  /**
   * One page of events with seq > afterSeq from the session's current run, and the seq of the last event in the
   * log. A run holds events from `firstSeq` on; `allEvents` follows `previousRunId` for earlier ones.
   */
  async events(sessionId: string, afterSeq = -1, limit?: number, runId?: string): Promise<EventsPage> {
    return this.query(sessionId, () =>
      this.handle(sessionId, runId).query(eventsQuery, {
        afterSeq,
        ...(limit !== undefined ? { limit } : {}),
      }),
    );
  }

  /** Every event after afterSeq, paging to the end of the log and back through earlier runs when needed. */
  async allEvents(sessionId: string, afterSeq = -1): Promise<SessionEvent[]> {
    return readAllEvents((after, limit, run) => this.events(sessionId, after, limit, run), afterSeq);
  }

  /** The config the session was started with (a fork names its source, without the snapshot). */
  config(sessionId: string): Promise<SessionConfig> {
    return this.query(sessionId, () => this.handle(sessionId).query(configQuery));
  }

  state(sessionId: string): Promise<SessionStateView> {
    return this.query(sessionId, () => this.handle(sessionId).query(stateQuery));
  }

  /** The whole model-visible transcript, assembled across the runs of the session's continue-as-new chain. */
  transcript(sessionId: string): Promise<TranscriptView> {
    return readTranscript((runId) =>
      this.query(sessionId, () => this.handle(sessionId, runId).query(transcriptQuery)),
    );
  }

  /**
   * Follows a session's log: yields every new event after `afterSeq` and the derived inserted / claimed /
   * discarded notifications. Polls the `events` query; ends when `signal` aborts or the session is disposed.
   */
  watch(
    sessionId: string,
    opts: { afterSeq?: number; pollMs?: number; signal?: AbortSignal } = {},
  ): AsyncGenerator<WatchItem> {
    return follow({ events: (after) => this.allEvents(sessionId, after) }, opts);
  }

  /**
   * Like {@link watch}, and while a model step runs, its text as the model writes it: `delta` items with (turn, step,
   * attempt), the text so far and what is new (`reset` when a retried attempt starts again); a joining watcher gets
   * the text so far first, and a step's last delta carries its whole answer, just before the `assistant/message` that
   * stays the durable answer (deltas add nothing to history). Deltas are read with DescribeWorkflowExecution every
   * `streamPollMs` (default 100) while a model call runs; the worker sends them at most every 200 ms.
   */
  stream(
    sessionId: string,
    opts: { afterSeq?: number; pollMs?: number; streamPollMs?: number; signal?: AbortSignal } = {},
  ): AsyncGenerator<StreamItem> {
    return follow(
      { events: (after) => this.allEvents(sessionId, after), liveText: () => this.liveText(sessionId) },
      opts,
    );
  }

  /** The text so far of the model step a session runs (from its model activity's heartbeat), if one streams. */
  async liveText(sessionId: string): Promise<LiveText | undefined> {
    const { raw } = await this.query(sessionId, () => this.handle(sessionId).describe());
    return liveTextOfDescription(this.client, raw);
  }

  /** The Temporal handle of a session (its latest run, or a given run of its chain). */
  handle(sessionId: string, runId?: string) {
    return this.client.workflow.getHandle(sessionId, runId);
  }

  // ---- internals ----

  /** Validates the message, then sends it with the `deliver` update, retrying (see `deliver`). */
  private async deliverMessage(
    sessionId: string,
    lane: Lane,
    message: MessageArg,
    extra: Pick<DeliverInput, 'wait'>,
  ): Promise<DeliveryReceipt> {
    const input = validMessage(lane, message, sessionId);
    return deliverExplained(this.client, this.settings.deliveryRetry, sessionId, message, () =>
      this.handle(sessionId).executeUpdate(deliverUpdate, { args: [{ lane, message: input, ...extra }] }),
    );
  }

  private async send(sessionId: string, lane: Lane, message: MessageArg): Promise<string> {
    const input = validMessage(lane, message, sessionId);
    await this.query(sessionId, () => this.handle(sessionId).signal(laneSignal(lane), { message: input }));
    return input.id!;
  }

  /** Runs a call to the session, throwing its failure as the client's error (./failures.ts). */
  private query<T>(sessionId: string, run: () => Promise<T>): Promise<T> {
    return explained(this.client, sessionId, run);
  }
}
