/**
 * SessionClient: typed access to agent sessions over the wire protocol, for services and the CLI.
 * Validates every input before sending (errors name the field), assigns message ids before the first attempt so
 * retries stay idempotent, retries transient `deliver` failures by itself (./retry.ts), and maps Temporal errors to
 * small named errors by failure type and workflow status. Does I/O; never imported by workflow code.
 */
import { randomUUID } from 'node:crypto';
import {
  ApplicationFailure,
  Client,
  type ClientInterceptors,
  WithStartWorkflowOperation,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  type Connection,
  type WorkflowExecutionInfo,
} from '@temporalio/client';
// Visibility's raw rows into the SDK's WorkflowExecutionInfo, as `client.workflow.list` does (it cannot resume a page).
import { executionInfoFromRaw } from '@temporalio/client/lib/helpers';
import type { DataConverter } from '@temporalio/common';
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow';
import { optionalTsToMs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { z } from 'zod';
import {
  approveUpdate,
  budgetUpdate,
  configQuery,
  cancelSignal,
  DEFAULT_TASK_QUEUE,
  deliverUpdate,
  FailureTypes,
  disposeSignal,
  eventsQuery,
  followupSignal,
  injectSignal,
  stateQuery,
  steerSignal,
  transcriptQuery,
  WORKFLOW_TYPE,
  type EventsPage,
  type TranscriptView,
} from '../contract';
import { SEARCH_ATTRIBUTE_KEYS, SearchAttributes, sessionStartOptions } from '../contract/searchAttributes';
import { readEventsOfRun } from '../domain/pages';
import type { SessionEvent } from '../domain/events';
import type { MessageInput } from '../domain/messages';
import type { SessionStateView } from '../domain/session';
import { throughProblem, transcriptThrough, type SessionRef } from '../domain/sessionRefs';
import {
  ApproveInputSchema,
  BudgetDecisionSchema,
  CancelInputSchema,
  laneInputProblem,
  LaneMessageInputSchema,
  type LaneMessageInput,
  SessionConfigSchema,
  SessionIdSchema,
  type ApprovalReceipt,
  type BudgetDecision,
  type BudgetReceipt,
  type CancelInput,
  type DeliveryReceipt,
  type Lane,
  type SessionConfig,
  type WaitOutcome,
} from '../domain/wire';
import {
  ApprovalRefusedError,
  BudgetRefusedError,
  DeliveryRejectedError,
  InvalidInputError,
  invalidInput,
  SessionDisposedError,
  SessionNotFoundError,
  TurnWaitTimeoutError,
} from './errors';
import {
  DEFAULT_DELIVERY_RETRY,
  deliveryBackoffMs,
  deliveryFailureKind,
  type DeliveryRetryPolicy,
} from './retry';
import { SessionSchedules } from './schedules';
import { DeltaFold, liveTextOf, type LiveText, type StreamItem } from './stream';
import { WatchFold, type WatchItem } from './watch';

const ACTIVITY_STARTED = temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED;

export * from './errors';
export { sessionSummary } from '../contract/searchAttributes';
export {
  FollowupScheduleSchema,
  OVERLAP_POLICIES,
  ScheduleNotFoundError,
  SessionSchedules,
  type FollowupSchedule,
  type FollowupScheduleOptions,
  type OverlapPolicy,
} from './schedules';
export { DEFAULT_DELIVERY_RETRY, type DeliveryRetryPolicy } from './retry';
export type { WatchItem } from './watch';
export type { LiveText, StreamItem, TextDelta } from './stream';

export interface SessionClientOptions {
  connection?: Connection;
  client?: Client;
  /**
   * The data converter of the client built from `connection` — e.g. `encryptionDataConverter(keys)` when the
   * workers encrypt history. With `client`, configure that client instead (passing both is refused).
   */
  dataConverter?: DataConverter;
  /** Client interceptors of the client built from `connection` (e.g. `clientTracingInterceptors(tracing)`). */
  interceptors?: ClientInterceptors;
  namespace?: string;
  taskQueue?: string;
  /** Workflow type to start (default `agentSession`; tests use variants with pre-step listeners). */
  workflowType?: string;
  /** How `deliver` retries transient failures (default: 5 attempts over about 1.5 s). */
  deliveryRetry?: Partial<DeliveryRetryPolicy>;
  /**
   * Whether sessions start with their search attributes (docs/protocol.md): `auto` (default) when the namespace has
   * them registered — checked once per client, with one warning when it has not — or `off`.
   */
  searchAttributes?: 'auto' | 'off';
  /** Where the one warning goes (default `console.warn`). */
  warn?: (message: string) => void;
}

/**
 * A message as callers pass it: a string is the content of a message with a fresh id. A direct message (followup or
 * steer) may reference other sessions: `refs: [{session, throughSeq?}]` (docs/protocol.md "Cross-session references").
 */
export type MessageArg = string | (MessageInput & { refs?: SessionRef[] });

export class SessionClient {
  readonly client: Client;
  readonly taskQueue: string;
  readonly workflowType: string;
  private readonly deliveryRetry: DeliveryRetryPolicy;
  private registered: Promise<boolean> | undefined;
  private readonly warn: (message: string) => void;
  /** Recurring followups to sessions (Temporal Schedules): create, list, describe, trigger, delete. */
  readonly schedules: SessionSchedules;

  constructor(private readonly opts: SessionClientOptions) {
    if (!opts.client && !opts.connection) throw new Error('SessionClient needs a connection or a client');
    if (opts.client && (opts.dataConverter || opts.interceptors))
      throw new Error('SessionClient: pass dataConverter and interceptors to your Client, not beside it');
    this.client =
      opts.client ??
      new Client({
        connection: opts.connection!,
        namespace: opts.namespace ?? 'default',
        ...(opts.dataConverter ? { dataConverter: opts.dataConverter } : {}),
        ...(opts.interceptors ? { interceptors: opts.interceptors } : {}),
      });
    this.taskQueue = opts.taskQueue ?? DEFAULT_TASK_QUEUE;
    this.workflowType = opts.workflowType ?? WORKFLOW_TYPE;
    this.deliveryRetry = { ...DEFAULT_DELIVERY_RETRY, ...opts.deliveryRetry };
    this.warn = opts.warn ?? ((m) => console.warn(m));
    this.schedules = new SessionSchedules(this.client, this.taskQueue, this.workflowType, () =>
      this.searchAttributesRegistered(),
    );
  }

  /** Whether the namespace has the session search attributes registered (asked once per client). */
  searchAttributesRegistered(): Promise<boolean> {
    if (this.opts.searchAttributes === 'off') return Promise.resolve(false);
    this.registered ??= Promise.resolve()
      .then(() =>
        this.client.connection.operatorService.listSearchAttributes({
          namespace: this.client.options.namespace,
        }),
      )
      .then(
        (r) => SEARCH_ATTRIBUTE_KEYS.every((k) => k.name in (r.customAttributes ?? {})),
        (err: unknown) => {
          // Refused (e.g. an API key without operator rights): say that, not that they are missing.
          this.warn(
            `agent-sessions: could not check the session search attributes in namespace ${this.client.options?.namespace} (${err instanceof Error ? err.message : String(err)}); sessions start without them`,
          );
          return undefined;
        },
      )
      .then((ok) => {
        if (ok === undefined) return false;
        if (!ok)
          this.warn(
            `agent-sessions: search attributes ${SEARCH_ATTRIBUTE_KEYS.map((k) => k.name).join(', ')} are not registered in namespace ${this.client.options?.namespace}; sessions run without them (not listed by \`agent-sessions list\`). The embedded dev server and scripts/cluster.sh register them; elsewhere: temporal operator search-attribute create (docs/operations.md).`,
          );
        return ok;
      });
    return this.registered;
  }

  /**
   * What a session starts with besides its config: its search attributes when the namespace has them, and the
   * static summary and details the Temporal UI shows (model, tools, hooks, labels — never the system prompt).
   */
  private async startOptions(config: SessionConfig) {
    return sessionStartOptions(config, {
      searchAttributes: await this.searchAttributesRegistered(),
      now: new Date(),
    });
  }

  // ---- starting ----

  /** Starts a session (no message). Throws if a session with this id is already running. */
  async start(sessionId: string, config: SessionConfig = {}): Promise<void> {
    const valid = validConfig(config);
    await this.client.workflow.start(this.workflowType, {
      workflowId: sessionId,
      taskQueue: this.taskQueue,
      args: [valid],
      ...(await this.startOptions(valid)),
    });
  }

  /** Signal-with-start: starts the session if needed and delivers a message on a lane. Returns the message id. */
  async startWith(
    sessionId: string,
    lane: Lane,
    message: MessageArg,
    config: SessionConfig = {},
  ): Promise<string> {
    const input = validMessage(lane, message, sessionId);
    const valid = validConfig(config);
    await this.client.workflow.signalWithStart(this.workflowType, {
      workflowId: sessionId,
      taskQueue: this.taskQueue,
      args: [valid],
      ...(await this.startOptions(valid)),
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
    const args = [validConfig(config)];
    const attributes = await this.startOptions(args[0]!);
    return this.deliverRetrying(sessionId, message, () =>
      this.client.workflow.executeUpdateWithStart(deliverUpdate, {
        args: [{ lane, message: input }],
        // An operation can be used once: each attempt gets its own.
        startWorkflowOperation: new WithStartWorkflowOperation(this.workflowType, {
          workflowId: sessionId,
          taskQueue: this.taskQueue,
          args,
          ...attributes,
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
  async deliver(sessionId: string, lane: Lane, message: MessageArg): Promise<DeliveryReceipt> {
    const input = validMessage(lane, message, sessionId);
    return this.deliverRetrying(sessionId, message, () =>
      this.handle(sessionId).executeUpdate(deliverUpdate, { args: [{ lane, message: input }] }),
    );
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
    const lane = opts.lane ?? 'followup';
    const input = validMessage(lane, message, sessionId);
    const wait = opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {};
    const receipt = await this.deliverRetrying(sessionId, message, () =>
      this.handle(sessionId).executeUpdate(deliverUpdate, { args: [{ lane, message: input, wait }] }),
    );
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
    const parsed = ApproveInputSchema.safeParse({
      callId,
      decision,
      ...(reason !== undefined ? { reason } : {}),
    });
    if (!parsed.success) throw invalid(parsed.error.issues, 'approve');
    return this.query(sessionId, () =>
      this.handle(sessionId).executeUpdate(approveUpdate, { args: [parsed.data] }),
    );
  }

  /**
   * Forks a session: starts `newId` with the source's config (overridable: model, tools, system, labels) and the
   * source's model-visible transcript up to a turn boundary (default: its last ended turn), recorded in the new
   * session's history as a snapshot (`session/forked`), so later changes to the source never change it. The source is
   * untouched; it may have continued as new or be disposed. Throws InvalidInputError naming the field (a `throughSeq`
   * that is not the end of a turn names the nearest ones), SessionNotFoundError for an unknown source.
   */
  async fork(sourceId: string, options: ForkOptions): Promise<ForkReceipt> {
    const parsed = ForkOptionsSchema.safeParse(options);
    if (!parsed.success) throw invalid(parsed.error.issues, 'fork');
    const { newId, throughSeq, ...overrides } = parsed.data;
    const events = await this.query(sourceId, () => this.allEvents(sourceId));
    const snapshot = transcriptThrough(events, throughSeq);
    if (snapshot.kind === 'no-ended-turn')
      throw new InvalidInputError(
        'fork.throughSeq',
        `invalid fork: session ${sourceId} has no ended turn to fork at`,
      );
    if (snapshot.kind === 'not-a-boundary')
      throw new InvalidInputError(
        'fork.throughSeq',
        `invalid fork: fork.throughSeq: ${throughProblem(sourceId, snapshot)}`,
      );
    const { throughSeq: through, messages } = snapshot;
    const { fork: _sourceFork, ...sourceConfig } = await this.config(sourceId);
    await this.start(newId, {
      ...sourceConfig,
      ...overrides,
      fork: { from: sourceId, throughSeq: through, messages },
    });
    return { sessionId: newId, from: sourceId, throughSeq: through, messages: messages.length };
  }

  /**
   * Decides a session waiting at its budget (`budget/exceeded` logged, `state().budget.paused` set): extend with new
   * limits (each must let the waiting step run) or deny (the turn ends BUDGET_EXCEEDED). Throws InvalidInputError
   * naming the field, BudgetRefusedError when the session does not wait.
   */
  async budget(sessionId: string, decision: BudgetDecision): Promise<BudgetReceipt> {
    const parsed = BudgetDecisionSchema.safeParse(decision);
    if (!parsed.success) throw invalid(parsed.error.issues, 'budget');
    return this.query(sessionId, () =>
      this.handle(sessionId).executeUpdate(budgetUpdate, { args: [parsed.data] }),
    );
  }

  async cancel(sessionId: string, input: CancelInput = {}): Promise<void> {
    const parsed = CancelInputSchema.safeParse(input);
    if (!parsed.success) throw invalid(parsed.error.issues, 'cancel');
    await this.signal(sessionId, () => this.handle(sessionId).signal(cancelSignal, parsed.data));
  }

  async dispose(sessionId: string): Promise<void> {
    await this.signal(sessionId, () => this.handle(sessionId).signal(disposeSignal, {}));
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
  async list(filters: SessionListFilters = {}): Promise<SessionPage> {
    const limit = filters.limit ?? 50;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT)
      throw new InvalidInputError(
        'limit',
        `invalid list: limit: an integer from 1 to ${MAX_LIST_LIMIT}, got ${limit}`,
      );
    let nextPageToken: Uint8Array | undefined;
    if (filters.pageToken !== undefined) {
      const decoded = Buffer.from(filters.pageToken, 'base64url');
      if (!filters.pageToken || decoded.toString('base64url') !== filters.pageToken)
        throw new InvalidInputError('pageToken', 'invalid list: pageToken: not a token a previous page gave');
      nextPageToken = decoded;
    }
    const namespace = this.client.options.namespace;
    const response = await this.client.workflowService.listWorkflowExecutions({
      namespace,
      query: listQuery(this.workflowType, filters),
      pageSize: limit,
      ...(nextPageToken ? { nextPageToken } : {}),
    });
    const converter = this.client.options.loadedDataConverter;
    const sessions = await Promise.all(
      (response.executions ?? []).map(async (raw) =>
        rowOf(await executionInfoFromRaw(raw, converter, raw, namespace)),
      ),
    );
    const token = response.nextPageToken?.length
      ? Buffer.from(response.nextPageToken).toString('base64url')
      : undefined;
    return { sessions, more: token !== undefined, ...(token ? { nextPageToken: token } : {}) };
  }

  /**
   * Token usage summed over the sessions a visibility query matches (the `list` filters; default: running sessions),
   * in total and per model (AgentSessionModel). Counts what the sessions' last turn ends recorded.
   */
  async usage(filters: Omit<SessionListFilters, 'limit' | 'pageToken'> = {}): Promise<UsageSummary> {
    const summary: UsageSummary = { sessions: 0, inputTokens: 0, outputTokens: 0, byModel: {} };
    for await (const info of this.client.workflow.list({ query: listQuery(this.workflowType, filters) })) {
      const row = rowOf(info);
      const model = (summary.byModel[row.model ?? 'unknown'] ??= {
        sessions: 0,
        inputTokens: 0,
        outputTokens: 0,
      });
      for (const into of [summary, model]) {
        into.sessions += 1;
        into.inputTokens += row.inputTokens ?? 0;
        into.outputTokens += row.outputTokens ?? 0;
      }
    }
    return summary;
  }

  /** The visibility row of one session (what `list` shows for it). */
  async row(sessionId: string): Promise<SessionRow> {
    try {
      return rowOf(await this.handle(sessionId).describe());
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw new SessionNotFoundError(sessionId);
      throw err;
    }
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
    return this.eventsOfRun(sessionId, afterSeq, undefined, Infinity);
  }

  private eventsOfRun(sessionId: string, afterSeq: number, runId: string | undefined, untilSeq: number) {
    return readEventsOfRun(
      (after, limit, run) => this.events(sessionId, after, limit, run),
      afterSeq,
      runId,
      untilSeq,
    );
  }

  /** The config the session was started with (a fork names its source, without the snapshot). */
  config(sessionId: string): Promise<SessionConfig> {
    return this.query(sessionId, () => this.handle(sessionId).query(configQuery));
  }

  state(sessionId: string): Promise<SessionStateView> {
    return this.query(sessionId, () => this.handle(sessionId).query(stateQuery));
  }

  /** The whole model-visible transcript, assembled across the runs of the session's continue-as-new chain. */
  async transcript(sessionId: string): Promise<TranscriptView> {
    const current = await this.query(sessionId, () => this.handle(sessionId).query(transcriptQuery));
    const messages = [...current.messages];
    let view = current;
    while (view.base > 0 && view.previousRunId) {
      const runId = view.previousRunId;
      const later = view.base;
      view = await this.query(sessionId, () => this.handle(sessionId, runId).query(transcriptQuery));
      // A run also carries the entries no model request had sent when it began, which the run before holds too.
      messages.unshift(...view.messages.slice(0, Math.max(0, later - view.base)));
    }
    return { ...(current.system !== undefined ? { system: current.system } : {}), messages, base: 0 };
  }

  /**
   * Follows a session's log: yields every new event after `afterSeq` and the derived inserted / claimed /
   * discarded notifications. Polls the `events` query; ends when `signal` aborts or the session is disposed.
   */
  async *watch(
    sessionId: string,
    opts: { afterSeq?: number; pollMs?: number; signal?: AbortSignal } = {},
  ): AsyncGenerator<WatchItem> {
    const afterSeq = opts.afterSeq ?? -1;
    const pollMs = opts.pollMs ?? 250;
    const fold = new WatchFold();
    let seen = -1;
    while (!opts.signal?.aborted) {
      const events = await this.allEvents(sessionId, seen);
      for (const event of events) {
        seen = event.seq;
        yield* fold.next(event, event.seq > afterSeq);
        if (event.type === 'session/disposed') return;
      }
      if (events.length === 0) await delay(pollMs, opts.signal);
    }
  }

  /**
   * Like {@link watch}, and while a model step runs, its text as the model writes it: `delta` items with (turn, step,
   * attempt), the text so far and what is new (`reset` when a retried attempt starts again). The step's
   * `assistant/message` event stays the durable answer; deltas add nothing to history. A watcher that joins mid-step
   * gets the text so far first. Deltas are read with DescribeWorkflowExecution every `streamPollMs` (default 100)
   * while a model call runs; the worker sends them at most every 200 ms (docs/decisions/2026-12-03-streaming.md).
   */
  async *stream(
    sessionId: string,
    opts: { afterSeq?: number; pollMs?: number; streamPollMs?: number; signal?: AbortSignal } = {},
  ): AsyncGenerator<StreamItem> {
    const afterSeq = opts.afterSeq ?? -1;
    const pollMs = opts.pollMs ?? 250;
    const streamPollMs = opts.streamPollMs ?? 100;
    const fold = new WatchFold();
    const deltas = new DeltaFold();
    let seen = -1;
    let eventsAt = -Infinity;
    while (!opts.signal?.aborted) {
      let fresh = 0;
      if (Date.now() - eventsAt >= pollMs || !deltas.modelRunning) {
        const events = await this.allEvents(sessionId, seen);
        eventsAt = Date.now();
        fresh = events.length;
        for (const event of events) {
          seen = event.seq;
          deltas.event(event);
          yield* fold.next(event, event.seq > afterSeq);
          if (event.type === 'session/disposed') return;
        }
      }
      if (deltas.modelRunning) {
        const live = await this.liveText(sessionId);
        const delta = live && deltas.next(live);
        if (delta) yield delta;
      }
      if (fresh === 0) await delay(deltas.modelRunning ? streamPollMs : pollMs, opts.signal);
    }
  }

  /** The text so far of the model step a session runs (from its model activity's heartbeat), if one streams. */
  async liveText(sessionId: string): Promise<LiveText | undefined> {
    const { raw } = await this.query(sessionId, () => this.handle(sessionId).describe());
    for (const activity of raw.pendingActivities ?? []) {
      if (activity.activityType?.name !== 'modelStep') continue;
      // Between attempts (a retry's backoff) the server shows the next attempt's number beside the failed attempt's
      // last details: those are not the new attempt's text.
      if (activity.state !== ACTIVITY_STARTED) continue;
      const payloads = activity.heartbeatDetails?.payloads;
      if (!payloads?.length) continue;
      // Details an earlier attempt left behind are not this attempt's text.
      const beat = optionalTsToMs(activity.lastHeartbeatTime);
      const started = optionalTsToMs(activity.lastStartedTime);
      if (beat === undefined || (started !== undefined && beat < started)) continue;
      const details = await decodeFromPayloadsAtIndex(this.client.options.loadedDataConverter, 0, payloads);
      const live = liveTextOf(details, activity.attempt ?? 1);
      if (live) return live;
    }
    return undefined;
  }

  /** The Temporal handle of a session (its latest run, or a given run of its chain). */
  handle(sessionId: string, runId?: string) {
    return this.client.workflow.getHandle(sessionId, runId);
  }

  // ---- internals ----

  /** Runs `attempt` until it answers, retrying what deliveryFailureKind calls transient (see `deliver`). */
  private async deliverRetrying(
    sessionId: string,
    message: MessageArg,
    attempt: () => Promise<DeliveryReceipt>,
  ): Promise<DeliveryReceipt> {
    const idIsOurs = typeof message === 'string' || message.id === undefined;
    for (let n = 1; ; n++) {
      try {
        const receipt = await attempt();
        // A duplicate of an id this call made up can only be an earlier attempt of this call that landed.
        return n > 1 && idIsOurs && receipt.duplicate ? { ...receipt, duplicate: false } : receipt;
      } catch (err) {
        const kind = deliveryFailureKind(err);
        const retry =
          n < this.deliveryRetry.attempts &&
          (kind === 'transient' || (kind === 'run-closed' && (await this.status(sessionId)) === 'RUNNING'));
        if (!retry) throw await this.explain(sessionId, err);
        await delay(deliveryBackoffMs(this.deliveryRetry, n));
      }
    }
  }

  /** The status of the session's latest run (`RUNNING` after a continue-as-new), or undefined when none exists. */
  private async status(sessionId: string): Promise<string | undefined> {
    try {
      return (await this.handle(sessionId).describe()).status.name;
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return undefined;
      throw err;
    }
  }

  private async send(sessionId: string, lane: Lane, message: MessageArg): Promise<string> {
    const input = validMessage(lane, message, sessionId);
    await this.signal(sessionId, () => this.handle(sessionId).signal(laneSignal(lane), { message: input }));
    return input.id!;
  }

  private async signal(sessionId: string, send: () => Promise<void>): Promise<void> {
    try {
      await send();
    } catch (err) {
      throw await this.explain(sessionId, err);
    }
  }

  private async query<T>(sessionId: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (err) {
      throw await this.explain(sessionId, err);
    }
  }

  /**
   * Maps Temporal errors to the client's errors by failure type and workflow status, never by message text: an
   * update refused with `SessionDisposed` → SessionDisposedError, with `InvalidPayload` → InvalidInputError naming
   * the field, any other refusal → DeliveryRejectedError; a run that closed under the call (not found, or an update
   * the server failed because the run ended) → SessionDisposedError when the session's workflow completed (a
   * disposed session, rule 31), SessionNotFoundError when there is none or it ended otherwise.
   */
  private async explain(sessionId: string, err: unknown): Promise<unknown> {
    const runClosed = deliveryFailureKind(err) === 'run-closed';
    if (err instanceof WorkflowUpdateFailedError && !runClosed) {
      const cause = err.cause;
      const type = cause instanceof ApplicationFailure ? cause.type : undefined;
      if (type === FailureTypes.SessionDisposed) return new SessionDisposedError(sessionId);
      if (type === FailureTypes.InvalidPayload)
        return InvalidInputError.fromSession(cause?.message ?? err.message);
      if (type === FailureTypes.TurnWaitTimeout)
        return new TurnWaitTimeoutError(cause?.message ?? err.message);
      if (type === FailureTypes.BudgetRefused) return new BudgetRefusedError(cause?.message ?? err.message);
      if (type === FailureTypes.ApprovalRefused)
        return new ApprovalRefusedError(cause?.message ?? err.message);
      return new DeliveryRejectedError(cause?.message ?? err.message);
    }
    if (!runClosed) return err;
    let status: string | undefined;
    try {
      status = await this.status(sessionId);
    } catch {
      return err;
    }
    if (status === 'COMPLETED') return new SessionDisposedError(sessionId);
    if (status === undefined) return new SessionNotFoundError(sessionId);
    // Still running: the attempts ran out while the session moved between runs.
    if (status === 'RUNNING') return err;
    return new SessionNotFoundError(sessionId, `its workflow is ${status.toLowerCase()}`);
  }
}

/** What `fork` takes: the new session's id, the source's turn boundary, and config it changes. */
export const ForkOptionsSchema = z.strictObject({
  newId: SessionIdSchema,
  /** Seq of a `turn/end` of the source (default: its last). */
  throughSeq: z.number().int().min(0).optional(),
  model: SessionConfigSchema.shape.model,
  tools: SessionConfigSchema.shape.tools,
  system: SessionConfigSchema.shape.system,
  labels: SessionConfigSchema.shape.labels,
});
export type ForkOptions = z.input<typeof ForkOptionsSchema>;

/** What `fork` did. */
export interface ForkReceipt {
  sessionId: string;
  from: string;
  throughSeq: number;
  /** Model-visible messages the fork starts with. */
  messages: number;
}

export interface SessionListFilters {
  status?: 'idle' | 'running' | 'disposed';
  label?: string;
  model?: string;
  /** Idle sessions whose last activity is older than this. */
  idleForMs?: number;
  /** A raw visibility query, ANDed with the rest. */
  query?: string;
  /** Sessions per page: 1 to 1000 (default 50). */
  limit?: number;
  /** The `nextPageToken` of the page before (same filters). */
  pageToken?: string;
}

/** The most sessions one `list` page holds. */
export const MAX_LIST_LIMIT = 1000;

/** One page of `SessionClient.list`. */
export interface SessionPage {
  sessions: SessionRow[];
  /** Whether visibility has more to give (then `nextPageToken` is set; that next page may still be empty). */
  more: boolean;
  /** Pass as `pageToken` for the next page. */
  nextPageToken?: string;
}

/** One session as visibility sees it (`agent-sessions list`). */
export interface SessionRow {
  id: string;
  status: string;
  turn?: number;
  pending?: number;
  model?: string;
  labels: string[];
  lastActivity?: string;
  startTime: string;
  /** Token totals at the last turn end (sessions started before these attributes existed have none). */
  inputTokens?: number;
  outputTokens?: number;
}

/** Token usage over many sessions (`SessionClient.usage`, `agent-sessions usage`). */
export interface UsageSummary {
  sessions: number;
  inputTokens: number;
  outputTokens: number;
  byModel: Record<string, { sessions: number; inputTokens: number; outputTokens: number }>;
}

const quote = (value: string) => `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/** The visibility query of `list`. */
export function listQuery(workflowType: string, f: SessionListFilters, now = Date.now()): string {
  const parts = [`WorkflowType = ${quote(workflowType)}`];
  if (f.status === 'disposed') parts.push(`ExecutionStatus != 'Running'`);
  else parts.push(`ExecutionStatus = 'Running'`);
  const status = f.idleForMs !== undefined ? 'idle' : f.status;
  if (status && status !== 'disposed') parts.push(`${SearchAttributes.status.name} = ${quote(status)}`);
  if (f.label !== undefined) parts.push(`${SearchAttributes.labels.name} = ${quote(f.label)}`);
  if (f.model !== undefined) parts.push(`${SearchAttributes.model.name} = ${quote(f.model)}`);
  if (f.idleForMs !== undefined)
    parts.push(`${SearchAttributes.lastActivity.name} < ${quote(new Date(now - f.idleForMs).toISOString())}`);
  if (f.query) parts.push(`(${f.query})`);
  return parts.join(' AND ');
}

function rowOf(info: Omit<WorkflowExecutionInfo, 'raw'>): SessionRow {
  const sa = info.typedSearchAttributes;
  const running = info.status.name === 'RUNNING';
  const turn = sa.get(SearchAttributes.turn);
  const pending = sa.get(SearchAttributes.pending);
  const model = sa.get(SearchAttributes.model);
  const last = sa.get(SearchAttributes.lastActivity);
  const inputTokens = sa.get(SearchAttributes.inputTokens);
  const outputTokens = sa.get(SearchAttributes.outputTokens);
  return {
    id: info.workflowId,
    status: running
      ? (sa.get(SearchAttributes.status) ?? 'unknown')
      : info.status.name === 'COMPLETED'
        ? 'disposed'
        : info.status.name.toLowerCase(),
    ...(turn !== undefined ? { turn } : {}),
    ...(pending !== undefined ? { pending } : {}),
    ...(model !== undefined ? { model } : {}),
    labels: sa.get(SearchAttributes.labels) ?? [],
    ...(last !== undefined ? { lastActivity: last.toISOString() } : {}),
    startTime: info.startTime.toISOString(),
    ...(inputTokens !== undefined ? { inputTokens } : {}),
    ...(outputTokens !== undefined ? { outputTokens } : {}),
  };
}

const LANE_SIGNALS = { followup: followupSignal, steer: steerSignal, inject: injectSignal } as const;

function laneSignal(lane: Lane) {
  return LANE_SIGNALS[lane];
}

const invalid = invalidInput;

/**
 * Validates a message for a lane (refs included: not on inject, never to `sessionId` itself) and assigns an id when
 * it has none. Throws InvalidInputError naming the field.
 */
function validMessage(lane: Lane, message: MessageArg, sessionId: string): LaneMessageInput & { id: string } {
  const raw = typeof message === 'string' ? { content: message } : message;
  const parsed = LaneMessageInputSchema.safeParse(raw);
  if (!parsed.success) throw invalid(parsed.error.issues, 'message');
  const problem = laneInputProblem(lane, parsed.data, sessionId);
  if (problem) throw new InvalidInputError(problem.split(':')[0]!, `invalid message: ${problem}`);
  return { ...parsed.data, id: parsed.data.id ?? randomUUID() };
}

function validConfig(config: SessionConfig): SessionConfig {
  const parsed = SessionConfigSchema.safeParse(config);
  if (!parsed.success) throw invalid(parsed.error.issues, 'config');
  return parsed.data;
}

function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
