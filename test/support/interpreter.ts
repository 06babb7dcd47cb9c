/**
 * The second interpreter of the session driver (src/domain/driver.ts): in memory, synchronous, scripted
 * (./script.ts) instead of listeners and activities. What the workers do it calls from the same pure modules: when
 * the loop parks and resumes (src/domain/driver/park.ts), how a request's transcript is assembled and hash-checked
 * (src/domain/requestAssembly.ts), a compaction's outcome (src/domain/compaction.ts), and how an entry sent by
 * reference is rebuilt from what the run's history holds (src/domain/entryRefs.ts: from a record of the delivery
 * payloads and the tool and model activities' results of this run, never the driver's state, so every test also
 * proves a reference names content history holds). Its own part is placing arrivals — at every point where the
 * workflow would await (pre-step, the model call, each tool settlement), which is how tests put messages "during" a
 * step — and answering effects: tool calls settle in the order the script chooses, and a cancel reaches whatever the
 * turn awaits, as a cancellation scope would.
 */
import {
  failedResult,
  postToolChain,
  SessionDriver,
  SessionRefusal,
  type Answer,
  type CarriedSession,
  type DriverGenerator,
  type Effect,
  type Failed,
  type Lane,
  type ModelCall,
  type SessionConfig,
  type SessionEvent,
  type ToolStart,
  type TranscriptEntry,
  type UserMessage,
} from '../../src/domain/index';
import { HeldContent, isEntryRef, wireEntries, type WireEntry } from '../../src/domain/entryRefs';
import type { CompactionCall } from '../../src/domain/effects';
import { compactionOutcome, splitAtCut } from '../../src/domain/compaction';
import { mayResume } from '../../src/domain/driver/park';
import { assembled, hashed, type RequestShape } from '../../src/domain/requestAssembly';
import {
  modelAnswer,
  preStepAnswer,
  resolvedNames,
  toolResult,
  type Arrival,
  type ArrivalResult,
  type AwaitPoint,
  type Delivery,
  type Script,
  type SessionOptions,
  type SignalArrival,
  type ToolCallPlan,
} from './script';

export * from './script';
export { outline, userIds } from './outline';

const none = undefined as unknown as Answer;
const CANCELED: Failed = { kind: 'failed', error: { message: 'canceled', code: 'CANCELED' }, canceled: true };
const lane = (lane: Lane, message: UserMessage): Delivery => ({ lane, message });

export class InMemorySession {
  driver: SessionDriver;
  /** The model-visible messages of every model request, in order, as the model activity would assemble them. */
  readonly requests: TranscriptEntry[][] = [];
  /** The new entries of every model request as its activity input would carry them (inline or by reference). */
  readonly sent: WireEntry[][] = [];
  /** Length of the whole log (across runs) when each request was made: what the model saw was logged before it. */
  readonly requestAt: number[] = [];
  /** The projection each compaction was given (assembled and checked as a model request's), and its cut. */
  readonly compactions: { projection: TranscriptEntry[]; cut: number; pinned?: number }[] = [];
  /** The log of every run so far (continue-as-new starts a new driver whose log starts where this one ended). */
  readonly earlierLog: SessionEvent[] = [];
  /** How many runs continued as new. */
  continuedAsNew = 0;
  /** Every arrival, in the order the session got it (idle tasks and `during` points alike). */
  readonly arrived: Arrival[] = [];
  /** Length of the whole log when each accepted cancel arrived. */
  readonly cancelsAt: number[] = [];
  completed = false;
  /** Call ids in the order their tool calls started running (a call answered without running is not here). */
  readonly ran: string[] = [];
  /** The approval timers the session started: callId → timeoutMs (`timeout(callId)` fires one). */
  readonly approvalTimers = new Map<string, number>();
  /** An approval was resolved (or a cancel came) since the tool batch last asked. */
  private approvalWoken = false;
  private gen: DriverGenerator;
  /** The waiting effect the loop is parked at. */
  private parked: Effect | undefined;
  private clock = 0;
  private ids = 0;
  private canceledTurn = 0;
  private readonly plans = new Map<string, ToolCallPlan>();
  private readonly started = new Map<number, ToolStart>();
  private running: number[] = [];
  /** The model activity's cache: the entries the last request saw, hashed, and their projection generation. */
  private seen = hashed([]);
  private generation = 0;
  private readonly config: SessionConfig;
  private suggestContinueAsNew = false;
  /** The deployment's target version differs from this run's (Worker Versioning; docs/upgrades.md). */
  private newVersion = false;
  /** What the current run's Temporal history holds that references may name (emptied at continue-as-new). */
  private history = new HeldContent();

  constructor(
    private readonly script: Script = {},
    options: SessionOptions = {},
  ) {
    this.config = options.config ?? {};
    this.driver = this.newDriver(options.carried);
    this.gen = this.driver.run();
    this.pump(this.gen.next());
  }

  get core() {
    return this.driver.core;
  }

  /** The whole log across runs. */
  get log(): SessionEvent[] {
    return [...this.earlierLog, ...this.core.log];
  }

  /** Accepts deliveries in one workflow task (rule 9), then runs the loop until it waits for work again. */
  deliver(...deliveries: Delivery[]): ArrivalResult[] {
    return this.arriveAll(deliveries);
  }
  followup = (...messages: UserMessage[]) => this.deliver(...messages.map((m) => lane('followup', m)));
  steer = (...messages: UserMessage[]) => this.deliver(...messages.map((m) => lane('steer', m)));
  inject = (...messages: UserMessage[]) => this.deliver(...messages.map((m) => lane('inject', m)));
  /** Any signal while idle (cancel, dispose, bad payloads), then the loop runs. */
  signal(...arrivals: SignalArrival[]): void {
    this.arriveAll(arrivals);
  }
  /** An `approve` update: its receipt, or the validator's refusal; then the loop runs. */
  approve(input: unknown): ArrivalResult {
    return this.arriveAll([{ approve: input }])[0]!;
  }
  /** A `budget` update: its receipt, or the validator's refusal; then the loop runs. */
  budget(input: unknown): ArrivalResult {
    return this.arriveAll([{ budget: input }])[0]!;
  }

  /** Whether the loop waits at its budget for a decision. */
  get waitingForBudget(): boolean {
    return this.parked?.type === 'await-budget';
  }
  /** Whether the loop waits for an approval decision (nothing else can move it). */
  get waitingForApproval(): boolean {
    return this.parked?.type === 'tool-settled';
  }

  /** The approval timer of a call fires (durable time passing); the session must have started it. */
  timeout(callId: string): void {
    if (!this.approvalTimers.delete(callId)) throw new Error(`no approval timer for ${callId}`);
    this.driver.approvalTimedOut(callId);
    this.resume();
  }

  /** Continues as new now (a quiet point): the next run starts from the carried state, as the workflow's does. */
  continueAsNew(): void {
    if (!this.driver.canContinueAsNew()) throw new Error('not a quiet point');
    this.restart();
  }
  /** A new version of the workflow code became the target: the driver moves at its next quiet point. */
  newVersionAvailable(): void {
    this.newVersion = true;
  }
  /** Makes the driver continue as new at its next quiet point (the server's suggestion). */
  suggestContinueAsNewAtNextQuietPoint(): void {
    this.suggestContinueAsNew = true;
  }

  private newDriver(carried?: CarriedSession): SessionDriver {
    const deps = {
      now: () => this.clock++,
      newId: () => `id-${++this.ids}`,
      cancelTurn: () => {
        this.canceledTurn = this.driver.core.turn;
        this.approvalWoken = true;
      },
      onApprovalResolved: () => (this.approvalWoken = true),
      continueAsNewSuggested: () => this.suggestContinueAsNew,
      newVersionWaits: () => this.newVersion,
    };
    return new SessionDriver(this.config, deps, carried);
  }

  private restart(): void {
    const carried = this.driver.carry(`run-${this.continuedAsNew}`);
    this.earlierLog.push(...this.core.log);
    this.continuedAsNew += 1;
    this.history = new HeldContent();
    this.suggestContinueAsNew = false;
    // The next run starts on the target version (continue-as-new with AUTO_UPGRADE).
    this.newVersion = false;
    this.driver = this.newDriver(JSON.parse(JSON.stringify(carried)) as CarriedSession);
    this.gen = this.driver.run();
    this.parked = undefined;
    this.pump(this.gen.next());
  }

  // ---- placing arrivals ----

  private arriveAll(arrivals: readonly Arrival[]): ArrivalResult[] {
    const results = arrivals.map((a) => this.arrive(a));
    this.resume();
    return results;
  }

  private arrive(a: Arrival): ArrivalResult {
    this.arrived.push(a);
    if ('signal' in a) {
      const refused = this.core.stateView().refused;
      this.history.delivered(a.signal, structuredClone(a.payload)); // as the run's history records it
      this.driver.signal(a.signal, a.payload);
      if (a.signal === 'cancel' && this.core.stateView().refused === refused)
        this.cancelsAt.push(this.log.length);
      return { accepted: false };
    }
    try {
      if ('budget' in a) return { accepted: true, receipt: this.driver.budget(a.budget) };
      if ('approve' in a) return { accepted: true, receipt: this.driver.approve(a.approve) };
      const { id, content, source } = a.message;
      const payload = { lane: a.lane, message: { id, content: [...content], source } };
      this.history.delivered('deliver', structuredClone(payload));
      const receipt = this.driver.deliver(payload);
      return { accepted: !receipt.duplicate, receipt };
    } catch (err) {
      if (err instanceof SessionRefusal) return { accepted: false, refused: err.message };
      throw err;
    }
  }

  private during(point: AwaitPoint): void {
    for (const a of this.script.during?.(point) ?? []) this.arrive(a);
  }

  private get inCanceledTurn(): boolean {
    return this.core.turnOpen && this.canceledTurn === this.core.turn;
  }

  // ---- driving the loop: it parks where the workflow's conditions would wait ----

  private parks(effect: Effect): boolean {
    return !mayResume(effect.type, this.driver, { running: this.running.length, woken: this.approvalWoken });
  }

  /** Resumes a parked loop, if what it waits for has arrived. */
  private resume(): void {
    const effect = this.parked;
    if (this.completed || !effect || this.parks(effect)) return;
    this.parked = undefined;
    this.pump(this.gen.next(this.perform(effect)));
  }

  private pump(next: IteratorResult<Effect, void>): void {
    while (!next.done) {
      const effect = next.value;
      if (this.parks(effect)) return void (this.parked = effect);
      if (effect.type === 'continue-as-new' && this.driver.canContinueAsNew()) return this.restart();
      next = this.gen.next(this.perform(effect));
    }
    this.completed = true;
  }

  // ---- answering effects ----

  private perform(effect: Effect): Answer {
    switch (effect.type) {
      case 'wait-for-work':
      case 'continue-as-new':
      case 'await-budget':
        return none;
      case 'start-tool':
        this.ran.push(effect.start.call.callId);
        this.started.set(effect.start.index, effect.start);
        this.running = [...this.running, effect.start.index].sort((a, b) => a - b);
        return none;
      case 'resolve-hooks':
      case 'resolve-tools':
        return resolvedNames(effect.type, this.config, this.script.tools);
      case 'pre-step':
        return this.preStep(effect.request);
      case 'model':
        return this.model(effect.call);
      case 'compact':
        return this.compact(effect.call);
      case 'tool-settled':
        return this.settle();
      case 'check-approvals': {
        const answer = this.script.checkApprovals?.(effect.check.calls) ?? [];
        if (answer !== 'fail') return { kind: 'ok', value: [...answer] };
        return { kind: 'failed', error: { message: 'predicate failed', code: 'TOOL_FAILED' } };
      }
      case 'await-approval':
        if (effect.approval.timeoutMs !== undefined)
          this.approvalTimers.set(effect.approval.callId, effect.approval.timeoutMs);
        return none;
    }
  }

  private preStep(request: { turn: number; step: number; batch: readonly UserMessage[] }): Answer {
    if (this.inCanceledTurn) return CANCELED;
    this.during({ at: 'pre-step', ...request });
    if (this.inCanceledTurn) return CANCELED;
    return preStepAnswer(this.script.preStep?.(request) ?? { kind: 'default' }, request.batch);
  }

  private model(call: ModelCall): Answer {
    if (this.inCanceledTurn) return CANCELED;
    const wire = wireEntries(call);
    this.sent.push(structuredClone(wire));
    const newEntries = wire.map((e) => this.fromHistory(e));
    this.requests.push(this.assemble({ ...call, newEntries }, true));
    this.requestAt.push(this.earlierLog.length + this.core.log.length);
    this.during({ at: 'model', turn: call.turn, step: call.step });
    const plan = this.script.model?.({ turn: call.turn, step: call.step, request: call.requestIndex }) ?? {
      text: `answer ${call.turn}.${call.step}`,
    };
    if (this.inCanceledTurn) {
      // The scripted model shows its text at once: a cancel leaves it as an interrupted answer (rule 29).
      if (!plan.text) return CANCELED;
      return { kind: 'ok', result: { text: plan.text, toolCalls: [], finish: 'stop', interrupted: true } };
    }
    if (plan.fail !== undefined)
      return { kind: 'failed', error: { message: plan.fail, code: 'MODEL_FAILED' } };
    const { result, plans } = modelAnswer(plan, call);
    for (const [callId, p] of plans) this.plans.set(callId, p);
    this.history.modelCompleted(call.requestIndex, structuredClone(result));
    return { kind: 'ok', result };
  }

  /**
   * What the model activity does with a request (src/activities/transcriptCache.ts), with a cache built only from
   * the requests' new entries — what the runs' histories hold: every entry must reach some request, through
   * continue-as-new too, so the prefix is always exactly what earlier requests sent. A compaction's projection is
   * assembled the same way and leaves the cache as it is (`keep` false).
   */
  private assemble(call: RequestShape & { generation?: number }, keep: boolean): TranscriptEntry[] {
    if ((call.generation ?? 0) !== this.generation) {
      if (!keep || call.prefix.count !== 0)
        throw new Error(`a new generation's request has prefix ${call.prefix.count}`);
      this.generation = call.generation ?? 0;
      this.seen = hashed([]);
    }
    if (call.prefix.count !== this.seen.entries.length)
      throw new Error(`prefix ${call.prefix.count} ≠ cache ${this.seen.entries.length}`);
    const whole = assembled(this.seen, call);
    if (!whole.ok) throw new Error(`${keep ? 'request' : 'compaction'} ${whole.mismatch} hash mismatch`);
    if (keep) this.seen = whole.transcript;
    return structuredClone(whole.transcript.entries);
  }

  /** A compaction as the compaction activity does it (src/activities/compaction.ts), with a scripted summary. */
  private compact(call: CompactionCall): Answer {
    if (this.inCanceledTurn) return CANCELED;
    const projection = this.assemble(call, false);
    const { cut, pinned } = call;
    this.compactions.push(pinned === undefined ? { projection, cut } : { projection, cut, pinned });
    const planned = this.script.compact?.({ turn: call.turn, step: call.step, cut: call.cut });
    if (typeof planned === 'object' && 'fail' in planned)
      return { kind: 'failed', error: { message: planned.fail, code: 'COMPACTION_FAILED' } };
    const summary =
      (typeof planned === 'object' ? planned.summary : planned) ??
      `summary of ${splitAtCut(projection, call).summarised.length} messages`;
    const usage = typeof planned === 'object' ? { usage: planned.usage } : {};
    return { kind: 'ok', result: { ...compactionOutcome(call, projection, summary, 'scripted'), ...usage } };
  }

  /** An entry as the activity input carries it, a reference rebuilt from what this run's history holds. */
  private fromHistory(e: WireEntry): TranscriptEntry {
    if (!isEntryRef(e)) return e;
    const entry = this.history.resolve(e.ref);
    if (!entry) throw new Error(`the run's history holds no entry for reference ${JSON.stringify(e.ref)}`);
    return structuredClone(entry);
  }

  private settle(): Answer {
    if (this.approvalWoken) {
      this.approvalWoken = false;
      return { kind: 'approval' };
    }
    const index = this.script.settle?.(this.running) ?? this.running[0]!;
    const start = this.started.get(index)!;
    this.running = this.running.filter((i) => i !== index);
    this.started.delete(index);
    const { callId, name } = start.call;
    this.during({ at: 'tool', turn: start.turn, step: start.step, index, callId });
    const plan = this.plans.get(callId) ?? { name };
    const own = this.inCanceledTurn && plan.onCancel === 'abort' ? undefined : toolResult(plan, callId);
    if (own) this.history.toolCompleted(callId, name, structuredClone(own));
    const result =
      own ?? failedResult({ code: 'ABORTED', message: 'the tool call was cancelled while it ran' });
    // Post-tool hooks run on every settled call, cancelled turn or not (rule 29).
    const chain = postToolChain(start.postToolHooks, result);
    const pass = { kind: 'ok' as const, result: { kind: 'continue' as const, additionalContexts: [] } };
    let step = chain.next();
    while (!step.done)
      step = chain.next(this.script.postTool?.(step.value.hook, start.call, step.value.result) ?? pass);
    return {
      kind: 'settled',
      index,
      result: step.value,
      held: own !== undefined && step.value.content === own.content,
    };
  }
}
