/**
 * SessionCore: the session's state machine over the log. Every state change goes through here and is appended as
 * one event; the workflow only decides *when* (it awaits activities and signals), never *what* is written.
 * Pure and deterministic: time and ids come from injected functions; the state is a plain serializable snapshot.
 *
 * Waking (rules 7, 8, 15, 16, 22, 23): a turn starts when the session is idle, not suspended, and has waking work —
 * a follow-up in `next-turn` or a steer in `next-step`. Injected context alone never wakes it. A turn that ends
 * blocked, in error or aborted suspends the session: the work still pending waits for the next waking message.
 */
import type {
  ApprovalDecision,
  ApprovalRequest,
  ApprovalResolvedBy,
  AssistantMessage,
  CancelCause,
  ErrorInfo,
  EventDataMap,
  EventDraft,
  InboxTarget,
  SessionEvent,
  SpliceData,
  ToolCallInfo,
  ToolsOffered,
  TurnEndReason,
  Usage,
} from './events';
import {
  applySplice,
  cancelSplice,
  claimSplice,
  EMPTY_INBOX,
  insertSplice,
  listOf,
  type Inbox,
} from './inbox';
import type { ContentBlock, UserMessage } from './messages';
import { emptyTranscript, projectEvent, type TranscriptState } from './transcript';
import {
  budgetRemaining,
  LANE_RULES,
  type BudgetKey,
  type BudgetLimits,
  type BudgetUsed,
  type DeliveryReceipt,
  type Lane,
} from './wire';

/** How many accepted message ids are remembered for idempotency (rule 4); carried across continue-as-new. */
export const RECENT_ID_WINDOW = 4096;
/** How many turn ends are remembered for waiters (`deliver` with `wait`); carried across continue-as-new. */
export const TURN_END_WINDOW = 256;
/**
 * How much answer text the remembered turn ends carry across continue-as-new (characters, newest first; the newest
 * answer always goes): older turn ends keep their reason and seq. Without it 256 long answers could pass the 2 MB
 * a continue-as-new payload may hold, and the session could not continue.
 */
export const CARRIED_ANSWER_CHARS = 128 * 1024;

/**
 * A remembered id in a snapshot: `[id, lane, seq?, turn?, discarded?]` — the seq of its insertion splice (null for
 * ids a pre-step listener added), the turn that claimed it (null until claimed), 1 if a cancel discarded it.
 * Snapshots written before these fields existed hold `[id, lane]`.
 */
export type RecentTuple = [string, Lane, ...(number | null)[]];

interface Remembered {
  lane: Lane;
  seq?: number;
  turn?: number;
  discarded?: true;
}

/** Where a delivered message is in its life, for a caller waiting on it. */
export type MessageOutcome =
  | { status: 'pending' }
  | { status: 'discarded' }
  | { status: 'running'; turn: number }
  | { status: 'ended'; turn: number; reason: TurnEndReason; seq: number; answer?: string };

export type SessionStatus = 'idle' | 'running' | 'disposed';

/** Serializable state of a session (everything but the log itself). */
export interface SessionSnapshot {
  nextSeq: number;
  turn: number;
  step: number;
  turnOpen: boolean;
  stepOpen: boolean;
  inbox: Inbox;
  /** Ids of pending `next-step` messages that came by `steer` (they wake; injected ones do not). */
  wakingIds: string[];
  suspended: boolean;
  /**
   * Accepted ids, oldest first, with the lane that accepted them and the seq of the splice that inserted them
   * (absent for ids a pre-step listener added, and in snapshots written before receipts carried a seq).
   */
  recent: RecentTuple[];
  /** The most recent turn ends (at most TURN_END_WINDOW), for callers that wait for a message's turn. */
  turnEnds?: [turn: number, reason: TurnEndReason, seq: number, answer: string | null][];
  refused: number;
  lastRefusal?: string;
  /** Set while a cancel of the running turn is in progress (first cause wins). */
  canceling?: CancelCause;
  disposed: boolean;
  /** Model requests made so far in the whole session (the scripted model answers the n-th with step n). */
  modelRequests: number;
  /** Tokens the providers reported, per model label (`provider:model`, `default`), over the whole session. */
  usage?: Record<string, UsageTotals>;
  /** Committed model answers and tool results over the whole session (the budget's call counts). */
  ledger?: {
    modelCalls: number;
    toolCalls: number;
    costMicros?: number;
    inputTokens?: number;
    outputTokens?: number;
  };
  /** The budget limits in force (the config's, then as a person extended them). */
  budget?: BudgetLimits;
  /** Set while the open turn waits for a decision on its budget (`budget/exceeded` logged, `waits`). */
  budgetPause?: { turn: number; step: number };
  /** How the last budget pause ended (the driver reads it when the wait is over). */
  lastBudgetDecision?: 'extend' | 'deny';
}

/** How many resolved approvals are remembered (an `approve` that repeats a decision is told `duplicate`). */
export const RESOLVED_APPROVAL_WINDOW = 1024;

/** A tool call waiting for a person's decision (the `state` query lists them). */
export interface PendingApproval extends ApprovalRequest {
  /** Seq of its `tool/approval-requested` event. */
  seq: number;
}

/** Where an approval is: waiting, or resolved (by whom, how). */
export type ApprovalStatus =
  | { status: 'pending'; request: PendingApproval }
  | { status: 'resolved'; decision: ApprovalDecision; by: ApprovalResolvedBy; reason?: string };

/** Token totals of one model (or of the whole session). */
export interface UsageTotals {
  inputTokens: number;
  outputTokens: number;
  /** Model answers that reported usage. */
  steps: number;
}

export function initialSnapshot(): SessionSnapshot {
  return {
    nextSeq: 0,
    turn: 0,
    step: 0,
    turnOpen: false,
    stepOpen: false,
    inbox: EMPTY_INBOX,
    wakingIds: [],
    suspended: false,
    recent: [],
    refused: 0,
    disposed: false,
    modelRequests: 0,
  };
}

/** The `state` query result (wire). */
export interface SessionStateView {
  status: SessionStatus;
  turn: number;
  step: number;
  pending: { nextTurn: string[]; nextStep: string[] };
  refused: number;
  lastRefusal?: string;
  /** Reported token usage over the whole session, in total and per model label. */
  usage: UsageTotals & { byModel: Record<string, UsageTotals> };
  /** Tool calls of the running turn that wait for a decision (the `approve` update), oldest first. */
  approvals: PendingApproval[];
  /** The session's budget, when it has one: limits, what is used and left, and whether it waits for a decision. */
  budget?: {
    limits: BudgetLimits;
    used: BudgetUsed;
    remaining: Partial<BudgetUsed>;
    paused?: { turn: number; step: number };
  };
  /**
   * A session with a token budget (`context`): what its next model request would hold, estimated as the session
   * decides compaction (docs/protocol.md "Compaction"), the budget, and how many compactions it has made.
   */
  context?: { tokens: number; maxTokens: number; compactions: number; messages: number };
}

export type AcceptResult = { receipt: DeliveryReceipt; accepted: boolean };

export class SessionStateError extends Error {
  override name = 'SessionStateError';
}

export interface SessionCoreDeps {
  /** Workflow time in ms. */
  now(): number;
  /** Called with every appended event, after the core's own state has changed. */
  onEvent?(event: SessionEvent): void;
}

export class SessionCore {
  readonly log: SessionEvent[] = [];
  readonly transcript: TranscriptState;
  private readonly s: SessionSnapshot;
  private readonly recentLanes: Map<string, Remembered>;
  private readonly turnEnds: Map<number, { reason: TurnEndReason; seq: number; answer?: string }>;
  /** Text of the last assistant message of the open turn (the answer a waiter gets). */
  private answer: string | undefined;
  /** The message that opened the running turn: the follow-up it claimed, else the steer that woke it. */
  private opener: string | undefined;
  /** Approvals of the open turn still waiting, and the most recent resolved ones (a bounded window). */
  private readonly pendingApprovalsById = new Map<string, PendingApproval>();
  private readonly resolvedApprovals = new Map<
    string,
    { decision: ApprovalDecision; by: ApprovalResolvedBy; reason?: string }
  >();

  constructor(
    private readonly deps: SessionCoreDeps,
    snapshot: SessionSnapshot = initialSnapshot(),
    transcript: TranscriptState = emptyTranscript(),
  ) {
    this.s = structuredCloneJson(snapshot);
    this.recentLanes = new Map(this.s.recent.map((tuple) => [tuple[0], fromTuple(tuple)]));
    this.turnEnds = new Map(
      (this.s.turnEnds ?? []).map(([turn, reason, seq, answer]) => [
        turn,
        { reason, seq, ...(answer !== null ? { answer } : {}) },
      ]),
    );
    delete this.s.turnEnds;
    this.transcript = transcript;
  }

  // ---- reading ----

  get snapshot(): SessionSnapshot {
    const recent = [...this.recentLanes].map(([id, r]) => toTuple(id, r));
    let answerChars = 0;
    const turnEnds = [...this.turnEnds]
      .reverse()
      .map(([turn, e], i): NonNullable<SessionSnapshot['turnEnds']>[number] => {
        const answer = e.answer ?? null;
        if (answer === null) return [turn, e.reason, e.seq, null];
        answerChars += answer.length;
        return [turn, e.reason, e.seq, i === 0 || answerChars <= CARRIED_ANSWER_CHARS ? answer : null];
      })
      .reverse();
    return { ...structuredCloneJson(this.s), recent, ...(turnEnds.length ? { turnEnds } : {}) };
  }
  get inbox(): Inbox {
    return this.s.inbox;
  }
  get turn(): number {
    return this.s.turn;
  }
  get step(): number {
    return this.s.step;
  }
  get turnOpen(): boolean {
    return this.s.turnOpen;
  }
  get stepOpen(): boolean {
    return this.s.stepOpen;
  }
  get disposed(): boolean {
    return this.s.disposed;
  }
  get canceling(): CancelCause | undefined {
    return this.s.canceling;
  }
  get lastSeq(): number {
    return this.s.nextSeq - 1;
  }
  get modelRequests(): number {
    return this.s.modelRequests;
  }

  status(): SessionStatus {
    if (this.s.disposed) return 'disposed';
    return this.s.turnOpen ? 'running' : 'idle';
  }

  stateView(): SessionStateView {
    const view: SessionStateView = {
      status: this.status(),
      turn: this.s.turn,
      step: this.s.step,
      pending: {
        nextTurn: this.s.inbox.nextTurn.map((m) => m.id),
        nextStep: this.s.inbox.nextStep.map((m) => m.id),
      },
      refused: this.s.refused,
      usage: this.usage(),
      approvals: this.pendingApprovals(),
    };
    if (this.s.lastRefusal !== undefined) view.lastRefusal = this.s.lastRefusal;
    if (this.s.budget) {
      const used = this.budgetUsed();
      view.budget = {
        limits: { ...this.s.budget },
        used,
        remaining: budgetRemaining(used, this.s.budget),
        ...(this.s.budgetPause ? { paused: { ...this.s.budgetPause } } : {}),
      };
    }
    return view;
  }

  // ---- budget ----

  /** What the session has used of each budget limit: committed results only, so retries never count twice. */
  budgetUsed(): BudgetUsed {
    const u = this.usage();
    const ledger = this.s.ledger ?? { modelCalls: 0, toolCalls: 0 };
    // Tokens: the session's own (its usage totals) and its sub-sessions' (the ledger).
    return {
      inputTokens: u.inputTokens + (ledger.inputTokens ?? 0),
      outputTokens: u.outputTokens + (ledger.outputTokens ?? 0),
      modelCalls: ledger.modelCalls,
      toolCalls: ledger.toolCalls,
      costMicros: ledger.costMicros ?? 0,
    };
  }

  /** The limits in force; undefined when the session has no budget. */
  get budgetLimits(): BudgetLimits | undefined {
    return this.s.budget;
  }

  /** Sets the limits a session starts with (its config's); a carried session keeps the ones it had. */
  initBudget(limits: BudgetLimits): void {
    this.s.budget ??= { ...limits };
  }

  get budgetPaused(): { turn: number; step: number } | undefined {
    return this.s.budgetPause;
  }

  get lastBudgetDecision(): 'extend' | 'deny' | undefined {
    return this.s.lastBudgetDecision;
  }

  /** Logs that the next model step would breach the budget; with `waits`, the turn now waits for a decision. */
  budgetExceeded(over: BudgetKey[], waits: boolean): void {
    this.requireTurn('budget/exceeded');
    if (this.s.stepOpen) throw new SessionStateError('budget/exceeded inside an open step');
    if (this.s.budgetPause) throw new SessionStateError('budget/exceeded while already paused');
    const step = this.s.step + 1;
    this.append({
      type: 'budget/exceeded',
      data: { turn: this.s.turn, step, used: this.budgetUsed(), limits: { ...this.s.budget }, over, waits },
    });
    if (waits) this.s.budgetPause = { turn: this.s.turn, step };
  }

  /** Ends a budget pause: `extend` puts the new limits in force. False (nothing logged) when not paused. */
  resolveBudget(
    decision: 'extend' | 'deny',
    by: 'caller' | 'cancel',
    opts: { limits?: BudgetLimits; reason?: string } = {},
  ): boolean {
    const pause = this.s.budgetPause;
    if (!pause) return false;
    if (decision === 'extend') this.s.budget = { ...this.s.budget, ...opts.limits };
    this.s.budgetPause = undefined;
    this.s.lastBudgetDecision = decision;
    this.append({
      type: 'budget/resolved',
      data: {
        ...pause,
        decision,
        limits: { ...this.s.budget },
        ...(opts.reason !== undefined ? { reason: opts.reason } : {}),
        by,
      },
    });
    return true;
  }

  /** Tool calls waiting for a decision, oldest first. */
  pendingApprovals(): PendingApproval[] {
    return [...this.pendingApprovalsById.values()].map((a) => ({ ...a }));
  }

  /** Where the approval of a call is; undefined for a call that never needed one (or fell out of the window). */
  approvalOf(callId: string): ApprovalStatus | undefined {
    const pending = this.pendingApprovalsById.get(callId);
    if (pending) return { status: 'pending', request: { ...pending } };
    const resolved = this.resolvedApprovals.get(callId);
    return resolved ? { status: 'resolved', ...resolved } : undefined;
  }

  /** Id of the message that opened the running turn (the follow-up it claimed, else the steer that woke it). */
  get turnOpener(): string | undefined {
    return this.opener;
  }

  /** The last turn that ended (within the remembered window) and how it ended. */
  lastTurnEnd(): { turn: number; reason: TurnEndReason } | undefined {
    let last: { turn: number; reason: TurnEndReason } | undefined;
    for (const [turn, end] of this.turnEnds)
      if (!last || turn > last.turn) last = { turn, reason: end.reason };
    return last;
  }

  /** Reported token usage over the whole session (rule-free bookkeeping: counted from assistant messages). */
  usage(): UsageTotals & { byModel: Record<string, UsageTotals> } {
    const byModel = this.s.usage ?? {};
    const total: UsageTotals = { inputTokens: 0, outputTokens: 0, steps: 0 };
    for (const u of Object.values(byModel)) {
      total.inputTokens += u.inputTokens;
      total.outputTokens += u.outputTokens;
      total.steps += u.steps;
    }
    return { ...total, byModel: { ...byModel } };
  }

  /** Whether an idle session has waking work and may open a turn now. */
  hasWakingWork(): boolean {
    if (this.s.turnOpen || this.s.disposed || this.s.suspended) return false;
    return this.s.inbox.nextTurn.length > 0 || this.s.wakingIds.length > 0;
  }

  /** The receipt of an already accepted id, if it is within the recent window. */
  receiptOf(id: string): DeliveryReceipt | undefined {
    const seen = this.recentLanes.get(id);
    if (!seen) return undefined;
    return {
      messageId: id,
      lane: seen.lane,
      duplicate: true,
      ...(seen.seq !== undefined ? { seq: seen.seq } : {}),
    };
  }

  /**
   * Where an accepted message is in its life: pending, discarded by a cancel, in a running turn, or in a turn that
   * ended (with that turn's end reason and answer). Undefined for an id outside the recent window.
   */
  outcomeOf(id: string): MessageOutcome | undefined {
    const seen = this.recentLanes.get(id);
    if (!seen) return undefined;
    if (seen.discarded) return { status: 'discarded' };
    if (seen.turn === undefined) return { status: 'pending' };
    const ended = this.turnEnds.get(seen.turn);
    if (ended) return { status: 'ended', turn: seen.turn, ...ended };
    return { status: 'running', turn: seen.turn };
  }

  // ---- delivery (rules 1–9, 30) ----

  /**
   * Accepts a validated, identified message on a lane: one insertion splice, or nothing for a duplicate id.
   * A waking message accepted while a cancel is closing the turn goes to `next-turn` (rule 30).
   */
  accept(lane: Lane, message: UserMessage): AcceptResult {
    const duplicate = this.receiptOf(message.id);
    if (duplicate) return { receipt: duplicate, accepted: false };
    if (this.s.disposed) throw new SessionStateError('session disposed');
    const rule = LANE_RULES[lane];
    const target: InboxTarget = rule.wakes && this.s.canceling && this.s.turnOpen ? 'next-turn' : rule.target;
    const seq = this.s.nextSeq;
    this.splice(insertSplice(this.s.inbox, target, message));
    if (rule.wakes) {
      this.s.suspended = false;
      if (target === 'next-step') this.s.wakingIds.push(message.id);
    }
    this.remember(message.id, lane, seq);
    return { receipt: { messageId: message.id, lane, duplicate: false, seq }, accepted: true };
  }

  /** Counts a refused signal payload (rule 5): no event, no other state change. */
  refuse(reason: string): void {
    this.s.refused += 1;
    this.s.lastRefusal = reason.slice(0, 1000);
  }

  // ---- turns and claims (rules 8, 10, 11) ----

  openTurn(): number {
    if (this.s.turnOpen) throw new SessionStateError(`turn ${this.s.turn} is still open`);
    if (this.s.disposed) throw new SessionStateError('session disposed');
    this.s.turn += 1;
    this.s.step = 0;
    this.s.turnOpen = true;
    this.s.canceling = undefined;
    this.answer = undefined;
    this.append({ type: 'turn/start', data: { turn: this.s.turn } });
    return this.s.turn;
  }

  /**
   * Claims the batch for the coming pre-step: all of `next-step`, then at a turn boundary exactly one `next-turn`
   * item. Pure deletions, `next-step` first (rule 10).
   */
  claim(boundary: 'turn' | 'step'): UserMessage[] {
    this.requireTurn('claim');
    if (boundary === 'turn') this.opener = this.s.inbox.nextTurn[0]?.id ?? this.s.wakingIds[0];
    const batch: UserMessage[] = [...this.s.inbox.nextStep];
    for (const m of batch) this.mark(m.id, { turn: this.s.turn });
    const stepClaim = claimSplice(this.s.inbox, 'next-step', this.s.inbox.nextStep.length);
    if (stepClaim) this.splice(stepClaim);
    this.s.wakingIds = [];
    if (boundary === 'turn') {
      const first = this.s.inbox.nextTurn[0];
      const turnClaim = claimSplice(this.s.inbox, 'next-turn', 1);
      if (first && turnClaim) {
        batch.push(first);
        this.mark(first.id, { turn: this.s.turn });
        this.splice(turnClaim);
      }
    }
    return batch;
  }

  // ---- steps (rules 14, 18, 19) ----

  /** Opens the next step and enters its messages, in order (rule 14). */
  startStep(messages: readonly UserMessage[]): number {
    this.requireTurn('step/start');
    if (this.s.stepOpen) throw new SessionStateError(`step ${this.s.turn}.${this.s.step} is still open`);
    this.s.step += 1;
    this.s.stepOpen = true;
    this.append({ type: 'step/start', data: { turn: this.s.turn, step: this.s.step } });
    for (const message of messages) {
      this.append({ type: 'user/message', data: { message } });
      // Messages a pre-step listener added were never delivered: remember them so their ids stay unique (rule 4).
      if (!this.recentLanes.has(message.id)) this.remember(message.id, 'inject');
      this.mark(message.id, { turn: this.s.turn });
    }
    return this.s.step;
  }

  /** Counts one model request and returns its 0-based index in the session. */
  nextModelRequest(): number {
    this.s.modelRequests += 1;
    return this.s.modelRequests - 1;
  }

  /**
   * Appends the model's answer of the open step. `model` is the label its usage is counted under (the session
   * state's usage totals).
   */
  assistant(
    message: AssistantMessage,
    extra: { usage?: Usage; interrupted?: boolean; model?: string; tools?: ToolsOffered } = {},
  ): void {
    this.requireStep('assistant/message');
    const data: EventDataMap['assistant/message'] = { turn: this.s.turn, step: this.s.step, message };
    if (extra.usage) {
      data.usage = extra.usage;
      this.countUsage(extra.model ?? 'default', extra.usage);
    }
    if (extra.tools) data.tools = extra.tools;
    if (extra.interrupted) data.interrupted = true;
    this.count('modelCalls');
    if (extra.usage?.costMicros) {
      const ledger = this.s.ledger!;
      ledger.costMicros = (ledger.costMicros ?? 0) + extra.usage.costMicros;
    }
    const text = message.content.map((b) => b.text).join('');
    if (text) this.answer = text;
    this.append({ type: 'assistant/message', data });
  }

  private countUsage(model: string, usage: Usage, { step = true } = {}): void {
    const byModel = (this.s.usage ??= {});
    const totals = (byModel[model] ??= { inputTokens: 0, outputTokens: 0, steps: 0 });
    totals.inputTokens += usage.inputTokens ?? 0;
    totals.outputTokens += usage.outputTokens ?? 0;
    if (step) totals.steps += 1;
  }

  toolCall(call: ToolCallInfo): void {
    this.requireStep('tool/call');
    this.append({ type: 'tool/call', data: { turn: this.s.turn, step: this.s.step, ...call } });
  }

  toolResult(callId: string, content: ContentBlock[], error?: ErrorInfo): void {
    this.requireStep('tool/result');
    const data: EventDataMap['tool/result'] = { turn: this.s.turn, step: this.s.step, callId, content };
    if (error) data.error = error;
    this.count('toolCalls');
    this.append({ type: 'tool/result', data });
  }

  /** Records that a delegate call of the open step started its sub-session. */
  subsessionStarted(callId: string, session: string): void {
    this.requireStep('subsession/started');
    this.append({
      type: 'subsession/started',
      data: { turn: this.s.turn, step: this.s.step, callId, session },
    });
  }

  /** Records how a delegate call's sub-session ended (before the call's result commits). */
  subsessionEnded(callId: string, session: string, reason: TurnEndReason, used?: BudgetUsed): void {
    this.requireStep('subsession/ended');
    if (used) {
      // The parent's budget counts what its sub-session used.
      const ledger = (this.s.ledger ??= { modelCalls: 0, toolCalls: 0 });
      ledger.modelCalls += used.modelCalls;
      ledger.toolCalls += used.toolCalls;
      ledger.inputTokens = (ledger.inputTokens ?? 0) + used.inputTokens;
      ledger.outputTokens = (ledger.outputTokens ?? 0) + used.outputTokens;
      // A child's worker that predates cost accounting reports none.
      if (used.costMicros) ledger.costMicros = (ledger.costMicros ?? 0) + used.costMicros;
    }
    this.append({
      type: 'subsession/ended',
      data: { turn: this.s.turn, step: this.s.step, callId, session, reason, ...(used ? { used } : {}) },
    });
  }

  private count(what: 'modelCalls' | 'toolCalls'): void {
    const ledger = (this.s.ledger ??= { modelCalls: 0, toolCalls: 0 });
    ledger[what] += 1;
  }

  /**
   * The first event of a forked session: where it came from, and the model-visible messages it starts with (they
   * enter its transcript here, so what the model sees stays what the log holds).
   */
  forked(data: EventDataMap['session/forked']): void {
    if (this.s.nextSeq !== 0) throw new SessionStateError('session/forked must be the first event');
    this.append({ type: 'session/forked', data });
  }

  /** A compaction inside the open step, before its model request (./compaction.ts). */
  compacted(data: Omit<EventDataMap['compaction/summary'], 'turn' | 'step'>): void {
    this.requireStep('compaction/summary');
    // The summary's tokens and cost count like a model answer's; it is not a model call (`steps`, `modelCalls`).
    if (data.usage) {
      this.countUsage(data.model, data.usage, { step: false });
      if (data.usage.costMicros) {
        const ledger = (this.s.ledger ??= { modelCalls: 0, toolCalls: 0 });
        ledger.costMicros = (ledger.costMicros ?? 0) + data.usage.costMicros;
      }
    }
    this.append({ type: 'compaction/summary', data: { turn: this.s.turn, step: this.s.step, ...data } });
  }

  /** Records that a call of the open step waits for a decision before it runs. */
  requestApproval(request: Omit<ApprovalRequest, 'turn' | 'step'>): void {
    this.requireStep('tool/approval-requested');
    if (this.pendingApprovalsById.has(request.callId) || this.resolvedApprovals.has(request.callId))
      throw new SessionStateError(`approval of ${request.callId} requested twice`);
    const data: ApprovalRequest = { turn: this.s.turn, step: this.s.step, ...request };
    this.pendingApprovalsById.set(request.callId, { ...data, seq: this.s.nextSeq });
    this.append({ type: 'tool/approval-requested', data });
  }

  /** Resolves a pending approval; false (and nothing logged) when it is not pending. */
  resolveApproval(
    callId: string,
    decision: ApprovalDecision,
    by: ApprovalResolvedBy,
    reason?: string,
  ): boolean {
    const pending = this.pendingApprovalsById.get(callId);
    if (!pending) return false;
    this.pendingApprovalsById.delete(callId);
    const resolved = { decision, by, ...(reason !== undefined ? { reason } : {}) };
    this.resolvedApprovals.set(callId, resolved);
    for (const oldest of this.resolvedApprovals.keys()) {
      if (this.resolvedApprovals.size <= RESOLVED_APPROVAL_WINDOW) break;
      this.resolvedApprovals.delete(oldest);
    }
    this.append({
      type: 'tool/approval-resolved',
      data: { turn: pending.turn, step: pending.step, callId, ...resolved },
    });
    return true;
  }

  /** Inserts a producer's context at the end of `next-step` (tool additionalContexts, rule 19). Non-waking. */
  insertContext(message: UserMessage): boolean {
    if (this.receiptOf(message.id)) return false;
    const seq = this.s.nextSeq;
    this.splice(insertSplice(this.s.inbox, 'next-step', message));
    this.remember(message.id, 'inject', seq);
    return true;
  }

  endStep(): void {
    this.requireStep('step/end');
    this.s.stepOpen = false;
    this.append({ type: 'step/end', data: { turn: this.s.turn, step: this.s.step } });
  }

  /** Closes the open turn (rule 24). A turn that did not complete suspends waking until new waking work arrives. */
  endTurn(reason: TurnEndReason): void {
    this.requireTurn('turn/end');
    // Only a failure inside the loop leaves an approval waiting here; it cannot outlive its turn.
    for (const callId of [...this.pendingApprovalsById.keys()])
      this.resolveApproval(callId, 'deny', 'cancel');
    this.resolveBudget('deny', 'cancel');
    if (this.s.stepOpen) this.endStep();
    this.s.turnOpen = false;
    if (reason.kind === 'blocked' || reason.kind === 'error') this.s.suspended = true;
    this.s.canceling = undefined;
    this.turnEnds.set(this.s.turn, {
      reason,
      seq: this.s.nextSeq,
      ...(this.answer !== undefined ? { answer: this.answer } : {}),
    });
    for (const old of this.turnEnds.keys()) {
      if (this.turnEnds.size <= TURN_END_WINDOW) break;
      this.turnEnds.delete(old);
    }
    this.append({ type: 'turn/end', data: { turn: this.s.turn, reason } });
  }

  // ---- cancel and dispose (rules 27–31) ----

  /**
   * Starts a cancel: discards pending items unless keepInbox (next-step first, then next-turn), marks the running
   * turn as canceling with the first cause, and suspends waking for work pending now. Returns whether a turn is
   * running (the caller cancels it).
   */
  cancel(cause: CancelCause, keepInbox: boolean): boolean {
    if (!keepInbox) {
      for (const target of ['next-step', 'next-turn'] as const) {
        for (const m of listOf(this.s.inbox, target)) this.mark(m.id, { discarded: true });
        const splice = cancelSplice(this.s.inbox, target);
        if (splice) this.splice(splice);
      }
      this.s.wakingIds = [];
    }
    if (!this.s.turnOpen) return false;
    this.s.canceling ??= cause;
    this.s.suspended = true;
    return true;
  }

  dispose(): void {
    if (this.s.turnOpen) throw new SessionStateError('dispose while a turn is open');
    if (this.s.disposed) return;
    this.s.disposed = true;
    this.append({ type: 'session/disposed', data: {} });
  }

  // ---- internals ----

  private splice(splice: SpliceData): void {
    this.s.inbox = applySplice(this.s.inbox, splice);
    this.append({ type: 'agent/inbox/spliced', data: splice });
  }

  /** Remembers an accepted id; the oldest fall out of the window, but never one still pending. */
  /** Adds what happened to a remembered id (claimed in a turn, discarded). */
  private mark(id: string, what: { turn?: number; discarded?: true }): void {
    const seen = this.recentLanes.get(id);
    if (seen) Object.assign(seen, what);
  }

  private remember(id: string, lane: Lane, seq?: number): void {
    this.recentLanes.set(id, seq === undefined ? { lane } : { lane, seq });
    if (this.recentLanes.size <= RECENT_ID_WINDOW) return;
    const pending = new Set([...this.s.inbox.nextTurn, ...this.s.inbox.nextStep].map((m) => m.id));
    for (const oldest of this.recentLanes.keys()) {
      if (this.recentLanes.size <= RECENT_ID_WINDOW) break;
      if (!pending.has(oldest)) this.recentLanes.delete(oldest);
    }
  }

  private append(draft: EventDraft): void {
    const event = { seq: this.s.nextSeq, time: this.deps.now(), ...draft } as SessionEvent;
    this.s.nextSeq += 1;
    this.log.push(event);
    projectEvent(this.transcript, event);
    this.deps.onEvent?.(event);
  }

  private requireTurn(what: string): void {
    if (!this.s.turnOpen) throw new SessionStateError(`${what} outside a turn`);
  }

  private requireStep(what: string): void {
    this.requireTurn(what);
    if (!this.s.stepOpen) throw new SessionStateError(`${what} outside a step (turn ${this.s.turn})`);
  }
}

function fromTuple([, lane, seq, turn, discarded]: RecentTuple): Remembered {
  const r: Remembered = { lane };
  if (typeof seq === 'number') r.seq = seq;
  if (typeof turn === 'number') r.turn = turn;
  if (discarded === 1) r.discarded = true;
  return r;
}

function toTuple(id: string, r: Remembered): RecentTuple {
  if (r.discarded) return [id, r.lane, r.seq ?? null, r.turn ?? null, 1];
  if (r.turn !== undefined) return [id, r.lane, r.seq ?? null, r.turn];
  return r.seq === undefined ? [id, r.lane] : [id, r.lane, r.seq];
}

function structuredCloneJson<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}
