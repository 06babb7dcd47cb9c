/**
 * The agentSession workflow: a thin entity workflow over SessionCore (STYLE.md 9). It registers the wire handlers,
 * waits for waking work with `condition`, and runs turns: claim → pre-step waterfall → step (model activity, tool
 * activities) → next boundary. Deterministic: runs in the workflow sandbox; time and ids come from the workflow API.
 */
import {
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  isCancellation,
  log,
  patched,
  setDefaultSignalHandler,
  setHandler,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { HookDescriptor, ToolDescriptor } from '../activities/types';
import {
  cancelSignal,
  deliverUpdate,
  disposeSignal,
  ErrorCodes,
  eventsQuery,
  FailureTypes,
  followupSignal,
  injectSignal,
  modelContextQuery,
  type ModelContextPage,
  stateQuery,
  steerSignal,
  transcriptQuery,
  type EventsPage,
} from '../contract';
import type { CancelCause, TurnEndReason } from '../domain/events';
import { afterPreStep, afterStep } from '../domain/loop';
import { makeUserMessage, USER_SOURCE } from '../domain/messages';
import { SessionCore, type SessionSnapshot } from '../domain/session';
import { emptyTranscript, transcriptLength, type TranscriptState } from '../domain/transcript';
import { describeZodIssue } from '../domain/util';
import {
  CancelInputSchema,
  DEFAULT_EVENTS_LIMIT,
  DEFAULT_MAX_PARALLEL_TOOL_CALLS,
  DeliverInputSchema,
  EventsQuerySchema,
  LaneSignalSchema,
  laneInputProblem,
  SessionConfigSchema,
  type DeliveryReceipt,
  type Lane,
  type ModelSpec,
  type SessionConfig,
} from '../domain/wire';
import { modelActivities, setupActivities } from './activities';
import { errorInfo } from './errors';
import { preStepHookListener } from './hooks';
import { runPreStep, type PreStepListener } from './preStep';
import { runToolBatch } from './toolBatch';

export interface AgentSessionOptions {
  /** Pre-step listeners, outermost first. */
  preStep?: PreStepListener[];
}

/**
 * What a run hands to the next one across continue-as-new (rule 33): the core's snapshot (inbox, counters, recent
 * ids, seq), and references instead of content — the earlier runs keep their events and transcript entries and
 * answer queries for them, so the carried state stays small whatever the session's length.
 */
export interface CarriedSession {
  snapshot: SessionSnapshot;
  transcript: { base: number; hash: string };
  /** Count and hash of the transcript prefix the last model request saw. */
  sent: { count: number; hash: string };
  previousRunId: string;
}

/** Default number of events a run may log before it continues as new at the next quiet point. */
export const DEFAULT_CONTINUE_AS_NEW_AFTER_EVENTS = 10_000;
/** Largest JSON size of one modelContext / events page. */
const PAGE_BYTES = 1024 * 1024;

/** Marks runs whose `deliver` update checks the session's tool and hook names before accepting (rule 5). */
const DELIVER_CHECKS_CONFIG = 'deliver-checks-config';

type Resolved<T> = { kind: 'ok'; value: T } | { kind: 'error'; error: { message: string; code: string } };

/** Builds an agentSession workflow function with the given workflow-side extensions. */
export function defineAgentSession(options: AgentSessionOptions = {}) {
  return async function agentSession(rawConfig: SessionConfig = {}, carried?: CarriedSession): Promise<void> {
    const parsed = SessionConfigSchema.safeParse(rawConfig ?? {});
    if (!parsed.success) {
      throw ApplicationFailure.create({
        type: FailureTypes.InvalidPayload,
        nonRetryable: true,
        message: `invalid session config: ${describeZodIssue(parsed.error.issues, 'config')}`,
      });
    }
    await new SessionWorkflow(parsed.data, options, carried).run();
  };
}

class SessionWorkflow {
  private readonly core: SessionCore;
  private readonly info = workflowInfo();
  private readonly sessionId = this.info.workflowId;
  /** Where this run's log starts, and the run that holds what came before. */
  private readonly firstSeq: number;
  private readonly previousRunId: string | undefined;
  /** Count and hash of the transcript prefix the last model request saw (history grows with new content only). */
  private sent: { count: number; hash: string };
  private disposeRequested = false;
  /** Scope of the running turn; cancelling it interrupts whatever the turn awaits (rules 27–29). */
  private turnScope: CancellationScope | undefined;
  private tools: Map<string, ToolDescriptor> | undefined;
  private hooks: Map<string, HookDescriptor> | undefined;
  /** In-flight name checks, shared by the turn loop and `deliver` handlers (one activity each per run). */
  private toolsPending: Promise<Resolved<Map<string, ToolDescriptor>>> | undefined;
  private hooksPending: Promise<Resolved<Map<string, HookDescriptor>>> | undefined;

  constructor(
    private readonly config: SessionConfig,
    private readonly options: AgentSessionOptions,
    carried?: CarriedSession,
  ) {
    const transcript: TranscriptState = emptyTranscript();
    if (carried) {
      transcript.base = carried.transcript.base;
      transcript.hash = carried.transcript.hash;
      transcript.previousRunId = carried.previousRunId;
    }
    this.core = new SessionCore({ now: () => Date.now() }, carried?.snapshot, transcript);
    this.firstSeq = this.core.lastSeq + 1;
    this.previousRunId = carried?.previousRunId;
    this.sent = carried?.sent ?? { count: 0, hash: transcript.hash };
    this.registerHandlers();
  }

  async run(): Promise<void> {
    for (;;) {
      await condition(() => this.core.hasWakingWork() || this.disposeRequested);
      if (this.disposeRequested) break;
      const scope = new CancellationScope();
      this.turnScope = scope;
      await scope
        .run(() => this.runTurn())
        .catch((err: unknown) => {
          if (!isCancellation(err)) throw err;
        });
      this.turnScope = undefined;
      if (this.core.turnOpen) this.aborted(); // every turn/start gets its turn/end (rule 24)
      if (this.shouldContinueAsNew()) await this.continueAsNew();
    }
    // Dispose (rule 31): pending work is discarded, the session is idle here; the last event is session/disposed.
    this.core.cancel({ kind: 'disposed' }, false);
    this.core.dispose();
    await condition(allHandlersFinished);
  }

  // ---- continue-as-new (rule 33) ----

  private shouldContinueAsNew(): boolean {
    if (this.disposeRequested || this.core.turnOpen) return false;
    const budget = this.config.continueAsNewAfterEvents ?? DEFAULT_CONTINUE_AS_NEW_AFTER_EVENTS;
    return workflowInfo().continueAsNewSuggested || this.core.log.length >= budget;
  }

  /** Continues as new at a quiet point: between turns, every handler finished. */
  private async continueAsNew(): Promise<void> {
    await condition(allHandlersFinished);
    if (this.core.turnOpen || this.disposeRequested) return;
    const transcript = { base: transcriptLength(this.core.transcript), hash: this.core.transcript.hash };
    const carried: CarriedSession = {
      snapshot: this.core.snapshot,
      transcript,
      // The next run holds no entries before `base`, so its first request names all of them as the prefix; a
      // model activity whose cache lacks the last ones reads them from this run.
      sent: { count: transcript.base, hash: transcript.hash },
      previousRunId: this.info.runId,
    };
    await continueAsNew<(config: SessionConfig, carried?: CarriedSession) => Promise<void>>(
      this.config,
      carried,
    );
  }

  // ---- handlers (each delegates in a line or two) ----

  private registerHandlers(): void {
    // One handler for every signal, registered first: Temporal hands signals that arrived before the first workflow
    // task to specific handlers one name at a time, which would put a followup before an inject sent earlier.
    // The default handler receives them all in arrival order (rule 9).
    setDefaultSignalHandler((name: string, ...args: unknown[]) => this.onSignal(name, args[0]));
    setHandler(deliverUpdate, (raw) => this.deliver(raw), {
      validator: (raw: unknown) => this.validateDeliver(raw),
    });
    setHandler(eventsQuery, (raw) => this.events(raw));
    setHandler(stateQuery, () => this.core.stateView());
    setHandler(transcriptQuery, () => ({
      ...(this.config.system !== undefined ? { system: this.config.system } : {}),
      messages: this.core.transcript.entries,
      base: this.core.transcript.base,
      ...(this.previousRunId ? { previousRunId: this.previousRunId } : {}),
    }));
    setHandler(modelContextQuery, (range) => this.modelContext(range));
  }

  private onSignal(name: string, raw: unknown): void {
    switch (name) {
      case followupSignal.name:
        return this.onLaneSignal('followup', raw);
      case steerSignal.name:
        return this.onLaneSignal('steer', raw);
      case injectSignal.name:
        return this.onLaneSignal('inject', raw);
      case cancelSignal.name:
        return this.onCancel(raw);
      case disposeSignal.name:
        return this.onDispose();
      default:
        return this.refuse(name, 'unknown signal (expected followup, steer, inject, cancel or dispose)');
    }
  }

  /** A signal cannot reject: bad input is counted and logged, never thrown (rule 5). */
  private onLaneSignal(lane: Lane, raw: unknown): void {
    const parsed = LaneSignalSchema.safeParse(raw);
    const problem = parsed.success
      ? laneInputProblem(lane, parsed.data.message)
      : describeZodIssue(parsed.error.issues, 'payload');
    if (problem || !parsed.success) return this.refuse(lane, problem ?? 'invalid payload');
    if (this.disposeRequested || this.core.disposed) return this.refuse(lane, 'session disposed');
    const source = parsed.data.message.source ?? USER_SOURCE;
    this.core.accept(lane, makeUserMessage(parsed.data.message, source, uuid4));
  }

  private refuse(lane: string, reason: string): void {
    this.core.refuse(`${lane}: ${reason}`);
    log.warn('refused a signal payload', { lane, reason });
  }

  private validateDeliver(raw: unknown): void {
    const parsed = DeliverInputSchema.safeParse(raw);
    if (!parsed.success)
      throw new Error(`invalid deliver payload: ${describeZodIssue(parsed.error.issues, 'payload')}`);
    const problem = laneInputProblem(parsed.data.lane, parsed.data.message);
    if (problem) throw new Error(`invalid deliver payload: ${problem}`);
    if (this.disposeRequested || this.core.disposed) throw new Error('session disposed');
  }

  /**
   * Accepts a delivery. The first delivery of a run whose session names tools or hooks waits for the worker to
   * resolve them, and an unknown name rejects the update naming it (DESIGN.md: "told at once").
   */
  private async deliver(raw: unknown): Promise<DeliveryReceipt> {
    const input = DeliverInputSchema.parse(raw);
    if (this.configUnchecked() && patched(DELIVER_CHECKS_CONFIG)) {
      const [tools, hooks] = await Promise.all([this.resolveTools(), this.resolveHooks()]);
      for (const r of [tools, hooks]) {
        if (r.kind === 'error')
          throw ApplicationFailure.create({
            type: r.error.code,
            message: r.error.message,
            nonRetryable: true,
          });
      }
    }
    if (this.disposeRequested || this.core.disposed) {
      throw ApplicationFailure.create({
        type: FailureTypes.SessionDisposed,
        message: 'session disposed',
        nonRetryable: true,
      });
    }
    const message = makeUserMessage(input.message, input.message.source ?? USER_SOURCE, uuid4);
    return this.core.accept(input.lane, message).receipt;
  }

  private onCancel(raw: unknown): void {
    const parsed = CancelInputSchema.safeParse(raw ?? {});
    if (!parsed.success) return this.refuse('cancel', describeZodIssue(parsed.error.issues, 'payload'));
    if (this.disposeRequested) return;
    this.cancelTurn(parsed.data.cause ?? { kind: 'user' }, parsed.data.keepInbox === true);
  }

  private onDispose(): void {
    if (this.disposeRequested) return;
    this.disposeRequested = true;
    this.cancelTurn({ kind: 'disposed' }, false);
  }

  /** Discards pending work (unless keepInbox) and cancels the running turn; the first cause wins (rule 27). */
  private cancelTurn(cause: CancelCause, keepInbox: boolean): void {
    if (this.core.cancel(cause, keepInbox)) this.turnScope?.cancel();
  }

  private events(raw: unknown): EventsPage {
    const parsed = EventsQuerySchema.safeParse(raw ?? {});
    if (!parsed.success)
      throw new Error(`invalid events query: ${describeZodIssue(parsed.error.issues, 'query')}`);
    const afterSeq = parsed.data.afterSeq ?? -1;
    const limit = parsed.data.limit ?? DEFAULT_EVENTS_LIMIT;
    const log = this.core.log;
    const from = Math.max(0, afterSeq + 1 - this.firstSeq);
    return {
      events: takePage(log, from, limit),
      lastSeq: this.core.lastSeq,
      firstSeq: this.firstSeq,
      ...(this.previousRunId ? { previousRunId: this.previousRunId } : {}),
    };
  }

  /** Model-visible entries [from, to) this run holds (for model activities whose cache missed). */
  private modelContext(range: { from: number; to: number }): ModelContextPage {
    const { base, entries } = this.core.transcript;
    const from = Math.max(0, Math.floor(Number(range?.from) || 0) - base);
    const to = Math.min(entries.length, Math.floor(Number(range?.to) || 0) - base);
    return {
      entries: takePage(entries, from, Math.max(0, to - from)),
      base,
      ...(this.previousRunId ? { previousRunId: this.previousRunId } : {}),
    };
  }

  // ---- the turn loop ----

  private async runTurn(): Promise<void> {
    const core = this.core;
    const turn = core.openTurn();
    let boundary: 'turn' | 'step' = 'turn';
    let toolsOweRequest = false;
    try {
      for (;;) {
        const batch = core.claim(boundary);
        boundary = 'step';
        let hooks = this.knownHooks();
        if (!hooks) {
          const resolved = await this.resolveHooks();
          if (this.aborted()) return;
          if (resolved.kind === 'error') return core.endTurn({ kind: 'error', error: resolved.error });
          hooks = resolved.value;
        }
        let decision;
        try {
          decision = await runPreStep(this.preStepListeners(hooks), {
            sessionId: this.sessionId,
            turn,
            step: core.step + 1,
            batch,
            config: this.config,
          });
        } catch (err) {
          if (this.aborted()) return;
          return core.endTurn({ kind: 'error', error: errorInfo(err, ErrorCodes.PreStepFailed) });
        }
        if (this.aborted()) return;
        const next = afterPreStep(decision, toolsOweRequest);
        if (next.kind === 'end') return core.endTurn(next.reason);
        const tools = await this.resolveTools();
        if (this.aborted()) return;
        if (tools.kind === 'error') return core.endTurn({ kind: 'error', error: tools.error });
        core.startStep(next.messages);
        const outcome = await this.runStep(tools.value, hooks);
        if (this.aborted()) return;
        if (outcome.kind === 'end') return core.endTurn(outcome.reason);
        core.endStep();
        const after = afterStep({ ...outcome, nextStepPending: core.inbox.nextStep.length > 0 });
        if (after.kind === 'end') return core.endTurn(after.reason);
        toolsOweRequest = outcome.toolsOweRequest;
      }
    } catch (err) {
      if (this.aborted()) return;
      // A bug or an unexpected failure inside the loop still closes the turn; the session lives on (rule 26).
      log.error('turn failed', { turn, error: String(err) });
      if (core.turnOpen) core.endTurn({ kind: 'error', error: errorInfo(err, ErrorCodes.Internal) });
    }
  }

  /** If the turn is being cancelled, closes it `aborted` with the first cause (step/end first) and says so. */
  private aborted(): boolean {
    const cause = this.core.canceling;
    if (!cause || !this.core.turnOpen) return false;
    this.core.endTurn({ kind: 'aborted', reason: cause });
    return true;
  }

  /** One step after its messages entered: the model request, then its tool calls. */
  private async runStep(
    allowed: ReadonlyMap<string, ToolDescriptor>,
    hooks: ReadonlyMap<string, HookDescriptor>,
  ): Promise<
    | { kind: 'done'; toolsOweRequest: boolean; concluded: boolean; maxTokens: boolean }
    | { kind: 'end'; reason: TurnEndReason }
  > {
    const core = this.core;
    const requestIndex = core.nextModelRequest();
    let result;
    try {
      result = await modelActivities.modelStep({
        sessionId: this.sessionId,
        turn: core.turn,
        step: core.step,
        requestIndex,
        // No model: the worker's default answers (its configuration decides, not the workflow).
        ...(this.config.model ? { model: this.modelFor(requestIndex) } : {}),
        ...(this.config.system !== undefined ? { system: this.config.system } : {}),
        tools: [...allowed.keys()],
        ...this.newContent(),
      });
    } catch (err) {
      if (isCancellation(err) && core.canceling)
        return { kind: 'end', reason: { kind: 'aborted', reason: core.canceling } };
      return { kind: 'end', reason: { kind: 'error', error: errorInfo(err, ErrorCodes.ModelFailed) } };
    }
    if (result.interrupted) {
      // Visible output of a cancelled call stays in the log, marked interrupted (rule 29).
      if (result.text)
        core.assistant(
          { id: uuid4(), role: 'assistant', content: [{ type: 'text', text: result.text }] },
          { interrupted: true },
        );
      return {
        kind: 'end',
        reason: core.canceling ? { kind: 'aborted', reason: core.canceling } : { kind: 'completed' },
      };
    }
    core.assistant(
      {
        id: uuid4(),
        role: 'assistant',
        content: result.text ? [{ type: 'text', text: result.text }] : [],
        ...(result.toolCalls.length ? { toolCalls: result.toolCalls } : {}),
      },
      result.usage ? { usage: result.usage } : {},
    );
    if (result.toolCalls.length === 0) {
      return {
        kind: 'done',
        toolsOweRequest: false,
        concluded: false,
        maxTokens: result.finish === 'max-tokens',
      };
    }
    const batch = await runToolBatch(result.toolCalls, {
      sessionId: this.sessionId,
      core,
      allowed,
      maxParallel: this.config.maxParallelToolCalls ?? DEFAULT_MAX_PARALLEL_TOOL_CALLS,
      canceling: () => core.canceling !== undefined,
      postToolHooks: [...hooks.values()].filter((h) => h.kind === 'post-tool').map((h) => h.name),
    });
    return {
      kind: 'done',
      toolsOweRequest: true,
      concluded: batch.concluded,
      maxTokens: result.finish === 'max-tokens',
    };
  }

  /**
   * The session's model for one request. A scripted model's script can be long; the request carries only the step
   * it answers with, so history does not grow with the script's length.
   */
  private modelFor(requestIndex: number): ModelSpec | undefined {
    const model = this.config.model;
    if (model?.provider !== 'scripted') return model;
    return {
      provider: 'scripted',
      steps: model.steps.slice(requestIndex, requestIndex + 1),
      firstStep: requestIndex,
    };
  }

  /**
   * What a model request carries of the transcript: only the entries added since the previous request, with the
   * count and hash of what came before; the activity assembles the rest (rule 14: exactly what the log holds).
   * This is the one place that decides how the transcript reaches the model activity.
   */
  private newContent() {
    const t = this.core.transcript;
    const prefix = this.sent;
    const newEntries = t.entries.slice(Math.max(0, prefix.count - t.base));
    this.sent = { count: transcriptLength(t), hash: t.hash };
    return {
      chainId: this.info.firstExecutionRunId,
      runId: this.info.runId,
      prefix,
      newEntries,
      hash: t.hash,
    };
  }

  /** Whether a name check of this run is still to be made (the session names tools or hooks not yet resolved). */
  private configUnchecked(): boolean {
    return (
      (!this.tools && (this.config.tools ?? []).length > 0) ||
      (!this.hooks && (this.config.hooks ?? []).length > 0)
    );
  }

  /** The workflow's own listeners (outermost), then one listener per pre-step hook, in the session's order. */
  private preStepListeners(hooks: ReadonlyMap<string, HookDescriptor>): PreStepListener[] {
    const own = this.options.preStep ?? [];
    const fromHooks = [...hooks.values()]
      .filter((h) => h.kind === 'pre-step')
      .map((h) => preStepHookListener(h.name));
    return fromHooks.length ? [...own, ...fromHooks] : [...own];
  }

  /** Resolves the session's tool names against the worker once per run (an unknown name ends the turn in error). */
  private async resolveTools(): Promise<Resolved<Map<string, ToolDescriptor>>> {
    if (this.tools) return { kind: 'ok', value: this.tools };
    const names = this.config.tools ?? [];
    if (names.length === 0) return { kind: 'ok', value: (this.tools = new Map()) };
    this.toolsPending ??= setupActivities.describeTools({ names }).then(
      (described): Resolved<Map<string, ToolDescriptor>> => {
        this.tools = new Map(described.map((t) => [t.name, t]));
        return { kind: 'ok', value: this.tools };
      },
      (err: unknown): Resolved<Map<string, ToolDescriptor>> => {
        this.toolsPending = undefined; // a later boundary asks again
        return { kind: 'error', error: errorInfo(err, ErrorCodes.UnknownTool) };
      },
    );
    return this.toolsPending;
  }

  /** The session's hooks when known without asking the worker (resolved before, or none named). */
  private knownHooks(): Map<string, HookDescriptor> | undefined {
    if (!this.hooks && (this.config.hooks ?? []).length === 0) this.hooks = new Map();
    return this.hooks;
  }

  /** Resolves the session's hook names and kinds once per run (an unknown name ends the turn in error). */
  private resolveHooks(): Promise<Resolved<Map<string, HookDescriptor>>> {
    const known = this.knownHooks();
    if (known) return Promise.resolve({ kind: 'ok', value: known });
    const names = this.config.hooks ?? [];
    this.hooksPending ??= setupActivities.describeHooks({ names }).then(
      (described): Resolved<Map<string, HookDescriptor>> => {
        this.hooks = new Map(described.map((h) => [h.name, h]));
        return { kind: 'ok', value: this.hooks };
      },
      (err: unknown): Resolved<Map<string, HookDescriptor>> => {
        this.hooksPending = undefined;
        return { kind: 'error', error: errorInfo(err, ErrorCodes.UnknownHook) };
      },
    );
    return this.hooksPending;
  }
}

/** A slice of at most `limit` items from `from`, cut short before it passes PAGE_BYTES of JSON (at least one item). */
function takePage<T>(items: readonly T[], from: number, limit: number): T[] {
  const out: T[] = [];
  let bytes = 0;
  for (let i = from; i < items.length && out.length < limit; i++) {
    bytes += JSON.stringify(items[i]).length;
    if (out.length > 0 && bytes > PAGE_BYTES) break;
    out.push(items[i]!);
  }
  return out;
}
