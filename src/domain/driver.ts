/**
 * The session driver: the one turn loop of a session, as a generator of effects (./effects.ts), plus the handlers
 * of everything a caller sends it. The workflow interprets its effects as activities, conditions and cancellation
 * scopes; the tests interpret them in memory. Nothing here awaits, touches Temporal or does I/O: time and ids come
 * from `DriverDeps`, and every state change goes through SessionCore, which appends it to the log.
 * Decision note: docs/decisions/2026-12-03-one-loop.md.
 *
 * This file wires the parts (./driver/) and holds the handlers; each part has one job:
 * inputs.ts (payload checks) · turnLoop.ts (the loop) · modelStep.ts (one step) · budgetGate.ts · contextMeter.ts
 * (compaction trigger, token meter) · requestCursor.ts (request delta, held references) · resolvedNames.ts (memo of
 * tools and hooks) · carry.ts (continue-as-new) · ask.ts (effects and how a part ends the turn).
 */
import { FailureTypes } from './codes';
import type { CancelCause, ErrorInfo, SessionEvent, ToolCallInfo } from './events';
import type { ModelStepResult } from './results';
import { SessionCore, type SessionStateView } from './session';
import { SIGNAL_NAMES_TEXT, type SignalName } from './wireNames';
import {
  ApproveInputSchema,
  BudgetDecisionSchema,
  CancelInputSchema,
  DeliverInputSchema,
  DisposeInputSchema,
  LaneSignalSchema,
  UpgradeInputSchema,
  laneInputProblem,
  undecodableReason,
  type ApprovalReceipt,
  type ApproveInput,
  type BudgetDecision,
  type BudgetReceipt,
  type DeliveryReceipt,
  type Lane,
  type LaneMessageInput,
  type SessionConfig,
  type WaitOutcome,
} from './wire';
import type { DriverGenerator } from './driver/ask';
import { carryState, restoredTranscript, type CarriedSession } from './driver/carry';
import { TokenMeter } from './driver/contextMeter';
import {
  checkApprove,
  checkBudget,
  deliveredUserMessage,
  parseUpdate,
  readPayload,
  SessionRefusal,
} from './driver/inputs';
import { SubsessionCount } from './driver/modelStep';
import { RequestCursor } from './driver/requestCursor';
import { ResolvedNames } from './driver/resolvedNames';
import { runSession, type LoopContext } from './driver/turnLoop';

export type { DriverGenerator } from './driver/ask';
export { DEFAULT_CONTINUE_AS_NEW_AFTER_EVENTS, type CarriedSession } from './driver/carry';
export { SessionRefusal } from './driver/inputs';
export { modelForRequest } from './driver/requestCursor';

export interface DriverDeps {
  /** The session's id (the workflow id): sub-session ids derive from it. */
  sessionId?: string;
  /** Workflow time in ms. */
  now(): number;
  /** A new unique id (the workflow's deterministic uuid4). */
  newId(): string;
  /** Called when a cancel reaches a running turn: the interpreter interrupts what the turn awaits. */
  cancelTurn?(): void;
  /** Whether the server suggests continuing as new (history size). */
  continueAsNewSuggested?(): boolean;
  /** Called for a refused signal payload (the workflow logs it). */
  onRefused?(lane: string, reason: string): void;
  /** Called with every appended event (the workflow upserts its search attributes at boundaries). */
  onEvent?(event: SessionEvent): void;
  /** Called when a turn fails for a reason that is not an outcome (a bug); the turn still closes. */
  onInternalError?(turn: number, err: unknown): void;
  /** Called when an approval is resolved by a caller or a timeout: the interpreter wakes the tool batch. */
  onApprovalResolved?(callId: string): void;
  /**
   * Whether the session should move to a new version of its workflow code (the deployment's target changed;
   * docs/upgrades.md): read at quiet points only, where it makes the loop continue as new.
   */
  newVersionWaits?(): boolean;
}

export class SessionDriver {
  readonly core: SessionCore;
  private disposeRequested = false;
  /** An `upgrade` signal came since the loop last looked (it wakes an idle session to look for a new version). */
  private upgradeAsked = false;
  private readonly cursor: RequestCursor;
  private readonly meter: TokenMeter;
  private readonly loop: LoopContext;

  constructor(
    readonly config: SessionConfig,
    private readonly deps: DriverDeps,
    carried?: CarriedSession,
  ) {
    const transcript = restoredTranscript(carried);
    const meter = carried?.context ?? { tokens: 0, count: 0 };
    this.core = new SessionCore(
      { now: () => deps.now(), ...(deps.onEvent ? { onEvent: deps.onEvent } : {}) },
      carried?.snapshot,
      transcript,
    );
    this.cursor = new RequestCursor(this.core, carried?.sent ?? { count: 0, hash: transcript.hash });
    this.meter = new TokenMeter(this.core, config, this.cursor, meter);
    this.loop = {
      core: this.core,
      config,
      sessionId: deps.sessionId,
      newId: () => deps.newId(),
      cursor: this.cursor,
      meter: this.meter,
      subsessions: new SubsessionCount(),
      names: new ResolvedNames(config),
      disposing: () => this.disposeRequested,
      clearUpgradeAsk: () => {
        this.upgradeAsked = false;
      },
      canContinueAsNew: () => this.canContinueAsNew(),
      deps,
    };
    // A fork's first run starts its log with the snapshot it was forked with (later runs carry the transcript):
    // here, before any signal or update is handled, so it is always the first event.
    const fork = config.fork;
    if (fork?.messages && !carried)
      this.core.forked({ from: fork.from, throughSeq: fork.throughSeq, messages: fork.messages });
    if (config.budget) {
      const { onExceeded: _mode, ...limits } = config.budget;
      this.core.initBudget(limits);
    }
  }

  // ---- what callers send (rules 1–5, 27–31) ----

  /** Any signal, by name. A signal cannot reject: bad input is counted and reported, never thrown (rule 5). */
  signal(name: string, raw: unknown): void {
    const undecodable = undecodableReason(raw);
    if (undecodable) return this.refuse(name, undecodable);
    const wireName = name as SignalName; // a case that is not a signal of ./wireNames.ts does not compile
    switch (wireName) {
      case 'followup':
      case 'steer':
      case 'inject':
        return this.laneSignal(wireName, raw);
      case 'cancel':
        return this.cancelSignal(raw);
      case 'dispose':
        return this.disposeSignal(raw);
      case 'upgrade':
        return this.upgradeSignal(raw);
      default:
        return this.refuse(name, `unknown signal (expected ${SIGNAL_NAMES_TEXT})`);
    }
  }

  /** Checks a `deliver` payload; throws a SessionRefusal naming the field (the update's validator). */
  validateDeliver(raw: unknown): void {
    this.checkedDelivery(raw);
  }

  /**
   * The outcome a waiting `deliver` returns once its message's turn has ended (or a cancel discarded the message);
   * undefined while it is still pending or running.
   */
  waitOutcome(messageId: string): WaitOutcome | undefined {
    const outcome = this.core.outcomeOf(messageId);
    if (outcome?.status === 'discarded' || outcome?.status === 'ended') return outcome;
    return undefined;
  }

  /** Accepts a validated `deliver` payload; throws a SessionRefusal if the session is being disposed. */
  deliver(raw: unknown): DeliveryReceipt {
    const input = this.checkedDelivery(raw);
    return this.accept(input.lane, input.message).receipt;
  }

  /**
   * Checks an `approve` payload (the update's validator): the call must wait for a decision, or have been resolved
   * with the same one (then the update answers `duplicate`). Throws a SessionRefusal naming the call.
   */
  validateApprove(raw: unknown): ApproveInput & { duplicate: boolean } {
    return checkApprove(this.core, parseUpdate('approve', ApproveInputSchema, raw));
  }

  /** Takes a validated decision on a call waiting for approval (the `approve` update). */
  approve(raw: unknown): ApprovalReceipt {
    const input = this.validateApprove(raw);
    if (!input.duplicate) {
      this.core.resolveApproval(input.callId, input.decision, 'caller', input.reason);
      this.deps.onApprovalResolved?.(input.callId);
    }
    return { callId: input.callId, decision: input.decision, duplicate: input.duplicate };
  }

  /**
   * Checks a `budget` payload (the update's validator): the session must wait at its budget, and an extension must
   * cover what is used, so the step can run (a limit that does not is refused naming it). Throws a SessionRefusal.
   */
  validateBudget(raw: unknown): BudgetDecision {
    return checkBudget(this.core, parseUpdate('budget', BudgetDecisionSchema, raw));
  }

  /** Takes a person's decision on a session waiting at its budget (the `budget` update). */
  budget(raw: unknown): BudgetReceipt {
    const input = this.validateBudget(raw);
    const reason = input.reason !== undefined ? { reason: input.reason } : {};
    if (input.decision === 'extend')
      this.core.resolveBudget('extend', 'caller', { limits: input.limits, ...reason });
    else this.core.resolveBudget('deny', 'caller', reason);
    return { decision: input.decision, limits: { ...this.core.budgetLimits } };
  }

  /** The session's approval timeout for a call ran out: a call still waiting is answered APPROVAL_TIMEOUT. */
  approvalTimedOut(callId: string): void {
    if (this.core.resolveApproval(callId, 'deny', 'timeout')) this.deps.onApprovalResolved?.(callId);
  }

  /** A `deliver` payload checked: its schema, its lane's rules, and that the session is not being disposed. */
  private checkedDelivery(raw: unknown): { lane: Lane; message: LaneMessageInput } {
    const input = parseUpdate('deliver', DeliverInputSchema, raw);
    const problem = laneInputProblem(input.lane, input.message, this.deps.sessionId);
    if (problem) throw new SessionRefusal(FailureTypes.InvalidPayload, `invalid deliver payload: ${problem}`);
    if (this.disposeRequested || this.core.disposed)
      throw new SessionRefusal(FailureTypes.SessionDisposed, 'session disposed');
    return input;
  }

  private laneSignal(lane: Lane, raw: unknown): void {
    const read = readPayload(LaneSignalSchema, raw);
    if (!read.ok) return this.refuse(lane, read.reason);
    const problem = laneInputProblem(lane, read.data.message, this.deps.sessionId);
    if (problem) return this.refuse(lane, problem);
    if (this.disposeRequested || this.core.disposed) return this.refuse(lane, 'session disposed');
    this.accept(lane, read.data.message);
  }

  /** Accepts a checked message on a lane; one that names its id is then held where it was delivered. */
  private accept(lane: Lane, input: LaneMessageInput) {
    const message = deliveredUserMessage(input, this.deps.newId);
    const accepted = this.core.accept(lane, message);
    if (accepted.accepted && input.id !== undefined) this.cursor.delivery(message);
    return accepted;
  }

  private cancelSignal(raw: unknown): void {
    const read = readPayload(CancelInputSchema, raw === undefined ? {} : raw);
    if (!read.ok) return this.refuse('cancel', read.reason);
    if (this.disposeRequested) return;
    this.cancelTurn(read.data.cause ?? { kind: 'user' }, read.data.keepInbox === true);
  }

  /** `dispose` takes exactly `{}` (or no argument); anything else is refused and disposes nothing. */
  private disposeSignal(raw: unknown): void {
    const read = readPayload(DisposeInputSchema, raw === undefined ? {} : raw);
    if (!read.ok) return this.refuse('dispose', read.reason);
    if (this.disposeRequested) return;
    this.disposeRequested = true;
    this.cancelTurn({ kind: 'disposed' }, false);
  }

  /** `upgrade` takes `{}` or `{reason}`; it wakes the loop, which moves if a new version waits (docs/upgrades.md). */
  private upgradeSignal(raw: unknown): void {
    const read = readPayload(UpgradeInputSchema, raw === undefined ? {} : raw);
    if (!read.ok) return this.refuse('upgrade', read.reason);
    this.upgradeAsked = true;
  }

  private refuse(lane: string, reason: string): void {
    this.core.refuse(`${lane}: ${reason}`);
    this.deps.onRefused?.(lane, reason);
  }

  /** Discards pending work (unless keepInbox) and cancels the running turn; the first cause wins (rule 27). */
  private cancelTurn(cause: CancelCause, keepInbox: boolean): void {
    if (this.core.cancel(cause, keepInbox)) this.deps.cancelTurn?.();
  }

  // ---- what the interpreter asks ----

  /** The session's state (the `state` query): the core's, and the token budget's when the session has one. */
  stateView(): SessionStateView {
    const view = this.core.stateView();
    const context = this.meter.view();
    return context ? { ...view, context } : view;
  }

  /** Whether `wait-for-work` is over: waking work for an idle session, a dispose, or an `upgrade` to look at. */
  hasWork(): boolean {
    return this.disposeRequested || this.core.hasWakingWork() || this.upgradeAsked;
  }

  get disposing(): boolean {
    return this.disposeRequested;
  }

  /** Whether this is still a quiet point to continue as new at (between turns, no dispose). */
  canContinueAsNew(): boolean {
    return !this.disposeRequested && !this.core.turnOpen && !this.core.disposed;
  }

  /** The state the next run starts from (rule 33). */
  carry(previousRunId: string): CarriedSession {
    const tokenBudget = this.config.context
      ? { keptTail: this.meter.keptTail(), tokens: this.meter.estimateRequest() }
      : undefined;
    return carryState(this.core, this.cursor.sent, previousRunId, tokenBudget);
  }

  // ---- the loop ----

  /** The session's life: turns while there is waking work, continue-as-new at quiet points, dispose at the end. */
  run(): DriverGenerator {
    return runSession(this.loop);
  }
}

export type { ToolCallInfo, ErrorInfo, ModelStepResult };
