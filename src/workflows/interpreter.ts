/**
 * The workflow's interpreter of the session driver's effects (src/domain/effects.ts): it drives the generator, shows
 * what the loop waits for in the current details, and runs each effect of a turn inside the turn's one cancellation
 * scope (and trace span), which a cancel interrupts (rules 27–29). Each effect kind has its file: ./names.ts
 * (resolve-tools, resolve-hooks), ./preStepEffect.ts, ./model.ts, ./compact.ts, ./tools.ts (start-tool,
 * tool-settled), ./approvals.ts (check-approvals, await-approval), ./budgetPause.ts (await-budget); waiting for work
 * is a `condition` (its rule, shared with the in-memory interpreter: ../domain/driver/park.ts), continue-as-new the
 * workflow's (./session.ts). Deterministic (workflow sandbox).
 */
import { CancellationScope, condition, setCurrentDetails, type WorkflowInfo } from '@temporalio/workflow';
import { currentDetails, type Waiting } from '../domain/details';
import type { SessionDriver, DriverGenerator } from '../domain/driver';
import { mayResume } from '../domain/driver/park';
import type { Answer, Effect } from '../domain/effects';
import type { PreStepListener } from '../domain/waterfall';
import { modelLabel } from '../domain/wire';
import { approvalTimer, checkApprovals } from './approvals';
import { budgetPause } from './budgetPause';
import { compaction } from './compact';
import { modelStep } from './model';
import type { SessionNames } from './names';
import { preStep } from './preStepEffect';
import type { TurnTracing } from './telemetry';
import { ToolCalls } from './tools';

export class EffectInterpreter {
  /** Scope of the running turn; cancelling it interrupts whatever the turn awaits (rules 27–29). */
  private scope: { turn: number; scope: CancellationScope } | undefined;
  private canceledTurn = 0;
  /** The running turn's tool calls. */
  private readonly tools: ToolCalls;
  /** What the loop waits for, for the current details. */
  private waiting: Waiting = { kind: 'work' };

  constructor(
    private readonly driver: SessionDriver,
    private readonly info: WorkflowInfo,
    private readonly names: SessionNames,
    private readonly preStepListeners: readonly PreStepListener[],
    private readonly tracing: TurnTracing,
  ) {
    this.tools = new ToolCalls(info);
  }

  /** Drives the generator to its end; `continueAsNew` performs the driver's continue-as-new effect. */
  async run(gen: DriverGenerator, continueAsNew: () => Promise<void>): Promise<void> {
    let answer: Answer | undefined;
    for (let next = gen.next(); !next.done;) {
      const effect = next.value;
      this.wait(waitingFor(effect, this.tools));
      let failure: { err: unknown } | undefined;
      try {
        if (effect.type === 'wait-for-work') await condition(() => mayResume(effect.type, this.driver));
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
    this.tools.approvalResolved();
  }

  /** Runs one effect of the open turn inside the turn's cancellation scope (and its trace span). */
  private inTurn<T>(fn: () => Promise<T>): Promise<T> {
    const turn = this.driver.core.turn;
    if (this.scope?.turn !== turn) {
      this.scope = { turn, scope: new CancellationScope() };
      this.tools.clear();
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
    const sessionId = this.info.workflowId;
    switch (effect.type) {
      case 'resolve-hooks':
        return this.names.hooks();
      case 'resolve-tools':
        return this.names.tools();
      case 'pre-step':
        return preStep(sessionId, this.driver.config, this.preStepListeners, effect.request);
      case 'model':
        return modelStep(this.info, effect.call);
      case 'compact':
        return compaction(this.info, effect.call);
      case 'start-tool':
        this.tools.start(effect.start);
        return undefined;
      case 'tool-settled':
        return this.tools.nextSettled();
      case 'check-approvals':
        return checkApprovals(sessionId, effect.check);
      case 'await-approval':
        approvalTimer(this.driver, effect.approval.callId, effect.approval.timeoutMs);
        return undefined;
      case 'await-budget':
        return budgetPause(this.driver);
    }
  }
}

/** What an effect makes the loop wait for (undefined: nothing new to show, e.g. starting a tool). */
function waitingFor(effect: Effect, tools: ToolCalls): Waiting | undefined {
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
      return { kind: 'tools', names: tools.runningNames() };
    case 'check-approvals':
      return { kind: 'approval-check' };
    case 'await-approval':
      return undefined;
    case 'await-budget':
      return { kind: 'budget' };
  }
}
