/**
 * The core's state and everything that reads it: the counters, the inbox, the snapshot a run carries, the `state`
 * query, the id windows, approvals and the budget as the driver and the queries see them. Nothing here changes the
 * state or writes the log: its one subclass, SessionCore (../session.ts), does both. Pure.
 */
import type { CancelCause, SessionEvent, TurnEndReason } from '../events';
import type { Inbox } from '../inbox';
import type { TranscriptState } from '../transcript';
import type { BudgetLimits, BudgetUsed, DeliveryReceipt } from '../wire';
import { Approvals, type ApprovalStatus, type PendingApproval } from './approvals';
import { IdWindows, type MessageOutcome } from './idWindows';
import { Ledger } from './ledger';
import {
  SessionStateError,
  structuredCloneJson,
  type SessionSnapshot,
  type SessionStatus,
  type UsageTotals,
} from './snapshot';
import { stateView, type SessionStateView } from './stateView';

export abstract class CoreState {
  readonly log: SessionEvent[] = [];
  protected readonly s: SessionSnapshot;
  protected readonly ids: IdWindows;
  protected readonly ledger: Ledger;
  protected readonly approvals = new Approvals();
  /** Text of the last assistant message of the open turn (the answer a waiter gets). */
  protected answer: string | undefined;
  /** The message that opened the running turn: the follow-up it claimed, else the steer that woke it. */
  protected opener: string | undefined;

  constructor(
    snapshot: SessionSnapshot,
    readonly transcript: TranscriptState,
  ) {
    this.s = structuredCloneJson(snapshot);
    this.ids = new IdWindows(this.s);
    delete this.s.turnEnds;
    this.ledger = new Ledger(this.s);
  }

  get snapshot(): SessionSnapshot {
    return { ...structuredCloneJson(this.s), ...this.ids.encode() };
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
    return stateView(this.s, {
      status: this.status(),
      usage: this.usage(),
      approvals: this.pendingApprovals(),
      budget: () => this.ledger.budgetView(),
    });
  }

  /** Reported token usage over the whole session (rule-free bookkeeping: counted from assistant messages). */
  usage(): UsageTotals & { byModel: Record<string, UsageTotals> } {
    return this.ledger.usage();
  }

  /** Tool calls waiting for a decision, oldest first. */
  pendingApprovals(): PendingApproval[] {
    return this.approvals.list();
  }

  /** Where the approval of a call is; undefined for a call that never needed one (or fell out of the window). */
  approvalOf(callId: string): ApprovalStatus | undefined {
    return this.approvals.statusOf(callId);
  }

  /** Id of the message that opened the running turn (the follow-up it claimed, else the steer that woke it). */
  get turnOpener(): string | undefined {
    return this.opener;
  }

  /** The last turn that ended (within the remembered window) and how it ended. */
  lastTurnEnd(): { turn: number; reason: TurnEndReason } | undefined {
    return this.ids.lastTurnEnd();
  }

  /** Whether an idle session has waking work and may open a turn now. */
  hasWakingWork(): boolean {
    if (this.s.turnOpen || this.s.disposed || this.s.suspended) return false;
    return this.s.inbox.nextTurn.length > 0 || this.s.wakingIds.length > 0;
  }

  /** The receipt of an already accepted id, if it is within the recent window. */
  receiptOf(id: string): DeliveryReceipt | undefined {
    return this.ids.receiptOf(id);
  }

  /**
   * Where an accepted message is in its life: pending, discarded by a cancel, in a running turn, or in a turn that
   * ended (with that turn's end reason and answer). Undefined for an id outside the recent window.
   */
  outcomeOf(id: string): MessageOutcome | undefined {
    return this.ids.outcomeOf(id);
  }

  // ---- budget (./core/ledger.ts) ----

  /** What the session has used of each budget limit: committed results only, so retries never count twice. */
  budgetUsed(): BudgetUsed {
    return this.ledger.budgetUsed();
  }

  /** The limits in force; undefined when the session has no budget. */
  get budgetLimits(): BudgetLimits | undefined {
    return this.ledger.limits;
  }

  get budgetPaused(): { turn: number; step: number } | undefined {
    return this.ledger.paused;
  }

  get lastBudgetDecision(): 'extend' | 'deny' | undefined {
    return this.ledger.lastDecision;
  }

  /** Throws a SessionStateError naming `what` unless a turn is open. */
  protected requireTurn(what: string): void {
    if (!this.s.turnOpen) throw new SessionStateError(`${what} outside a turn`);
  }

  /** Throws a SessionStateError naming `what` unless a step is open. */
  protected requireStep(what: string): void {
    this.requireTurn(what);
    if (!this.s.stepOpen) throw new SessionStateError(`${what} outside a step (turn ${this.s.turn})`);
  }
}
