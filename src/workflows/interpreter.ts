/**
 * The workflow's interpreter of the session driver's effects (src/domain/effects.ts): model and tool calls become
 * activities, waits become `condition`s, and each turn runs in one cancellation scope that a cancel interrupts
 * (rules 27–29). Tool activities are asked to cancel and awaited until they settle (WAIT_CANCELLATION_COMPLETED);
 * a settled call's post-tool hooks run outside the turn's scope, so a cancelled turn still commits real results.
 * Deterministic (workflow sandbox).
 */
import {
  CancellationScope,
  ChildWorkflowCancellationType,
  condition,
  ParentClosePolicy,
  startChild,
  isCancellation,
  proxySinks,
  setCurrentDetails,
  type WorkflowInfo,
} from '@temporalio/workflow';
import { cancelSignal, ErrorCodes, FailureTypes, followupSignal, type TranscriptRefSinks } from '../contract';
import { currentDetails, type Waiting } from '../domain/details';
import type { SessionDriver, DriverGenerator } from '../domain/driver';
import type {
  Answer,
  ApprovalCheck,
  AnswerMap,
  CompactionCall,
  Effect,
  Failed,
  HookDescriptor,
  ModelCall,
  PreStepRequest,
  Resolved,
  ToolDescriptor,
  ToolExecResult,
  ToolStart,
} from '../domain/effects';
import { referencedEntries, wireEntries } from '../domain/entryRefs';
import type { TurnEndReason } from '../domain/events';
import type { BudgetUsed } from '../domain/budget';
import {
  delegateFailure,
  delegateOutcome,
  type DelegateSettled,
  type DelegateStart,
  type SubsessionOutcome,
} from '../domain/subsession';
import { failedResult } from '../domain/toolBatch';
import type { SessionConfig } from '../domain/wire';
import { applyPostToolHooks, runPreStep, type PreStepListener } from '../domain/waterfall';
import { modelLabel } from '../domain/wire';
import { modelActivities, setupActivities, toolActivities } from './activities';
import { oversized } from './payloadGuard';
import { errorInfo, failureType } from './errors';
import { postToolHookCall, preStepHookListener } from './hooks';
import { stageSessionRefs } from './sessionRefs';
import type { TurnTracing } from './telemetry';

const { transcriptRefs } = proxySinks<TranscriptRefSinks>();

export interface AgentSessionOptions {
  /** Pre-step listeners, outermost first. */
  preStep?: PreStepListener[];
}

/** A failed name check, with the failure type the `deliver` update rejects with. */
type Resolution<T> = Resolved<T> & ({ kind: 'ok' } | { failureType: string });

export class EffectInterpreter {
  /** Scope of the running turn; cancelling it interrupts whatever the turn awaits (rules 27–29). */
  private scope: { turn: number; scope: CancellationScope } | undefined;
  private canceledTurn = 0;
  /** Started tool calls of the running batch that have not been reported as settled. */
  private readonly unsettled = new Map<
    number,
    Promise<Extract<AnswerMap['tool-settled'], { kind: 'settled' }>>
  >();
  /** Names of the unsettled calls, by index (the current details list them). */
  private readonly running = new Map<number, string>();
  /** What the loop waits for, for the current details. */
  private waiting: Waiting = { kind: 'work' };
  /** Set when an approval was resolved (or a cancel came) and the tool batch has not been told yet. */
  private approvalWoken = false;
  /** Wakes a tool batch that waits (set while it waits). */
  private wakeBatch: (() => void) | undefined;
  private readonly tools = new Resolver<ToolDescriptor[]>(
    (names) =>
      setupActivities.describeTools.executeWithOptions({ summary: `describe tools ${names.join(', ')}` }, [
        { names },
      ]),
    [],
    FailureTypes.UnknownTool,
    ErrorCodes.UnknownTool,
  );
  private readonly hooks = new Resolver<HookDescriptor[]>(
    (names) =>
      setupActivities.describeHooks.executeWithOptions({ summary: `describe hooks ${names.join(', ')}` }, [
        { names },
      ]),
    [],
    FailureTypes.UnknownHook,
    ErrorCodes.UnknownHook,
  );

  constructor(
    private readonly driver: SessionDriver,
    private readonly info: WorkflowInfo,
    private readonly options: AgentSessionOptions,
    private readonly tracing: TurnTracing,
  ) {}

  /** Drives the generator to its end; `continueAsNew` performs the driver's continue-as-new effect. */
  async run(gen: DriverGenerator, continueAsNew: () => Promise<void>): Promise<void> {
    let answer: Answer | undefined;
    for (let next = gen.next(); !next.done;) {
      const effect = next.value;
      this.wait(waitingFor(effect, this.running));
      let failure: { err: unknown } | undefined;
      try {
        if (effect.type === 'wait-for-work') await condition(() => this.driver.hasWork());
        else if (effect.type === 'continue-as-new') await continueAsNew();
        else answer = await this.inTurn(() => this.perform(effect));
      } catch (err) {
        failure = { err };
      }
      next = failure ? gen.throw(failure.err) : gen.next(answer as Answer);
      answer = undefined;
    }
  }

  /** Refreshes the workflow's current details (called on every event and at every effect). */
  refreshDetails(): void {
    setCurrentDetails(currentDetails(this.driver.core, this.waiting));
  }

  private wait(waiting: Waiting | undefined): void {
    if (!waiting) return;
    this.waiting = waiting;
    this.refreshDetails();
  }

  /** Interrupts the running turn (called by the driver when a cancel reaches it). */
  cancelTurn(): void {
    const turn = this.driver.core.turn;
    this.canceledTurn = turn;
    if (this.scope?.turn === turn) this.scope.scope.cancel();
    this.approvalResolved();
  }

  /** Wakes the tool batch: an approval was resolved (or a cancel resolves them all). */
  approvalResolved(): void {
    this.approvalWoken = true;
    this.wakeBatch?.();
  }

  /** Whether the session's tool or hook names are still to be checked on the worker in this run. */
  configUnchecked(): boolean {
    const config = this.driver.config;
    return this.tools.unchecked(config.tools ?? []) || this.hooks.unchecked(config.hooks ?? []);
  }

  /** Resolves the session's tools and hooks (the `deliver` update's name check shares these calls). */
  resolveAll(): Promise<Resolution<unknown>[]> {
    const config = this.driver.config;
    return Promise.all([this.tools.get(config.tools ?? []), this.hooks.get(config.hooks ?? [])]);
  }

  /** Runs one effect of the open turn inside the turn's cancellation scope (and its trace span). */
  private inTurn<T>(fn: () => Promise<T>): Promise<T> {
    const turn = this.driver.core.turn;
    if (this.scope?.turn !== turn) {
      this.scope = { turn, scope: new CancellationScope() };
      this.unsettled.clear();
      this.running.clear();
      if (this.canceledTurn === turn) this.scope.scope.cancel();
    }
    const scope = this.scope.scope;
    return this.tracing.inTurn(
      turn,
      () => this.driver.core.turnOpener,
      () => scope.run(fn),
    );
  }

  private async perform(
    effect: Exclude<Effect, { type: 'wait-for-work' | 'continue-as-new' }>,
  ): Promise<Answer> {
    switch (effect.type) {
      case 'resolve-hooks':
        return this.hooks.get(this.driver.config.hooks ?? []);
      case 'resolve-tools':
        return this.tools.get(this.driver.config.tools ?? []);
      case 'pre-step':
        return this.preStep(effect.request);
      case 'model':
        return this.model(effect.call);
      case 'compact':
        return this.compact(effect.call);
      case 'start-tool':
        this.startTool(effect.start);
        return undefined;
      case 'tool-settled':
        return this.nextSettled();
      case 'check-approvals':
        return this.checkApprovals(effect.check);
      case 'await-approval':
        this.approvalTimer(effect.approval.callId, effect.approval.timeoutMs);
        return undefined;
      case 'await-budget':
        return this.budgetPause();
    }
  }

  private async checkApprovals(check: ApprovalCheck): Promise<Answer> {
    try {
      const value = await setupActivities.checkApprovals.executeWithOptions(
        { summary: `check approvals ${check.calls.map((c) => `${c.name} #${c.callId}`).join(', ')}` },
        [{ sessionId: this.info.workflowId, ...check }],
      );
      return { kind: 'ok', value };
    } catch (err) {
      return failed(err, ErrorCodes.ToolFailed);
    }
  }

  /**
   * The session's approval timeout for one call: a durable timer (no activity, no polling) that resolves the call
   * `by:'timeout'` unless a decision or a cancel comes first; the condition cancels its timer when it does.
   */
  private approvalTimer(callId: string, timeoutMs: number | undefined): void {
    if (timeoutMs === undefined) return;
    const core = this.driver.core;
    condition(() => core.approvalOf(callId)?.status !== 'pending', timeoutMs, {
      summary: `approval of #${callId}`,
    }).then(
      (decided) => {
        if (!decided) this.driver.approvalTimedOut(callId);
      },
      // The turn was cancelled: the cancel resolves the approval.
      () => undefined,
    );
  }

  /**
   * Waits durably (no activity, no timer, no polling) until a `budget` decision ends the pause; a cancel of the turn
   * ends the wait through the turn's cancellation scope, and the driver closes the turn aborted.
   */
  private async budgetPause(): Promise<Answer> {
    const core = this.driver.core;
    try {
      await condition(() => core.budgetPaused === undefined || core.canceling !== undefined);
    } catch (err) {
      if (!isCancellation(err)) throw err;
    }
    return undefined;
  }

  private async preStep(request: PreStepRequest): Promise<Answer> {
    const listeners = [...(this.options.preStep ?? []), ...request.hooks.map(preStepHookListener)];
    try {
      // Built-in first stage: cross-session references' snapshots enter before their messages (./sessionRefs.ts).
      const staged = await stageSessionRefs(
        this.info.workflowId,
        this.driver.config.labels ?? [],
        request.batch,
      );
      if (staged.kind === 'reject') return { kind: 'decided', decision: staged };
      const decision = await runPreStep(listeners, {
        sessionId: this.info.workflowId,
        turn: request.turn,
        step: request.step,
        batch: staged.batch,
        config: this.driver.config,
      });
      return { kind: 'decided', decision };
    } catch (err) {
      return failed(err, ErrorCodes.PreStepFailed);
    }
  }

  /**
   * The model request: entries the run's history holds go by reference (src/domain/entryRefs.ts), and the worker's
   * store gets them through the sink. If the activity cannot resolve a reference (another worker whose store lacks it
   * and whose history read failed), it fails with TranscriptRefMiss and the request is sent once more, all inline.
   */
  private async model(call: ModelCall): Promise<Answer> {
    const { refs: _refs, newEntries: inline, ...rest } = call;
    const input = {
      ...rest,
      newEntries: wireEntries(call),
      sessionId: this.info.workflowId,
      chainId: this.info.firstExecutionRunId,
      runId: this.info.runId,
    };
    const referenced = referencedEntries(call);
    if (referenced.length) transcriptRefs.remember(referenced);
    const options = { summary: `model ${call.turn}.${call.step} ${modelLabel(call.model)}` };
    try {
      try {
        return { kind: 'ok', result: await modelActivities.modelStep.executeWithOptions(options, [input]) };
      } catch (err) {
        if (!referenced.length || failureType(err) !== FailureTypes.TranscriptRefMiss) throw err;
        const result = await modelActivities.modelStep.executeWithOptions(options, [
          { ...input, newEntries: inline },
        ]);
        return { kind: 'ok', result };
      }
    } catch (err) {
      return failed(err, ErrorCodes.ModelFailed);
    }
  }

  /** A compaction (src/domain/compaction.ts): the compactor's activity, with the model activity's options. */
  private async compact(call: CompactionCall): Promise<Answer> {
    const input = {
      ...call,
      sessionId: this.info.workflowId,
      chainId: this.info.firstExecutionRunId,
      runId: this.info.runId,
    };
    const options = { summary: `compact ${call.turn}.${call.step} ${modelLabel(call.model)}` };
    try {
      return {
        kind: 'ok',
        result: await modelActivities.compactTranscript.executeWithOptions(options, [input]),
      };
    } catch (err) {
      return failed(err, ErrorCodes.CompactionFailed);
    }
  }

  /**
   * Starts a tool activity; when it settles (even after a cancel) its post-tool hooks run, not cancellable. The
   * settled answer says whether the content that commits is the activity's own result (then history holds it).
   */
  private startTool(start: ToolStart): void {
    const { call, index } = start;
    /** The activity's own result, once it completed. */
    let own: ToolExecResult | undefined;
    /** A delegate call: how its sub-session ended. */
    let subsession: { reason: TurnEndReason; used?: BudgetUsed } | undefined;
    const performed: Promise<ToolExecResult> = start.delegate
      ? this.delegate(start.delegate).then(({ result, reason, used }) => {
          subsession = { reason, ...(used ? { used } : {}) };
          return result;
        })
      : toolActivities.executeTool
          .executeWithOptions({ summary: `tool ${call.name} #${call.callId}` }, [
            {
              sessionId: this.info.workflowId,
              turn: start.turn,
              step: start.step,
              callId: call.callId,
              name: call.name,
              arguments: call.arguments,
            },
          ])
          .then(
            (r) => (own = r),
            (err: unknown): ToolExecResult =>
              failedResult(
                isCancellation(err)
                  ? { code: ErrorCodes.Aborted, message: 'the tool call was cancelled while it ran' }
                  : errorInfo(err, ErrorCodes.ToolFailed),
              ),
          );
    const settled = performed
      .then((result) =>
        start.postToolHooks.length === 0
          ? result
          : CancellationScope.nonCancellable(() =>
              applyPostToolHooks(start.postToolHooks, result, (hook, r) =>
                postToolHookCall(hook, { sessionId: this.info.workflowId, ...start }, r),
              ),
            ),
      )
      .then((result) => ({
        kind: 'settled' as const,
        index,
        result,
        held: own !== undefined && result.content === own.content,
        ...(subsession ? { subsession } : {}),
      }));
    this.unsettled.set(index, settled);
    this.running.set(index, call.name);
  }

  /**
   * A delegate call (docs/protocol.md "Sub-sessions"): starts the child session (a child workflow of this type, on
   * this task queue, terminated if this session closes first), sends it the task as a followup, and waits for the
   * child to finish: a sub-session ends itself after its task's turn and returns that turn's outcome. A cancel of the
   * turn sends the child `cancel` (its turn aborts or its task is discarded) and the call settles ABORTED once the
   * child has ended. Never throws.
   */
  private delegate(d: DelegateStart): Promise<DelegateSettled> {
    const turnScope = CancellationScope.current();
    return CancellationScope.nonCancellable(async () => {
      try {
        const tooLarge = oversized('sub-session start', [d.config]);
        if (tooLarge) throw tooLarge;
        const handle = await startChild<(config: SessionConfig) => Promise<SubsessionOutcome | undefined>>(
          this.info.workflowType,
          {
            workflowId: d.session,
            args: [d.config],
            taskQueue: this.info.taskQueue,
            parentClosePolicy: ParentClosePolicy.TERMINATE,
            cancellationType: ChildWorkflowCancellationType.ABANDON,
            staticSummary: `sub-session of ${this.info.workflowId} (call ${d.config.subsession?.callId ?? ''})`,
          },
        );
        await handle.signal(followupSignal, { message: d.message });
        let canceled = false;
        let ended = false;
        turnScope.cancelRequested.catch(() => {
          // A cancel of the turn after the child ended (a later step) sends nothing.
          if (ended) return;
          canceled = true;
          handle.signal(cancelSignal, {}).catch(() => undefined);
        });
        const outcome = await handle.result().finally(() => (ended = true));
        return delegateOutcome(outcome ?? undefined, canceled);
      } catch (err) {
        return delegateFailure(errorInfo(err, ErrorCodes.SubsessionFailed));
      }
    });
  }

  /** The next settled call, or `approval` when an approval was resolved (or a cancel came) meanwhile. */
  private async nextSettled(): Promise<Answer> {
    if (!this.approvalWoken) {
      const woken = new Promise<'woken'>((resolve) => (this.wakeBatch = () => resolve('woken')));
      const next = await Promise.race([...this.unsettled.values(), woken]);
      this.wakeBatch = undefined;
      if (next !== 'woken') {
        this.unsettled.delete(next.index);
        this.running.delete(next.index);
        return next;
      }
    }
    this.approvalWoken = false;
    return { kind: 'approval' };
  }
}

/**
 * One name check per run, shared by the turn loop and the `deliver` update: at most one activity in flight; a
 * failure is returned (and asked again at a later boundary), a success remembered.
 */
class Resolver<T> {
  private pending: Promise<Resolution<T>> | undefined;
  private value: T | undefined;

  constructor(
    private readonly describe: (names: string[]) => Promise<T>,
    private readonly none: T,
    private readonly failureType: string,
    private readonly fallbackCode: string,
  ) {}

  /** Whether the names are still to be checked (some are named and no check has succeeded yet). */
  unchecked(names: readonly string[]): boolean {
    return this.value === undefined && names.length > 0;
  }

  get(names: string[]): Promise<Resolution<T>> {
    if (this.value !== undefined) return Promise.resolve({ kind: 'ok', value: this.value });
    if (names.length === 0) return Promise.resolve({ kind: 'ok', value: (this.value = this.none) });
    this.pending ??= this.describe(names).then(
      (value): Resolution<T> => {
        this.value = value;
        return { kind: 'ok', value };
      },
      (err: unknown): Resolution<T> => {
        this.pending = undefined;
        return { ...failed(err, this.fallbackCode), failureType: this.failureType };
      },
    );
    return this.pending;
  }
}

/** What an effect makes the loop wait for (undefined: nothing new to show, e.g. starting a tool). */
function waitingFor(effect: Effect, running: ReadonlyMap<number, string>): Waiting | undefined {
  switch (effect.type) {
    case 'wait-for-work':
      return { kind: 'work' };
    case 'continue-as-new':
      return { kind: 'continue-as-new' };
    case 'resolve-hooks':
    case 'resolve-tools':
      return { kind: 'names' };
    case 'pre-step':
      return { kind: 'pre-step' };
    case 'model':
    case 'compact':
      return { kind: 'model', model: modelLabel(effect.call.model) };
    case 'start-tool':
      return undefined;
    case 'tool-settled':
      return { kind: 'tools', names: [...running.values()] };
    case 'check-approvals':
      return { kind: 'approval-check' };
    case 'await-approval':
      return undefined;
    case 'await-budget':
      return { kind: 'budget' };
  }
}

function failed(err: unknown, fallbackCode: string): Failed {
  return {
    kind: 'failed',
    error: errorInfo(err, fallbackCode),
    ...(isCancellation(err) ? { canceled: true } : {}),
  };
}
