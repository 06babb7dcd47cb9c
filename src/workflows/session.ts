/**
 * The agentSession workflow: the wire handlers and the interpreter of the session driver (src/domain/driver.ts),
 * which holds the one turn loop. Handlers delegate to the driver in a line or two; the driver's effects become
 * activities, conditions and cancellation scopes in ./interpreter.ts. Deterministic: runs in the workflow sandbox;
 * time and ids come from the workflow API.
 */
import {
  allHandlersFinished,
  ApplicationFailure,
  condition,
  continueAsNew,
  log,
  patched,
  setDefaultSignalHandler,
  setHandler,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import {
  approveUpdate,
  budgetUpdate,
  cancelSignal,
  deliverUpdate,
  disposeSignal,
  eventsQuery,
  FailureTypes,
  followupSignal,
  injectSignal,
  modelContextQuery,
  stateQuery,
  configQuery,
  steerSignal,
  transcriptQuery,
} from '../contract';
import { SessionDriver, SessionRefusal, type CarriedSession } from '../domain/driver';
import { eventsPage, modelContextPage } from '../domain/pages';
import { describeZodIssue } from '../domain/util';
import {
  DEFAULT_WAIT_MS,
  SessionConfigSchema,
  type DeliverInput,
  type DeliveryReceipt,
  type SessionConfig,
} from '../domain/wire';
import type { SubsessionOutcome } from '../domain/subsession';
import { EffectInterpreter, type AgentSessionOptions } from './interpreter';
import { setLogContext, trackLogContext } from './logging';
import { sessionMetrics, TurnTracing } from './telemetry';
import { Visibility } from './visibility';

export type { AgentSessionOptions, CarriedSession };
export { DEFAULT_CONTINUE_AS_NEW_AFTER_EVENTS } from '../domain/driver';

/** Marks runs whose `deliver` update checks the session's tool and hook names before accepting (rule 5). */
const DELIVER_CHECKS_CONFIG = 'deliver-checks-config';

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
  /** Where this run's log starts, and the run that holds what came before. */
  private readonly firstSeq: number;
  private readonly previousRunId: string | undefined;
  /** Message ids of deliveries waiting for their message's turn to end (an id may be waited on twice). */
  private readonly waiting: string[] = [];
  private readonly tracing = new TurnTracing(this.info.workflowId);

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
        onRefused: (lane, reason) => {
          log.warn('refused a signal payload', { lane, reason });
          // The metric's tag is one of the wire's names: a bad signal's name is the sender's to choose.
          sessionMetrics.refused(WIRE_SIGNALS.has(lane) ? lane : 'other');
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
    this.interpreter = new EffectInterpreter(this.driver, this.info, options, this.tracing);
    this.firstSeq = this.driver.core.lastSeq + 1;
    this.previousRunId = carried?.previousRunId;
    this.registerHandlers();
  }

  /**
   * Runs the driver to its end (dispose), continuing as new at the quiet points it chooses (rule 33). A sub-session
   * (docs/protocol.md "Sub-sessions") disposes itself once its task's turn has ended (or a cancel discarded the
   * task) and returns that outcome to its parent; a root session returns undefined.
   */
  async run(): Promise<SubsessionOutcome | undefined> {
    const task = this.config.subsession?.messageId;
    if (task !== undefined)
      void condition(() => this.driver.waitOutcome(task) !== undefined).then(() =>
        this.driver.signal('dispose', {}),
      );
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
    await condition(() => allHandlersFinished() || this.waitingForLaterTurn());
    if (this.waitingForLaterTurn() || !this.driver.canContinueAsNew()) return;
    sessionMetrics.continuedAsNew();
    // A fork's snapshot stays in its first run's history; the next run carries the transcript, not the snapshot.
    const { fork, ...config } = this.config;
    await continueAsNew<(config: SessionConfig, carried?: CarriedSession) => Promise<void>>(
      fork ? { ...config, fork: { from: fork.from, throughSeq: fork.throughSeq } } : config,
      this.driver.carry(this.info.runId),
    );
  }

  private registerHandlers(): void {
    const driver = this.driver;
    // One handler for every signal, registered first: Temporal hands signals that arrived before the first workflow
    // task to specific handlers one name at a time, which would put a followup before an inject sent earlier.
    // The default handler receives them all in arrival order (rule 9).
    const signal = (name: string, payload: unknown) => {
      this.tracing.noteDelivery((payload as { message?: { id?: unknown } } | undefined)?.message?.id);
      driver.signal(name, payload);
    };
    setDefaultSignalHandler((name: string, ...args: unknown[]) => signal(name, args[0]));
    // Then the wire's signals by name, with their descriptions (the Temporal UI lists them). Registered after the
    // default handler has taken every signal that arrived before: nothing is buffered, so order is kept.
    for (const [def, description] of SIGNAL_DESCRIPTIONS)
      setHandler(def, (payload: unknown) => signal(def.name, payload), { description });
    setHandler(deliverUpdate, (raw) => this.deliver(raw), {
      validator: (raw: unknown) => asFailure(() => driver.validateDeliver(raw)),
      description:
        'Delivers a message on a lane and returns its receipt; refuses invalid input naming the field. With `wait`, completes when the turn it entered ends.',
    });
    setHandler(approveUpdate, (raw) => asFailure(() => driver.approve(raw)), {
      validator: (raw: unknown) => void asFailure(() => driver.validateApprove(raw)),
      description:
        'Decides a tool call waiting for approval: {callId, decision: approve|deny, reason?} → {callId, decision, duplicate}. Refuses a call that is not waiting, naming it.',
    });
    setHandler(budgetUpdate, (raw) => asFailure(() => driver.budget(raw)), {
      validator: (raw: unknown) => void asFailure(() => driver.validateBudget(raw)),
      description:
        'Decides a session waiting at its budget: {decision: extend, limits} or {decision: deny, reason?} → {decision, limits}. Refuses when the session does not wait, or limits that would not let the step run.',
    });
    setHandler(
      eventsQuery,
      (raw) =>
        eventsPage(raw, {
          log: driver.core.log,
          firstSeq: this.firstSeq,
          lastSeq: driver.core.lastSeq,
          ...(this.previousRunId ? { previousRunId: this.previousRunId } : {}),
        }),
      {
        description:
          "A page of this run's event log: {afterSeq?, limit?} → {events, nextSeq, previousRunId?}.",
      },
    );
    setHandler(
      configQuery,
      () => {
        const { fork, ...config } = this.config;
        return fork ? { ...config, fork: { from: fork.from, throughSeq: fork.throughSeq } } : config;
      },
      {
        description:
          'The config the session was started with (a fork names its source, without the snapshot).',
      },
    );
    setHandler(stateQuery, () => driver.stateView(), {
      description: 'Status, turn, step, pending message ids, refused payloads and token usage.',
    });
    setHandler(
      transcriptQuery,
      () => ({
        ...(this.config.system !== undefined ? { system: this.config.system } : {}),
        messages: driver.core.transcript.entries,
        base: driver.core.transcript.base,
        ...(this.previousRunId ? { previousRunId: this.previousRunId } : {}),
      }),
      { description: 'The model-visible transcript this run holds (system prompt and messages).' },
    );
    setHandler(
      modelContextQuery,
      (range) => modelContextPage(range, driver.core.transcript, this.previousRunId),
      {
        description: 'Internal: model-visible entries [from, to) for the model activity’s transcript cache.',
      },
    );
  }

  /**
   * Accepts a delivery. The first delivery of a run whose session names tools or hooks waits for the worker to
   * resolve them, and an unknown name rejects the update naming it ("told at once").
   */
  private async deliver(raw: unknown): Promise<DeliveryReceipt> {
    if (this.interpreter.configUnchecked() && patched(DELIVER_CHECKS_CONFIG)) {
      for (const r of await this.interpreter.resolveAll()) {
        if (r.kind === 'failed')
          throw ApplicationFailure.create({
            type: r.failureType,
            message: r.error.message,
            nonRetryable: true,
          });
      }
    }
    const receipt = asFailure(() => this.driver.deliver(raw));
    if (!receipt.duplicate) this.tracing.noteDelivery(receipt.messageId);
    const wait = (raw as DeliverInput).wait;
    return wait ? this.waitForTurn(receipt, wait.timeoutMs ?? DEFAULT_WAIT_MS) : receipt;
  }

  /**
   * Completes a waiting delivery when its message's turn has ended. While a waiter waits the session does not
   * continue as new (the quiet point comes again after the next turn), so the wait never spans two runs.
   */
  private waitingForLaterTurn(): boolean {
    return this.waiting.some((id) => this.driver.waitOutcome(id) === undefined);
  }

  private async waitForTurn(receipt: DeliveryReceipt, timeoutMs: number): Promise<DeliveryReceipt> {
    this.waiting.push(receipt.messageId);
    try {
      // The timer's summary names it on the Temporal UI's timeline (metadata only: replay does not compare it).
      const ended = await condition(
        () => this.driver.waitOutcome(receipt.messageId) !== undefined,
        timeoutMs,
        {
          summary: `wait for the turn of ${receipt.messageId}`,
        },
      );
      if (!ended)
        throw ApplicationFailure.create({
          type: FailureTypes.TurnWaitTimeout,
          nonRetryable: true,
          message: `message ${receipt.messageId} was accepted, but its turn did not end within ${timeoutMs} ms`,
          details: [receipt],
        });
      return { ...receipt, outcome: this.driver.waitOutcome(receipt.messageId)! };
    } finally {
      this.waiting.splice(this.waiting.indexOf(receipt.messageId), 1);
    }
  }
}

const WIRE_SIGNALS = new Set(['followup', 'steer', 'inject', 'cancel', 'dispose']);

/** The wire's signals (docs/protocol.md) and what the Temporal UI says of each. */
const SIGNAL_DESCRIPTIONS = [
  [
    followupSignal,
    'Queues a message for its own turn (lane followup); invalid payloads are counted and ignored.',
  ],
  [steerSignal, 'Delivers a message at the next step boundary and wakes the session (lane steer).'],
  [injectSignal, 'Adds context at the next step without waking the session (lane inject).'],
  [cancelSignal, 'Cancels the running turn: {reason?}. Running tool calls settle; pending ones are aborted.'],
  [disposeSignal, 'Ends the session after cancelling its running turn: {}.'],
] as const;

/** Runs `body`; a SessionRefusal becomes a non-retryable ApplicationFailure of its failure type. */
function asFailure<T>(body: () => T): T {
  try {
    return body();
  } catch (err) {
    if (err instanceof SessionRefusal)
      throw ApplicationFailure.create({ type: err.failureType, message: err.message, nonRetryable: true });
    throw err;
  }
}
