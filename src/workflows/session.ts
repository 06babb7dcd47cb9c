/**
 * The agentSession workflow's definition: `defineAgentSession(options)` builds the workflow function (the bundle's
 * `agentSession` is the one with no options), which checks the start config and runs a SessionWorkflow. That class
 * wires the session driver (src/domain/driver.ts, the one turn loop) to the workflow: its events to log context,
 * visibility, metrics and traces; its handlers (./handlers.ts); its effects to the interpreter (./interpreter.ts);
 * and continue-as-new at the quiet points the driver chooses. Deterministic: runs in the workflow sandbox; time and
 * ids come from the workflow API.
 */
import {
  allHandlersFinished,
  ApplicationFailure,
  condition,
  log,
  makeContinueAsNewFunc,
  patched,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import { FailureTypes } from '../contract';
import { SessionDriver, type CarriedSession } from '../domain/driver';
import type { SubsessionOutcome } from '../domain/subsession';
import { describeZodIssue } from '../domain/util';
import type { PreStepListener } from '../domain/waterfall';
import { SessionConfigSchema, type SessionConfig } from '../domain/wire';
import { isWireSignal, registerHandlers, withoutSnapshot } from './handlers';
import { EffectInterpreter } from './interpreter';
import { setLogContext, trackLogContext } from './logging';
import { endWhenRefused, WatchedNames } from './refusal';
import { sessionMetrics, TurnTracing } from './telemetry';
import { Visibility } from './visibility';
import { TurnWaiters } from './waiters';

export type { CarriedSession };

/** Marks runs that continue as new onto a new version of the workflow code at a quiet point (docs/upgrades.md). */
const MOVES_TO_NEW_VERSION = 'moves-to-new-version';
export { DEFAULT_CONTINUE_AS_NEW_AFTER_EVENTS } from '../domain/driver';

/** Workflow-side extensions of a session, given to {@link defineAgentSession}. */
export interface AgentSessionOptions {
  /** Pre-step listeners, outermost first. */
  preStep?: PreStepListener[];
}

/** Builds an agentSession workflow function with the given workflow-side extensions. */
export function defineAgentSession(options: AgentSessionOptions = {}) {
  return async function agentSession(
    rawConfig: SessionConfig = {},
    carried?: CarriedSession,
  ): Promise<SubsessionOutcome | undefined> {
    const parsed = SessionConfigSchema.safeParse(rawConfig ?? {});
    if (!parsed.success) {
      throw ApplicationFailure.create({
        type: FailureTypes.InvalidPayload,
        nonRetryable: true,
        message: `invalid session config: ${describeZodIssue(parsed.error.issues, 'config')}`,
      });
    }
    return new SessionWorkflow(parsed.data, options, carried).run();
  };
}

class SessionWorkflow {
  private readonly info = workflowInfo();
  private readonly driver: SessionDriver;
  private readonly interpreter: EffectInterpreter;
  private readonly waiters: TurnWaiters;
  private readonly tracing = new TurnTracing(this.info.workflowId);
  private readonly names: WatchedNames;
  /** Whether this is the session's first run (no run continued as new into it). */
  private readonly firstRun: boolean;

  constructor(
    private readonly config: SessionConfig,
    options: AgentSessionOptions,
    carried?: CarriedSession,
  ) {
    const visibility = new Visibility(() => this.driver.core);
    this.driver = new SessionDriver(
      config,
      {
        sessionId: this.info.workflowId,
        now: () => Date.now(),
        newId: uuid4,
        cancelTurn: () => this.interpreter.cancelTurn(),
        continueAsNewSuggested: () => workflowInfo().continueAsNewSuggested,
        // A sub-session lives for one turn on its version; a session moves at a quiet point (docs/upgrades.md).
        newVersionWaits: () =>
          !config.subsession &&
          workflowInfo().targetWorkerDeploymentVersionChanged &&
          patched(MOVES_TO_NEW_VERSION),
        onRefused: (lane, reason) => {
          log.warn('refused a signal payload', { lane, reason });
          // The metric's tag is one of the wire's names: a bad signal's name is the sender's to choose.
          sessionMetrics.refused(isWireSignal(lane) ? lane : 'other');
        },
        onInternalError: (turn, err) => log.error('turn failed', { turn, error: String(err) }),
        onApprovalResolved: () => this.interpreter.approvalResolved(),
        onEvent: (event) => {
          trackLogContext(event);
          visibility.onEvent(event);
          sessionMetrics.onEvent(event, () => {
            const inbox = this.driver.core.inbox;
            return { nextTurn: inbox.nextTurn.length, nextStep: inbox.nextStep.length };
          });
          if (event.type === 'turn/end') this.tracing.end(event.data.reason.kind);
          // Undefined only while the driver is being built (the interpreter needs it).
          this.interpreter?.refreshDetails();
        },
      },
      carried,
    );
    // A run that continued as new starts mid-session: its log lines carry the turn it is in.
    if (this.driver.core.turn > 0)
      setLogContext({ turn: this.driver.core.turn, step: this.driver.core.step || undefined });
    const names = (this.names = new WatchedNames(this.driver.config));
    this.firstRun = carried === undefined;
    this.interpreter = new EffectInterpreter(
      this.driver,
      this.info,
      names,
      options.preStep ?? [],
      this.tracing,
    );
    this.waiters = new TurnWaiters(this.driver);
    registerHandlers({
      driver: this.driver,
      config,
      names,
      waiters: this.waiters,
      tracing: this.tracing,
      firstSeq: this.driver.core.lastSeq + 1,
      previousRunId: carried?.previousRunId,
    });
  }

  /**
   * Runs the driver to its end (dispose), continuing as new at the quiet points it chooses (rule 33). A sub-session
   * (docs/protocol.md "Sub-sessions") disposes itself once its task's turn has ended (or a cancel discarded the
   * task) and returns that outcome to its parent; a root session returns undefined. A root session whose names a
   * worker refuses in its first run disposes itself (./refusal.ts).
   */
  async run(): Promise<SubsessionOutcome | undefined> {
    const task = this.config.subsession?.messageId;
    if (task !== undefined)
      void condition(() => this.driver.waitOutcome(task) !== undefined).then(() =>
        this.driver.signal('dispose', {}),
      );
    else if (this.firstRun) endWhenRefused(this.driver, this.names);
    await this.interpreter.run(this.driver.run(), () => this.continueAsNew());
    await condition(allHandlersFinished);
    const outcome = task === undefined ? undefined : this.driver.waitOutcome(task);
    return outcome && { ...outcome, used: this.driver.core.budgetUsed() };
  }

  /** Continues as new once every handler has finished, if the driver still says this is a quiet point. */
  private async continueAsNew(): Promise<void> {
    // A sub-session lives for one turn; its outcome is this run's result.
    if (this.config.subsession) return;
    // A waiting delivery is a handler that lasts until its message's turn ends. Those whose turn has ended finish
    // now; one still waiting for a later turn keeps this run (the next quiet point tries again).
    await condition(() => allHandlersFinished() || this.waiters.waitingForLaterTurn());
    if (this.waiters.waitingForLaterTurn() || !this.driver.canContinueAsNew()) return;
    sessionMetrics.continuedAsNew();
    // The next run starts on the deployment's target version (docs/upgrades.md): the current one, or the ramping one
    // for this session's share; the same version when none changed. A plain continue-as-new would keep the old one.
    const next = makeContinueAsNewFunc<(config: SessionConfig, carried?: CarriedSession) => Promise<void>>({
      initialVersioningBehavior: 'AUTO_UPGRADE',
    });
    // A fork's snapshot stays in its first run's history; the next run carries the transcript, not the snapshot.
    await next(withoutSnapshot(this.config), this.driver.carry(this.info.runId));
  }
}
