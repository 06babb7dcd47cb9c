/**
 * The session driver: the one turn loop of a session, as a generator of effects (./effects.ts), plus the handlers
 * of everything a caller sends it. The workflow interprets its effects as activities, conditions and cancellation
 * scopes; the tests interpret them in memory. Nothing here awaits, touches Temporal or does I/O: time and ids come
 * from `DriverDeps`, and every state change goes through SessionCore, which appends it to the log.
 *
 * The loop (docs/semantics.md): wait for waking work (rules 7, 8, 23) → open the turn → claim (rule 10) →
 * pre-step waterfall (13–17) → step: model call, tool batch with results in call order and contexts after them
 * (18–21) → next boundary, until the turn ends (22, 24, 26); cancel and dispose close the turn well-formed (27–31);
 * between turns, at a quiet point, continue as new (33). Decision note: docs/decisions/2026-12-03-one-loop.md.
 */
import { ErrorCodes, FailureTypes } from './codes';
import {
  compactionCut,
  compactionThreshold,
  DEFAULT_KEEP_RECENT,
  estimateTokens,
  type ContextMeter,
} from './compaction';
import type {
  Answer,
  AnswerMap,
  Effect,
  HookDescriptor,
  ModelStepResult,
  Resolved,
  ToolDescriptor,
} from './effects';
import type { CancelCause, ErrorInfo, SessionEvent, ToolCallInfo, TurnEndReason } from './events';
import { afterPreStep, afterStep, type StepOutcome } from './loop';
import { assistantMessage, entryHash, type HeldIn, type RefTarget } from './entryRefs';
import { makeUserMessage, USER_SOURCE, type UserMessage } from './messages';
import { sourceWithRefs } from './sessionRefs';
import { SessionCore, type SessionSnapshot, type SessionStateView } from './session';
import { planDelegate, type DelegatePlan } from './subsession';
import { runToolBatch } from './toolBatch';
import {
  EMPTY_TRANSCRIPT_HASH,
  emptyTranscript,
  transcriptLength,
  type TranscriptEntry,
  type TranscriptState,
} from './transcript';
import { describeZodIssue } from './util';
import {
  ApproveInputSchema,
  BudgetDecisionSchema,
  budgetBreaches,
  budgetFloor,
  type BudgetDecision,
  type BudgetReceipt,
  CancelInputSchema,
  DeliverInputSchema,
  DisposeInputSchema,
  DEFAULT_MAX_PARALLEL_TOOL_CALLS,
  LaneSignalSchema,
  laneInputProblem,
  modelLabel,
  undecodableReason,
  type ApprovalReceipt,
  type ApproveInput,
  type DeliveryReceipt,
  type Lane,
  type ModelSpec,
  type SessionConfig,
  type WaitOutcome,
} from './wire';

/**
 * What a run hands to the next one across continue-as-new (rule 33): the core's snapshot (inbox, counters, recent
 * ids, seq), and references instead of content — the earlier runs keep their events and transcript entries and
 * answer queries for them, so the carried state stays small whatever the session's length.
 */
export interface CarriedSession {
  snapshot: SessionSnapshot;
  /**
   * The transcript's hash, and the entries no model request has sent yet (usually the last answer), which the new
   * run holds from index `base` on: every entry then reaches some model request's input, so a run's history holds
   * all of its transcript (src/activities/historyContext.ts). Runs carried before `entries` existed omit it.
   */
  transcript: {
    base: number;
    hash: string;
    entries?: TranscriptEntry[];
    /** The log seq that added each of `entries`. */
    seqs?: number[];
    /** Compactions so far (absent: none). */
    generation?: number;
  };
  /** Count and hash of the transcript prefix the last model request saw. */
  sent: { count: number; hash: string };
  /** The projection's token count so far (sessions with `context`). */
  context?: ContextMeter;
  previousRunId: string;
}

/** Default number of events a run may log before it continues as new at the next quiet point. */
export const DEFAULT_CONTINUE_AS_NEW_AFTER_EVENTS = 10_000;

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
}

/** A caller's input the session refuses; `failureType` is the ApplicationFailure type the update path throws. */
export class SessionRefusal extends Error {
  override name = 'SessionRefusal';
  constructor(
    readonly failureType:
      | typeof FailureTypes.InvalidPayload
      | typeof FailureTypes.SessionDisposed
      | typeof FailureTypes.ApprovalRefused
      | typeof FailureTypes.BudgetRefused,
    message: string,
  ) {
    super(message);
  }
}

/** Yields one effect and returns its typed answer (the interpreter answers each effect type with its own shape). */
function* ask<T extends Effect>(effect: T): Generator<Effect, AnswerMap[T['type']], Answer> {
  return (yield effect) as AnswerMap[T['type']];
}

export type DriverGenerator = Generator<Effect, void, Answer>;

type StepResult =
  { kind: 'done'; outcome: Omit<StepOutcome, 'nextStepPending'> } | { kind: 'end'; reason: TurnEndReason };

export class SessionDriver {
  readonly core: SessionCore;
  /** Count and hash of the transcript prefix the last model request saw (history grows with new content only). */
  private sent: { count: number; hash: string };
  private disposeRequested = false;
  private tools: Map<string, ToolDescriptor> | undefined;
  private hooks: HookDescriptor[] | undefined;
  /** Sub-sessions the open turn has started (the per-turn limit). */
  private subsessions = { turn: 0, started: 0 };
  /**
   * Messages this run accepted from a delivery that named their id, until they enter: their `user/message` entry is
   * then held by that signal or update in this run's history (./entryRefs.ts).
   */
  private readonly delivered = new Map<string, UserMessage>();
  /** Entries of this run no request has sent yet whose content this run's history holds, and where. */
  private readonly held = new Map<TranscriptEntry, HeldIn & { seq: number }>();
  /** The projection's tokens as far as known (./compaction.ts). */
  private meter: ContextMeter;
  /** How many messages the open step entered (they are the newest entries until its request; a cut keeps them). */
  private stepEntered = 0;

  constructor(
    readonly config: SessionConfig,
    private readonly deps: DriverDeps,
    carried?: CarriedSession,
  ) {
    const transcript: TranscriptState = emptyTranscript();
    if (carried) {
      transcript.base = carried.transcript.base;
      transcript.hash = carried.transcript.hash;
      transcript.entries = [...(carried.transcript.entries ?? [])];
      transcript.seqs = carried.transcript.seqs ?? transcript.entries.map(() => 0);
      transcript.generation = carried.transcript.generation ?? 0;
      transcript.previousRunId = carried.previousRunId;
    }
    this.meter = carried?.context ?? { tokens: 0, count: 0 };
    this.core = new SessionCore(
      { now: () => deps.now(), ...(deps.onEvent ? { onEvent: deps.onEvent } : {}) },
      carried?.snapshot,
      transcript,
    );
    this.sent = carried?.sent ?? { count: 0, hash: transcript.hash };
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
    switch (name) {
      case 'followup':
      case 'steer':
      case 'inject':
        return this.laneSignal(name, raw);
      case 'cancel':
        return this.cancelSignal(raw);
      case 'dispose':
        return this.disposeSignal(raw);
      default:
        return this.refuse(name, 'unknown signal (expected followup, steer, inject, cancel or dispose)');
    }
  }

  /** Checks a `deliver` payload; throws a SessionRefusal naming the field (the update's validator). */
  validateDeliver(raw: unknown): void {
    const undecodable = undecodableReason(raw);
    if (undecodable)
      throw new SessionRefusal(FailureTypes.InvalidPayload, `invalid deliver payload: ${undecodable}`);
    const parsed = DeliverInputSchema.safeParse(raw);
    if (!parsed.success)
      throw new SessionRefusal(
        FailureTypes.InvalidPayload,
        `invalid deliver payload: ${describeZodIssue(parsed.error.issues, 'payload')}`,
      );
    const problem = laneInputProblem(parsed.data.lane, parsed.data.message, this.deps.sessionId);
    if (problem) throw new SessionRefusal(FailureTypes.InvalidPayload, `invalid deliver payload: ${problem}`);
    this.refuseIfDisposing();
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
    this.validateDeliver(raw);
    const input = DeliverInputSchema.parse(raw);
    const message = makeUserMessage(
      { ...input.message, source: sourceWithRefs(input.message) },
      USER_SOURCE,
      this.deps.newId,
    );
    const accepted = this.core.accept(input.lane, message);
    if (accepted.accepted && input.message.id !== undefined) this.delivered.set(message.id, message);
    return accepted.receipt;
  }

  /**
   * Checks an `approve` payload (the update's validator): the call must wait for a decision, or have been resolved
   * with the same one (then the update answers `duplicate`). Throws a SessionRefusal naming the call.
   */
  validateApprove(raw: unknown): ApproveInput & { duplicate: boolean } {
    const undecodable = undecodableReason(raw);
    if (undecodable)
      throw new SessionRefusal(FailureTypes.InvalidPayload, `invalid approve payload: ${undecodable}`);
    const parsed = ApproveInputSchema.safeParse(raw);
    if (!parsed.success)
      throw new SessionRefusal(
        FailureTypes.InvalidPayload,
        `invalid approve payload: ${describeZodIssue(parsed.error.issues, 'payload')}`,
      );
    const input = parsed.data;
    const approval = this.core.approvalOf(input.callId);
    if (approval?.status === 'pending') return { ...input, duplicate: false };
    if (approval?.status === 'resolved' && approval.by === 'caller' && approval.decision === input.decision)
      return { ...input, duplicate: true };
    const pending = this.core.pendingApprovals().map((a) => a.callId);
    const waiting = pending.length
      ? `calls waiting: ${pending.join(', ')}`
      : 'no call is waiting for a decision';
    if (approval?.status === 'resolved')
      throw new SessionRefusal(
        FailureTypes.ApprovalRefused,
        `call "${input.callId}" was already resolved (${approval.decision} by ${approval.by}); ${waiting}`,
      );
    throw new SessionRefusal(
      FailureTypes.ApprovalRefused,
      `call "${input.callId}" is not waiting for approval in this session; ${waiting}`,
    );
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
    const undecodable = undecodableReason(raw);
    if (undecodable)
      throw new SessionRefusal(FailureTypes.InvalidPayload, `invalid budget payload: ${undecodable}`);
    const parsed = BudgetDecisionSchema.safeParse(raw);
    if (!parsed.success)
      throw new SessionRefusal(
        FailureTypes.InvalidPayload,
        `invalid budget payload: ${describeZodIssue(parsed.error.issues, 'payload')}`,
      );
    const pause = this.core.budgetPaused;
    if (!pause)
      throw new SessionRefusal(
        FailureTypes.BudgetRefused,
        'the session is not waiting at its budget (a decision is taken only after budget/exceeded)',
      );
    const input = parsed.data;
    if (input.decision === 'extend') {
      const used = this.core.budgetUsed();
      const limits = { ...this.core.budgetLimits, ...input.limits };
      const still = budgetBreaches(used, limits);
      if (still.length) {
        const k = still[0]!;
        const need = budgetFloor(k, used);
        throw new SessionRefusal(
          FailureTypes.InvalidPayload,
          `invalid budget payload: limits.${k}: ${limits[k]} does not let the step run (used ${used[k]}; give at least ${need})`,
        );
      }
    }
    return input;
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

  private laneSignal(lane: Lane, raw: unknown): void {
    const parsed = LaneSignalSchema.safeParse(raw);
    if (!parsed.success) return this.refuse(lane, describeZodIssue(parsed.error.issues, 'payload'));
    const problem = laneInputProblem(lane, parsed.data.message, this.deps.sessionId);
    if (problem) return this.refuse(lane, problem);
    if (this.disposeRequested || this.core.disposed) return this.refuse(lane, 'session disposed');
    const source = sourceWithRefs(parsed.data.message);
    const message = makeUserMessage({ ...parsed.data.message, source }, USER_SOURCE, this.deps.newId);
    if (this.core.accept(lane, message).accepted && parsed.data.message.id !== undefined)
      this.delivered.set(message.id, message);
  }

  private cancelSignal(raw: unknown): void {
    const parsed = CancelInputSchema.safeParse(raw === undefined ? {} : raw);
    if (!parsed.success) return this.refuse('cancel', describeZodIssue(parsed.error.issues, 'payload'));
    if (this.disposeRequested) return;
    this.cancelTurn(parsed.data.cause ?? { kind: 'user' }, parsed.data.keepInbox === true);
  }

  /** `dispose` takes exactly `{}` (or no argument); anything else is refused and disposes nothing. */
  private disposeSignal(raw: unknown): void {
    const parsed = DisposeInputSchema.safeParse(raw === undefined ? {} : raw);
    if (!parsed.success) return this.refuse('dispose', describeZodIssue(parsed.error.issues, 'payload'));
    if (this.disposeRequested) return;
    this.disposeRequested = true;
    this.cancelTurn({ kind: 'disposed' }, false);
  }

  private refuse(lane: string, reason: string): void {
    this.core.refuse(`${lane}: ${reason}`);
    this.deps.onRefused?.(lane, reason);
  }

  private refuseIfDisposing(): void {
    if (this.disposeRequested || this.core.disposed)
      throw new SessionRefusal(FailureTypes.SessionDisposed, 'session disposed');
  }

  /** Discards pending work (unless keepInbox) and cancels the running turn; the first cause wins (rule 27). */
  private cancelTurn(cause: CancelCause, keepInbox: boolean): void {
    if (this.core.cancel(cause, keepInbox)) this.deps.cancelTurn?.();
  }

  // ---- what the interpreter asks ----

  /** The session's state (the `state` query): the core's, and the token budget's when the session has one. */
  stateView(): SessionStateView {
    const view = this.core.stateView();
    const context = this.config.context;
    if (!context) return view;
    const t = this.core.transcript;
    return {
      ...view,
      context: {
        tokens: this.estimateRequest(),
        maxTokens: context.maxTokens,
        compactions: t.generation,
        messages: transcriptLength(t),
      },
    };
  }

  /** Whether `wait-for-work` is over: waking work for an idle session, or a dispose. */
  hasWork(): boolean {
    return this.disposeRequested || this.core.hasWakingWork();
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
    const t = this.core.transcript;
    // Entries no request has sent move to the next run, whose first request sends them as new entries; the ones
    // before stay in this run's history (its requests' inputs) and state (the modelContext query). A session with
    // a token budget also carries the newest entries a compaction would keep, which the next run must hold.
    let from = Math.max(t.base, this.sent.count);
    if (this.config.context) from = Math.min(from, this.keptTail());
    const carried = t.entries.slice(from - t.base);
    const generation = t.generation ? { generation: t.generation } : {};
    return {
      snapshot: this.core.snapshot,
      transcript: {
        base: from,
        hash: t.hash,
        entries: carried,
        seqs: t.seqs.slice(from - t.base),
        ...generation,
      },
      sent: this.sent,
      ...(this.config.context
        ? { context: { tokens: this.estimateRequest(), count: transcriptLength(t) } }
        : {}),
      previousRunId,
    };
  }

  // ---- the loop ----

  /** The session's life: turns while there is waking work, continue-as-new at quiet points, dispose at the end. */
  *run(): DriverGenerator {
    for (;;) {
      yield* ask({ type: 'wait-for-work' });
      if (this.disposeRequested) break;
      if (!this.core.hasWakingWork()) continue;
      yield* this.turn();
      if (this.shouldContinueAsNew()) yield* ask({ type: 'continue-as-new' });
    }
    // Dispose (rule 31): pending work is discarded, the session is idle here; the last event is session/disposed.
    this.core.cancel({ kind: 'disposed' }, false);
    this.core.dispose();
  }

  private shouldContinueAsNew(): boolean {
    if (!this.canContinueAsNew()) return false;
    const budget = this.config.continueAsNewAfterEvents ?? DEFAULT_CONTINUE_AS_NEW_AFTER_EVENTS;
    return this.deps.continueAsNewSuggested?.() === true || this.core.log.length >= budget;
  }

  /** One turn; every turn/start gets its turn/end (rule 24), whatever fails inside. */
  private *turn(): DriverGenerator {
    const turn = this.core.openTurn();
    try {
      yield* this.steps();
    } catch (err) {
      if (!this.core.turnOpen) throw err;
      if (this.abortedIfCanceling()) return;
      // A bug or an unexpected failure inside the loop still closes the turn; the session lives on (rule 26).
      this.deps.onInternalError?.(turn, err);
      this.core.endTurn({ kind: 'error', error: { message: messageOf(err), code: ErrorCodes.Internal } });
    }
    if (this.core.turnOpen) this.abortedIfCanceling();
  }

  private *steps(): DriverGenerator {
    const core = this.core;
    let boundary: 'turn' | 'step' = 'turn';
    let toolsOweRequest = false;
    for (;;) {
      const batch = core.claim(boundary);
      boundary = 'step';
      const hooks = yield* this.resolveHooks();
      if (this.abortedIfCanceling()) return;
      if (hooks.kind !== 'ok') return core.endTurn({ kind: 'error', error: hooks.error });
      const preStep = yield* ask({
        type: 'pre-step',
        request: {
          turn: core.turn,
          step: core.step + 1,
          batch,
          hooks: hooks.value.filter((h) => h.kind === 'pre-step').map((h) => h.name),
        },
      });
      if (this.abortedIfCanceling()) return;
      if (preStep.kind === 'failed') return core.endTurn({ kind: 'error', error: preStep.error });
      const next = afterPreStep(preStep.decision, toolsOweRequest);
      if (next.kind === 'end') return core.endTurn(next.reason);
      const tools = yield* this.resolveTools();
      if (this.abortedIfCanceling()) return;
      if (tools.kind !== 'ok') return core.endTurn({ kind: 'error', error: tools.error });
      const overBudget = yield* this.budgetGate();
      if (this.abortedIfCanceling()) return;
      if (overBudget) return core.endTurn(overBudget);
      core.startStep(next.messages);
      this.stepEntered = next.messages.length;
      this.holdDelivered(next.messages);
      const step = yield* this.step(tools.value, hooks.value);
      if (this.abortedIfCanceling()) return;
      if (step.kind === 'end') return core.endTurn(step.reason);
      core.endStep();
      const after = afterStep({ ...step.outcome, nextStepPending: core.inbox.nextStep.length > 0 });
      if (after.kind === 'end') return core.endTurn(after.reason);
      toolsOweRequest = step.outcome.toolsOweRequest;
    }
  }

  /**
   * Before a model step: when the ledger says the step would breach the budget, logs `budget/exceeded` and waits for
   * a person's decision (or, with `onExceeded: 'stop'`, does not wait). Returns the turn's end when the budget is not
   * extended; undefined when the step may run (or a cancel came: the caller closes the turn aborted).
   */
  private *budgetGate(): Generator<Effect, TurnEndReason | undefined, Answer> {
    const core = this.core;
    const limits = core.budgetLimits;
    if (!limits) return undefined;
    const used = core.budgetUsed();
    const over = budgetBreaches(used, limits);
    if (!over.length) return undefined;
    const waits = this.config.budget?.onExceeded !== 'stop';
    core.budgetExceeded(over, waits);
    if (waits) {
      yield* ask({ type: 'await-budget' });
      if (core.canceling) return undefined;
      if (core.lastBudgetDecision === 'extend') return undefined;
    }
    const what = over.map((k) => `${k} ${used[k]} of ${limits[k]}`).join(', ');
    return {
      kind: 'error',
      error: {
        code: ErrorCodes.BudgetExceeded,
        message: `budget exceeded before step ${core.step + 1}: ${what}`,
      },
    };
  }

  /** If the turn is being cancelled, closes it `aborted` with the first cause (step/end first) and says so. */
  private abortedIfCanceling(): boolean {
    const cause = this.core.canceling;
    if (!cause || !this.core.turnOpen) return false;
    this.core.endTurn({ kind: 'aborted', reason: cause });
    return true;
  }

  /** One step after its messages entered: the model request, then its tool calls. */
  private *step(
    allowed: ReadonlyMap<string, ToolDescriptor>,
    hooks: readonly HookDescriptor[],
  ): Generator<Effect, StepResult, Answer> {
    const core = this.core;
    const compaction = yield* this.compactIfOver();
    if (compaction) return compaction;
    const call = this.modelCall([...allowed.keys()]);
    const answer = yield* ask({ type: 'model', call });
    if (answer.kind === 'failed') {
      if (answer.canceled && core.canceling)
        return { kind: 'end', reason: { kind: 'aborted', reason: core.canceling } };
      return { kind: 'end', reason: { kind: 'error', error: answer.error } };
    }
    const result = answer.result;
    if (result.interrupted) {
      // Visible output of a cancelled call stays in the log, marked interrupted (rule 29).
      if (result.text)
        core.assistant(
          { id: this.deps.newId(), role: 'assistant', content: [{ type: 'text', text: result.text }] },
          { interrupted: true },
        );
      return {
        kind: 'end',
        reason: core.canceling ? { kind: 'aborted', reason: core.canceling } : { kind: 'completed' },
      };
    }
    const id = this.deps.newId();
    core.assistant(assistantMessage(id, result), {
      ...(result.usage ? { usage: result.usage, model: modelLabel(this.config.model) } : {}),
      ...(result.tools ? { tools: result.tools } : {}),
    });
    this.hold({ in: 'model', requestIndex: call.requestIndex, id });
    if (result.usage?.inputTokens !== undefined) {
      const t = core.transcript;
      const answerTokens = result.usage.outputTokens ?? estimateTokens(t.entries[t.entries.length - 1]!);
      this.meter = { tokens: result.usage.inputTokens + answerTokens, count: transcriptLength(t) };
    }
    const maxTokens = result.finish === 'max-tokens';
    if (result.toolCalls.length === 0)
      return { kind: 'done', outcome: { toolsOweRequest: false, concluded: false, maxTokens } };
    const batch = yield* runToolBatch(result.toolCalls, {
      core,
      allowed,
      maxParallel: this.config.maxParallelToolCalls ?? DEFAULT_MAX_PARALLEL_TOOL_CALLS,
      postToolHooks: hooks.filter((h) => h.kind === 'post-tool').map((h) => h.name),
      ...(this.config.approvals ? { approvals: this.config.approvals } : {}),
      newId: this.deps.newId,
      onHeldResult: (callId) => this.hold({ in: 'tool', callId }),
      planDelegate: (call) => this.planDelegate(call, allowed),
    });
    return { kind: 'done', outcome: { toolsOweRequest: true, concluded: batch.concluded, maxTokens } };
  }

  /**
   * Before a model request that would pass the session's token budget: summarise the oldest part of the projection
   * (./compaction.ts) and log `compaction/summary`; the request then carries the new projection from position 0.
   * Returns the turn's end when the compaction failed; undefined otherwise (also when nothing can be cut).
   */
  private *compactIfOver(): Generator<Effect, StepResult | undefined, Answer> {
    const context = this.config.context;
    if (!context || this.estimateRequest() <= compactionThreshold(context)) return undefined;
    const core = this.core;
    const t = core.transcript;
    const stepStart = transcriptLength(t) - this.stepEntered;
    const where = compactionCut(
      t.entries,
      t.seqs,
      t.base,
      context.keepRecent ?? DEFAULT_KEEP_RECENT,
      stepStart,
    );
    if (!where) return undefined;
    const { cut, pinned } = where;
    const prefix = this.sent;
    const own = this.config.model;
    const compactor =
      context.model?.provider === 'scripted'
        ? scriptedCompactor(context.model, t.generation)
        : (context.model ?? (own?.provider === 'scripted' ? { ...own, steps: [] } : own));
    const throughSeq = t.seqs[cut - t.base]! - 1;
    const pinnedSeq = pinned !== undefined ? { pinned: t.seqs[pinned - t.base]! } : {};
    const answer = yield* ask({
      type: 'compact',
      call: {
        turn: core.turn,
        step: core.step,
        ...(compactor ? { model: compactor } : {}),
        prefix,
        newEntries: t.entries.slice(Math.max(0, prefix.count - t.base)),
        hash: t.hash,
        ...(t.generation ? { generation: t.generation } : {}),
        cut,
        ...(pinned !== undefined ? { pinned } : {}),
        throughSeq,
      },
    });
    if (answer.kind === 'failed') {
      if (answer.canceled && core.canceling)
        return { kind: 'end', reason: { kind: 'aborted', reason: core.canceling } };
      return { kind: 'end', reason: { kind: 'error', error: answer.error } };
    }
    core.compacted({ throughSeq, ...pinnedSeq, ...answer.result });
    this.sent = { count: 0, hash: EMPTY_TRANSCRIPT_HASH };
    this.meter = { tokens: answer.result.tokensAfter, count: transcriptLength(t) };
    return undefined;
  }

  /** The estimated tokens of a request made now: the meter, plus an estimate of the entries after it. */
  private estimateRequest(): number {
    const t = this.core.transcript;
    let tokens = this.meter.tokens;
    for (let i = Math.max(this.meter.count, t.base); i < transcriptLength(t); i++)
      tokens += estimateTokens(t.entries[i - t.base]!);
    return tokens;
  }

  /** Where the entries a compaction would keep start (at most `keepRecent` back, moved to a clean cut). */
  private keptTail(): number {
    const t = this.core.transcript;
    const keep = Math.max(1, this.config.context?.keepRecent ?? DEFAULT_KEEP_RECENT);
    let from = Math.max(t.base, transcriptLength(t) - keep);
    while (from > t.base && t.entries[from - t.base]?.role === 'tool') from--;
    return from;
  }

  /** Plans a delegate call (./subsession.ts); a started sub-session counts against the turn's limit. */
  private planDelegate(
    call: { callId: string; name: string; arguments: Record<string, unknown> },
    allowed: ReadonlyMap<string, ToolDescriptor>,
  ): DelegatePlan {
    const turn = this.core.turn;
    if (this.subsessions.turn !== turn) this.subsessions = { turn, started: 0 };
    const plan = planDelegate({
      parentId: this.deps.sessionId ?? 'session',
      config: this.config,
      allowed,
      call,
      startedInTurn: this.subsessions.started,
    });
    if (plan.kind === 'start') this.subsessions.started += 1;
    return plan;
  }

  /**
   * The model request: only the transcript entries added since the previous request, with the count and hash of
   * what came before; the interpreter's model call assembles the rest (rule 14: exactly what the log holds).
   */
  private modelCall(tools: string[]): ModelStepCall {
    const core = this.core;
    const requestIndex = core.nextModelRequest();
    const t = core.transcript;
    const prefix = this.sent;
    const newEntries = t.entries.slice(Math.max(0, prefix.count - t.base));
    const refs = newEntries.map((entry): RefTarget | null => {
      const held = this.held.get(entry);
      if (!held) return null;
      this.held.delete(entry);
      return { ...held, hash: entryHash(entry) };
    });
    this.sent = { count: transcriptLength(t), hash: t.hash };
    return {
      turn: core.turn,
      step: core.step,
      requestIndex,
      ...modelForRequest(this.config.model, requestIndex),
      ...(this.config.system !== undefined ? { system: this.config.system } : {}),
      tools,
      prefix,
      newEntries,
      refs,
      hash: t.hash,
      ...(t.generation ? { generation: t.generation } : {}),
    };
  }

  /** Marks the entry just added (by the last event) as held in this run's history. */
  private hold(where: HeldIn): void {
    const entries = this.core.transcript.entries;
    const entry = entries[entries.length - 1];
    if (entry) this.held.set(entry, { ...where, seq: this.core.lastSeq });
  }

  /** Marks the `user/message` entries just added for `messages` held where they were delivered, if they were. */
  private holdDelivered(messages: readonly UserMessage[]): void {
    const entries = this.core.transcript.entries;
    const first = entries.length - messages.length;
    const firstSeq = this.core.lastSeq - messages.length + 1;
    messages.forEach((m, i) => {
      const entry = entries[first + i];
      if (!entry || this.delivered.get(m.id) !== m) return;
      this.delivered.delete(m.id);
      this.held.set(entry, { in: 'delivery', messageId: m.id, seq: firstSeq + i });
    });
  }

  /** The session's hooks: none named needs no worker; otherwise resolved once per run. */
  private *resolveHooks(): Generator<Effect, AnswerMap['resolve-hooks'], Answer> {
    if (!this.hooks && (this.config.hooks ?? []).length === 0) this.hooks = [];
    if (this.hooks) return { kind: 'ok', value: this.hooks };
    const answer = yield* ask({ type: 'resolve-hooks' });
    if (answer.kind === 'ok') this.hooks = answer.value;
    return answer;
  }

  /** The session's tools, resolved once per run (an unknown name ends the turn in error; a later turn asks again). */
  private *resolveTools(): Generator<Effect, Resolved<ReadonlyMap<string, ToolDescriptor>>, Answer> {
    if (!this.tools && (this.config.tools ?? []).length === 0) this.tools = new Map();
    if (this.tools) return { kind: 'ok', value: this.tools };
    const answer = yield* ask({ type: 'resolve-tools' });
    if (answer.kind !== 'ok') return answer;
    this.tools = new Map(answer.value.map((t) => [t.name, t]));
    return { kind: 'ok', value: this.tools };
  }
}

type ModelStepCall = Extract<Effect, { type: 'model' }>['call'];

/**
 * The session's model for one request. A scripted model's script can be long; the request carries only the step
 * it answers with (and that step's index), so history does not grow with the script's length.
 */
export function modelForRequest(
  model: ModelSpec | undefined,
  requestIndex: number,
): { model?: ModelSpec; stepsFrom?: number } {
  if (!model) return {};
  if (model.provider !== 'scripted') return { model };
  return {
    model: { ...model, steps: model.steps.slice(requestIndex, requestIndex + 1) },
    stepsFrom: requestIndex,
  };
}

/**
 * A scripted compactor for the session's `n`-th compaction: its step `n` (the last one when the script is shorter),
 * so a test can give each compaction its own summary and timing; no steps answer with a default summary.
 */
function scriptedCompactor(model: Extract<ModelSpec, { provider: 'scripted' }>, n: number): ModelSpec {
  const step = model.steps[Math.min(n, model.steps.length - 1)];
  return { ...model, steps: step ? [step] : [] };
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export type { ToolCallInfo, ErrorInfo, ModelStepResult };
