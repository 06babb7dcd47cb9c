/**
 * SessionCore: the session's state machine over the log, and the only writer of the log. Every state change goes
 * through here and is appended as one event; the workflow only decides *when* (it awaits activities and signals),
 * never *what* is written. Pure and deterministic: time comes from an injected function; the state is a plain
 * serializable snapshot (./core/snapshot.ts).
 *
 * Waking (rules 7, 8, 15, 16, 22, 23): a turn starts when the session is idle, not suspended, and has waking work —
 * a follow-up in `next-turn` or a steer in `next-step`. Injected context alone never wakes it. A turn that ends
 * blocked, in error or aborted suspends the session: the work still pending waits for the next waking message.
 *
 * This file is the lifecycle (delivery, turns, claims, steps, cancel, dispose); the reads and the parts that keep
 * state without appending are in ./core/ (coreState, idWindows, ledger, approvals, stateView).
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
import { applySplice, cancelSplice, claimSplice, insertSplice, listOf } from './inbox';
import type { ContentBlock, UserMessage } from './messages';
import { emptyTranscript, projectEvent, type TranscriptState } from './transcript';
import {
  LANE_RULES,
  type BudgetKey,
  type BudgetLimits,
  type BudgetUsed,
  type DeliveryReceipt,
  type Lane,
} from './wire';
import { CoreState } from './core/coreState';
import { initialSnapshot, SessionStateError, type SessionSnapshot } from './core/snapshot';

export type { SessionSnapshot, SessionStatus, UsageTotals } from './core/snapshot';
export type { SessionStateView } from './core/stateView';

export type AcceptResult = { receipt: DeliveryReceipt; accepted: boolean };

export interface SessionCoreDeps {
  /** Workflow time in ms. */
  now(): number;
  /** Called with every appended event, after the core's own state has changed. */
  onEvent?(event: SessionEvent): void;
}

export class SessionCore extends CoreState {
  constructor(
    private readonly deps: SessionCoreDeps,
    snapshot: SessionSnapshot = initialSnapshot(),
    transcript: TranscriptState = emptyTranscript(),
  ) {
    super(snapshot, transcript);
  }

  // ---- budget (./core/ledger.ts) ----

  /** Sets the limits a session starts with (its config's); a carried session keeps the ones it had. */
  initBudget(limits: BudgetLimits): void {
    this.ledger.initBudget(limits);
  }

  /** Logs that the next model step would breach the budget; with `waits`, the turn now waits for a decision. */
  budgetExceeded(over: BudgetKey[], waits: boolean): void {
    this.requireTurn('budget/exceeded');
    if (this.s.stepOpen) throw new SessionStateError('budget/exceeded inside an open step');
    if (this.ledger.paused) throw new SessionStateError('budget/exceeded while already paused');
    const data = this.ledger.exceeded(over, waits);
    this.append({ type: 'budget/exceeded', data });
    if (waits) this.ledger.pause(data);
  }

  /** Ends a budget pause: `extend` puts the new limits in force. False (nothing logged) when not paused. */
  resolveBudget(
    decision: 'extend' | 'deny',
    by: 'caller' | 'cancel',
    opts: { limits?: BudgetLimits; reason?: string } = {},
  ): boolean {
    const data = this.ledger.resolve(decision, by, opts);
    if (!data) return false;
    this.append({ type: 'budget/resolved', data });
    return true;
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
    this.ids.remember(message.id, lane, this.s.inbox, seq);
    return { receipt: { messageId: message.id, lane, duplicate: false, seq }, accepted: true };
  }

  /** Counts a refused signal payload (rule 5): no event, no other state change. */
  refuse(reason: string): void {
    this.s.refused += 1;
    this.s.lastRefusal = reason.slice(0, 1000);
  }

  /** Inserts a producer's context at the end of `next-step` (tool additionalContexts, rule 19). Non-waking. */
  insertContext(message: UserMessage): boolean {
    if (this.receiptOf(message.id)) return false;
    const seq = this.s.nextSeq;
    this.splice(insertSplice(this.s.inbox, 'next-step', message));
    this.ids.remember(message.id, 'inject', this.s.inbox, seq);
    return true;
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
    for (const m of batch) this.ids.mark(m.id, { turn: this.s.turn });
    const stepClaim = claimSplice(this.s.inbox, 'next-step', this.s.inbox.nextStep.length);
    if (stepClaim) this.splice(stepClaim);
    this.s.wakingIds = [];
    if (boundary === 'turn') {
      const first = this.s.inbox.nextTurn[0];
      const turnClaim = claimSplice(this.s.inbox, 'next-turn', 1);
      if (first && turnClaim) {
        batch.push(first);
        this.ids.mark(first.id, { turn: this.s.turn });
        this.splice(turnClaim);
      }
    }
    return batch;
  }

  /** Closes the open turn (rule 24). A turn that did not complete suspends waking until new waking work arrives. */
  endTurn(reason: TurnEndReason): void {
    this.requireTurn('turn/end');
    // Only a failure inside the loop leaves an approval waiting here; it cannot outlive its turn.
    for (const callId of this.approvals.pendingIds()) this.resolveApproval(callId, 'deny', 'cancel');
    this.resolveBudget('deny', 'cancel');
    if (this.s.stepOpen) this.endStep();
    this.s.turnOpen = false;
    if (reason.kind === 'blocked' || reason.kind === 'error') this.s.suspended = true;
    this.s.canceling = undefined;
    this.ids.turnEnded(this.s.turn, {
      reason,
      seq: this.s.nextSeq,
      ...(this.answer !== undefined ? { answer: this.answer } : {}),
    });
    this.append({ type: 'turn/end', data: { turn: this.s.turn, reason } });
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
      if (!this.ids.has(message.id)) this.ids.remember(message.id, 'inject', this.s.inbox);
      this.ids.mark(message.id, { turn: this.s.turn });
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
    if (extra.usage) data.usage = extra.usage;
    if (extra.tools) data.tools = extra.tools;
    if (extra.interrupted) data.interrupted = true;
    this.ledger.modelAnswer(extra.usage, extra.model ?? 'default');
    const text = message.content.map((b) => b.text).join('');
    if (text) this.answer = text;
    this.append({ type: 'assistant/message', data });
  }

  toolCall(call: ToolCallInfo): void {
    this.requireStep('tool/call');
    this.append({ type: 'tool/call', data: { turn: this.s.turn, step: this.s.step, ...call } });
  }

  toolResult(callId: string, content: ContentBlock[], error?: ErrorInfo): void {
    this.requireStep('tool/result');
    const data: EventDataMap['tool/result'] = { turn: this.s.turn, step: this.s.step, callId, content };
    if (error) data.error = error;
    this.ledger.toolResult();
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
    if (used) this.ledger.subsession(used);
    this.append({
      type: 'subsession/ended',
      data: { turn: this.s.turn, step: this.s.step, callId, session, reason, ...(used ? { used } : {}) },
    });
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
    this.ledger.compaction(data.usage, data.model);
    this.append({ type: 'compaction/summary', data: { turn: this.s.turn, step: this.s.step, ...data } });
  }

  /** Records that a call of the open step waits for a decision before it runs. */
  requestApproval(request: Omit<ApprovalRequest, 'turn' | 'step'>): void {
    this.requireStep('tool/approval-requested');
    const data: ApprovalRequest = { turn: this.s.turn, step: this.s.step, ...request };
    this.approvals.request(data, this.s.nextSeq);
    this.append({ type: 'tool/approval-requested', data });
  }

  /** Resolves a pending approval; false (and nothing logged) when it is not pending. */
  resolveApproval(
    callId: string,
    decision: ApprovalDecision,
    by: ApprovalResolvedBy,
    reason?: string,
  ): boolean {
    const data = this.approvals.resolve(callId, decision, by, reason);
    if (!data) return false;
    this.append({ type: 'tool/approval-resolved', data });
    return true;
  }

  endStep(): void {
    this.requireStep('step/end');
    this.s.stepOpen = false;
    this.append({ type: 'step/end', data: { turn: this.s.turn, step: this.s.step } });
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
        for (const m of listOf(this.s.inbox, target)) this.ids.mark(m.id, { discarded: true });
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

  // ---- the log ----

  private splice(splice: SpliceData): void {
    this.s.inbox = applySplice(this.s.inbox, splice);
    this.append({ type: 'agent/inbox/spliced', data: splice });
  }

  /** Appends one event: the only place the log grows; the transcript projection follows it. */
  private append(draft: EventDraft): void {
    const event = { seq: this.s.nextSeq, time: this.deps.now(), ...draft } as SessionEvent;
    this.s.nextSeq += 1;
    this.log.push(event);
    projectEvent(this.transcript, event);
    this.deps.onEvent?.(event);
  }
}
