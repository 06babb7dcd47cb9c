/**
 * The second interpreter of the session driver (src/domain/driver.ts): in memory, synchronous, with scripted
 * pre-step decisions, model answers, tool results and post-tool hooks instead of listeners and activities. It runs
 * the same loop the workflow runs; only the effects are performed differently. Arrivals (deliveries, cancels,
 * disposes, any signal payload) can be slipped in at every point where the workflow would await — pre-step, the
 * model call, each tool settlement — which is how tests put messages "during" a step. Tool calls settle in the
 * order the script chooses, and a cancel reaches whatever the turn awaits, as a cancellation scope would.
 *
 * Model requests are assembled the way the model activity assembles them (prefix + new entries, hash-checked), so
 * `requests` holds exactly what a model would have been sent. Entries a request sends by reference are rebuilt from
 * a record of what the run's Temporal history would hold — the delivery payloads, the tool activities' results and
 * the model activities' answers of this run, never the driver's state — so every test also proves that a reference
 * names content history holds in exactly that form (src/domain/entryRefs.ts).
 */
import {
  applySplice,
  EMPTY_INBOX,
  removedBy,
  SessionDriver,
  SessionRefusal,
  spliceShape,
  type Answer,
  type ApprovalReceipt,
  type BudgetReceipt,
  type DeliveryReceipt,
  type CarriedSession,
  type DriverGenerator,
  type Effect,
  type Failed,
  type Inbox,
  type Lane,
  type MessageSource,
  type ModelCall,
  type PostToolHookOutcome,
  type SessionConfig,
  type SessionEvent,
  type ToolDescriptor,
  type ToolExecResult,
  type ToolStart,
  type TranscriptEntry,
  type UserMessage,
  postToolChain,
  failedResult,
} from '../../src/domain/index';
import {
  checked,
  entryFromDelivery,
  entryFromModelResult,
  entryFromToolResult,
  isEntryRef,
  wireEntries,
  type RefTarget,
  type WireEntry,
} from '../../src/domain/entryRefs';
import type { CompactionCall, ModelStepResult } from '../../src/domain/effects';
import type { Usage } from '../../src/domain/events';
import { estimateTokens, splitAtCut, summaryEntry } from '../../src/domain/compaction';
import { extendHash } from '../../src/domain/transcript';

/** A message as tests write it: frozen like the workflow's. */
export function msg(id: string, text: string, source: MessageSource = { kind: 'user' }): UserMessage {
  return Object.freeze({ id, role: 'user' as const, content: [{ type: 'text' as const, text }], source });
}
/** Direct input (`user(x)` in the scenarios). */
export const user = (id: string, text = id): UserMessage => msg(id, text);
/** Context from a plugin (`ctx(x)` in the scenarios). */
export const ctx = (id: string, text = id, plugin = 'test'): UserMessage =>
  msg(id, text, { kind: 'plugin', plugin });

export interface Delivery {
  lane: Lane;
  message: UserMessage;
}
/** Any signal, by name, with any payload (bad payloads included: they must change nothing but `refused`). */
export interface SignalArrival {
  signal: string;
  payload?: unknown;
}
/** A decision on a call waiting for approval (the `approve` update). */
export interface ApproveArrival {
  approve: unknown;
}
/** A decision on a session waiting at its budget (the `budget` update). */
export interface BudgetArrival {
  budget: unknown;
}
export type Arrival = Delivery | SignalArrival | ApproveArrival | BudgetArrival;

/** What one arrival got: a receipt for a delivery, or the refusal (the `deliver` update's rejection). */
export interface ArrivalResult {
  accepted: boolean;
  receipt?: DeliveryReceipt | ApprovalReceipt | BudgetReceipt;
  refused?: string;
}

export const cancel = (payload: unknown = {}): SignalArrival => ({ signal: 'cancel', payload });
export const dispose = (payload: unknown = {}): SignalArrival => ({ signal: 'dispose', payload });

/** Where the workflow would await; arrivals scripted for a point are accepted there. */
export type AwaitPoint =
  | { at: 'pre-step'; turn: number; step: number; batch: readonly UserMessage[] }
  | { at: 'model'; turn: number; step: number }
  /** While call `index` runs, right before it settles. */
  | { at: 'tool'; turn: number; step: number; index: number; callId: string };

/** What a pre-step does with its claimed batch. `step` is the number the step would get. */
export type PreStepPlan =
  | { kind: 'default' }
  | { kind: 'reject'; reason?: string }
  | { kind: 'throw'; message?: string; code?: string }
  | { kind: 'enter'; messages: readonly UserMessage[] }
  /** enter the claimed batch plus these (a listener that returns [...next(), ...extra]). */
  | { kind: 'extra'; messages: readonly UserMessage[] };

export interface ToolCallPlan {
  name: string;
  callId?: string;
  args?: Record<string, unknown> | null;
  result?: string;
  /** The tool reports an error (a failed tool is data, not an exception). */
  error?: string;
  /** additionalContexts: a string becomes a message with a `{kind:'tool', callId}` source. */
  contexts?: readonly (string | UserMessage)[];
  /** The tool concludes the turn (rule 21). */
  concludes?: boolean;
  /** What the call does when its turn is cancelled while it runs: finish anyway (default) or stop (ABORTED). */
  onCancel?: 'finish' | 'abort';
}

export interface ModelPlan {
  text?: string;
  toolCalls?: readonly ToolCallPlan[];
  maxTokens?: boolean;
  /** The model activity fails after its retries (rule 26). */
  fail?: string;
  /** Token usage the answer reports. */
  usage?: { inputTokens?: number; outputTokens?: number; costMicros?: number };
}

export interface Script {
  preStep?(point: { turn: number; step: number; batch: readonly UserMessage[] }): PreStepPlan;
  model?(point: { turn: number; step: number; request: number }): ModelPlan;
  during?(point: AwaitPoint): readonly Arrival[];
  /** Which of the running calls settles next (their indexes, in call order); default: the first. */
  settle?(running: readonly number[]): number;
  /** A post-tool hook's answer (default: continue with nothing added). */
  postTool?(hook: string, call: ToolStart['call'], result: ToolExecResult): PostToolHookOutcome;
  /** Tool descriptors the worker has (default: every name the config lists, none exclusive). */
  tools?: readonly ToolDescriptor[];
  /**
   * A compaction's answer (default: a summary naming how many messages it replaced), with the usage its provider
   * reports; `{fail}` fails it.
   */
  compact?(point: {
    turn: number;
    step: number;
    cut: number;
  }): string | { summary: string; usage: Usage } | { fail: string };
  /** The worker's answer for calls of `approval: 'check'` tools: the callIds that need approval (default none). */
  checkApprovals?(calls: readonly { callId: string; name: string }[]): readonly string[] | 'fail';
}

export interface SessionOptions {
  config?: SessionConfig;
  /** Continue from a carried state (continue-as-new). */
  carried?: CarriedSession;
}

/** Pre-step plan kinds as failure codes of the pre-step effect. */
const PRE_STEP_FAILED = 'PRE_STEP_FAILED';

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
  private pendingEffect: Effect | undefined;
  private clock = 0;
  private ids = 0;
  private canceledTurn = 0;
  private readonly plans = new Map<string, ToolCallPlan>();
  private running: number[] = [];
  /** The model activity's cache: the entries the last request saw (prefix of the whole transcript). */
  private seen: TranscriptEntry[] = [];
  /** The projection generation `seen` belongs to (a compaction starts the next one from position 0). */
  private generation = 0;
  /** Model-visible entries of earlier runs (what a model activity reads from them on a cache miss). */
  private readonly config: SessionConfig;
  private suggestContinueAsNew = false;
  /** What the current run's Temporal history would hold that references may point at (emptied at continue-as-new). */
  private history = emptyRunHistory();

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
    const results = deliveries.map((d) => this.arrive(d));
    this.resume();
    return results;
  }

  followup(...messages: UserMessage[]) {
    return this.deliver(...messages.map((message) => ({ lane: 'followup' as const, message })));
  }
  steer(...messages: UserMessage[]) {
    return this.deliver(...messages.map((message) => ({ lane: 'steer' as const, message })));
  }
  inject(...messages: UserMessage[]) {
    return this.deliver(...messages.map((message) => ({ lane: 'inject' as const, message })));
  }
  /** Any signal while idle (cancel, dispose, bad payloads), then the loop runs. */
  signal(...arrivals: SignalArrival[]): void {
    for (const a of arrivals) this.arrive(a);
    this.resume();
  }

  /** An `approve` update: its receipt, or the validator's refusal; then the loop runs. */
  approve(input: unknown): ArrivalResult {
    const result = this.arrive({ approve: input });
    this.resume();
    return result;
  }

  /** A `budget` update: its receipt, or the validator's refusal; then the loop runs. */
  budget(input: unknown): ArrivalResult {
    const result = this.arrive({ budget: input });
    this.resume();
    return result;
  }

  /** Whether the loop waits at its budget for a decision. */
  get waitingForBudget(): boolean {
    return this.pendingEffect?.type === 'await-budget';
  }

  /** The approval timer of a call fires (durable time passing); the session must have started it. */
  timeout(callId: string): void {
    if (!this.approvalTimers.has(callId)) throw new Error(`no approval timer for ${callId}`);
    this.approvalTimers.delete(callId);
    this.driver.approvalTimedOut(callId);
    this.resume();
  }

  /** Whether the loop waits for an approval decision (nothing else can move it). */
  get waitingForApproval(): boolean {
    return this.pendingEffect?.type === 'tool-settled';
  }

  /** Continues as new now (a quiet point): the next run starts from the carried state, as the workflow's does. */
  continueAsNew(): void {
    if (!this.driver.canContinueAsNew()) throw new Error('not a quiet point');
    this.restart();
  }

  /** Makes the driver continue as new at its next quiet point (the server's suggestion). */
  suggestContinueAsNewAtNextQuietPoint(): void {
    this.suggestContinueAsNew = true;
  }

  private newDriver(carried?: CarriedSession): SessionDriver {
    return new SessionDriver(
      this.config,
      {
        now: () => this.clock++,
        newId: () => `id-${++this.ids}`,
        cancelTurn: () => {
          this.canceledTurn = this.driver.core.turn;
          this.approvalWoken = true;
        },
        onApprovalResolved: () => {
          this.approvalWoken = true;
        },
        continueAsNewSuggested: () => this.suggestContinueAsNew,
      },
      carried,
    );
  }

  private restart(): void {
    const carried = this.driver.carry(`run-${this.continuedAsNew}`);
    this.earlierLog.push(...this.core.log);
    this.continuedAsNew += 1;
    this.history = emptyRunHistory();
    this.suggestContinueAsNew = false;
    this.driver = this.newDriver(JSON.parse(JSON.stringify(carried)) as CarriedSession);
    this.gen = this.driver.run();
    this.pendingEffect = undefined;
    this.pump(this.gen.next());
  }

  private arrive(a: Arrival): ArrivalResult {
    this.arrived.push(a);
    if ('budget' in a) {
      try {
        return { accepted: true, receipt: this.driver.budget(a.budget) };
      } catch (err) {
        if (err instanceof SessionRefusal) return { accepted: false, refused: err.message };
        throw err;
      }
    }
    if ('approve' in a) {
      try {
        return { accepted: true, receipt: this.driver.approve(a.approve) };
      } catch (err) {
        if (err instanceof SessionRefusal) return { accepted: false, refused: err.message };
        throw err;
      }
    }
    if ('signal' in a) {
      const refused = this.core.stateView().refused;
      this.recordDelivery(a.signal, a.payload);
      this.driver.signal(a.signal, a.payload);
      if (a.signal === 'cancel' && this.core.stateView().refused === refused)
        this.cancelsAt.push(this.log.length);
      return { accepted: false };
    }
    const { id, content, source } = a.message;
    try {
      const payload = { lane: a.lane, message: { id, content: [...content], source } };
      this.recordDelivery('deliver', payload);
      const receipt = this.driver.deliver(payload);
      return { accepted: !receipt.duplicate, receipt };
    } catch (err) {
      if (err instanceof SessionRefusal) return { accepted: false, refused: err.message };
      throw err;
    }
  }

  /** A signal or `deliver` update as the run's history records it: its payload, found by its message's id. */
  private recordDelivery(name: string, payload: unknown): void {
    const id = (payload as { message?: { id?: unknown } } | undefined)?.message?.id;
    if (typeof id !== 'string') return;
    const list = this.history.deliveries.get(id) ?? [];
    list.push({ name, payload: structuredClone(payload) });
    this.history.deliveries.set(id, list);
  }

  private during(point: AwaitPoint): void {
    for (const a of this.script.during?.(point) ?? []) this.arrive(a);
  }

  private get inCanceledTurn(): boolean {
    return this.core.turnOpen && this.canceledTurn === this.core.turn;
  }

  /** Resumes a driver that waits for work, if it has work now. */
  private resume(): void {
    if (this.completed || !this.pendingEffect) return;
    if (this.pendingEffect.type === 'await-budget') {
      if (this.core.budgetPaused && !this.inCanceledTurn) return;
      this.pendingEffect = undefined;
      return this.pump(this.gen.next(undefined as unknown as Answer));
    }
    if (this.pendingEffect.type === 'tool-settled') {
      if (!this.approvalWoken) return;
      this.approvalWoken = false;
      this.pendingEffect = undefined;
      return this.pump(this.gen.next({ kind: 'approval' }));
    }
    if (!this.driver.hasWork()) return;
    this.pendingEffect = undefined;
    this.pump(this.gen.next(undefined as unknown as Answer));
  }

  private pump(next: IteratorResult<Effect, void>): void {
    while (!next.done) {
      const effect = next.value;
      if (effect.type === 'wait-for-work' && !this.driver.hasWork()) {
        this.pendingEffect = effect;
        return;
      }
      // Nothing runs and no decision came: the batch waits for one (an `approve`, a timeout, a cancel).
      if (effect.type === 'tool-settled' && !this.approvalWoken && this.running.length === 0) {
        this.pendingEffect = effect;
        return;
      }
      // At its budget, the turn waits for a `budget` decision or a cancel.
      if (effect.type === 'await-budget' && this.core.budgetPaused && !this.inCanceledTurn) {
        this.pendingEffect = effect;
        return;
      }
      if (effect.type === 'continue-as-new') {
        if (this.driver.canContinueAsNew()) return this.restart();
        next = this.gen.next(undefined as unknown as Answer);
        continue;
      }
      next = this.gen.next(this.perform(effect));
    }
    this.completed = true;
  }

  private perform(effect: Effect): Answer {
    switch (effect.type) {
      case 'wait-for-work':
      case 'continue-as-new':
      case 'start-tool':
        if (effect.type === 'start-tool') this.startTool(effect.start);
        return undefined as unknown as Answer;
      case 'resolve-hooks':
        return {
          kind: 'ok',
          value: (this.config.hooks ?? []).map((name) => ({
            name,
            kind: name.startsWith('post') ? ('post-tool' as const) : ('pre-step' as const),
          })),
        };
      case 'resolve-tools':
        return {
          kind: 'ok',
          value: (this.config.tools ?? []).map(
            (name) => this.script.tools?.find((t) => t.name === name) ?? { name, exclusive: false },
          ),
        };
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
        if (answer === 'fail')
          return { kind: 'failed', error: { message: 'predicate failed', code: 'TOOL_FAILED' } };
        return { kind: 'ok', value: [...answer] };
      }
      case 'await-approval':
        if (effect.approval.timeoutMs !== undefined)
          this.approvalTimers.set(effect.approval.callId, effect.approval.timeoutMs);
        return undefined as unknown as Answer;
      case 'await-budget':
        return undefined as unknown as Answer;
    }
  }

  private canceled(): Failed {
    return { kind: 'failed', error: { message: 'canceled', code: 'CANCELED' }, canceled: true };
  }

  private preStep(request: { turn: number; step: number; batch: readonly UserMessage[] }): Answer {
    if (this.inCanceledTurn) return this.canceled();
    this.during({ at: 'pre-step', ...request });
    if (this.inCanceledTurn) return this.canceled();
    const plan = this.script.preStep?.(request) ?? { kind: 'default' };
    switch (plan.kind) {
      case 'throw':
        return {
          kind: 'failed',
          error: { message: plan.message ?? 'pre-step failed', code: plan.code ?? PRE_STEP_FAILED },
        };
      case 'reject':
        return {
          kind: 'decided',
          decision: { kind: 'reject', ...(plan.reason ? { reason: plan.reason } : {}) },
        };
      case 'default':
        return { kind: 'decided', decision: { kind: 'enter', messages: [...request.batch] } };
      case 'enter':
        return { kind: 'decided', decision: { kind: 'enter', messages: [...plan.messages] } };
      case 'extra':
        return {
          kind: 'decided',
          decision: { kind: 'enter', messages: [...request.batch, ...plan.messages] },
        };
    }
  }

  private model(call: ModelCall): Answer {
    if (this.inCanceledTurn) return this.canceled();
    this.requests.push(this.assemble(call));
    this.requestAt.push(this.earlierLog.length + this.core.log.length);
    this.during({ at: 'model', turn: call.turn, step: call.step });
    const plan = this.script.model?.({ turn: call.turn, step: call.step, request: call.requestIndex }) ?? {
      text: `answer ${call.turn}.${call.step}`,
    };
    if (this.inCanceledTurn) {
      // The scripted model shows its text at once: a cancel leaves it as an interrupted answer (rule 29).
      if (plan.text)
        return { kind: 'ok', result: { text: plan.text, toolCalls: [], finish: 'stop', interrupted: true } };
      return this.canceled();
    }
    if (plan.fail !== undefined)
      return { kind: 'failed', error: { message: plan.fail, code: 'MODEL_FAILED' } };
    const calls = (plan.toolCalls ?? []).map((p, i) => {
      const callId = p.callId ?? `call-${call.turn}.${call.step}.${i + 1}`;
      this.plans.set(callId, p);
      return p.args === null
        ? { callId, name: p.name, arguments: null, rawArguments: '{not json' }
        : { callId, name: p.name, arguments: p.args ?? {} };
    });
    const result: ModelStepResult = {
      text: plan.text ?? '',
      toolCalls: calls,
      finish: plan.maxTokens ? 'max-tokens' : calls.length ? 'tool-calls' : 'stop',
      ...(plan.usage ? { usage: plan.usage } : {}),
    };
    this.history.models.set(call.requestIndex, structuredClone(result));
    return { kind: 'ok', result };
  }

  /**
   * What the model activity does with a request, with a cache built only from the requests' new entries — what
   * the runs' histories hold (src/activities/historyContext.ts): every entry must reach some request, through
   * continue-as-new too, so the prefix is always exactly what earlier requests sent. Check, append.
   */
  private assemble(call: ModelCall): TranscriptEntry[] {
    if ((call.generation ?? 0) !== this.generation) {
      if (call.prefix.count !== 0)
        throw new Error(`a new generation's first request has prefix ${call.prefix.count}`);
      this.generation = call.generation ?? 0;
      this.seen = [];
    }
    if (call.prefix.count !== this.seen.length)
      throw new Error(`prefix ${call.prefix.count} ≠ cache ${this.seen.length}`);
    if (hashOf(this.seen) !== call.prefix.hash) throw new Error('prefix hash mismatch');
    const wire = wireEntries(call);
    this.sent.push(structuredClone(wire));
    this.seen.push(...wire.map((e) => (isEntryRef(e) ? this.fromHistory(e.ref) : e)));
    if (hashOf(this.seen) !== call.hash) throw new Error('request hash mismatch');
    return structuredClone(this.seen);
  }

  /**
   * A compaction, as the compaction activity does it: the projection assembled like a request's (prefix checked,
   * the cache left as it is), a summary of the entries before the cut, and the estimated tokens before and after.
   */
  private compact(call: CompactionCall): Answer {
    if (this.inCanceledTurn) return this.canceled();
    if ((call.generation ?? 0) !== this.generation || call.prefix.count !== this.seen.length)
      throw new Error(`compaction prefix ${call.prefix.count} ≠ cache ${this.seen.length}`);
    if (hashOf(this.seen) !== call.prefix.hash) throw new Error('compaction prefix hash mismatch');
    const projection = [...structuredClone(this.seen), ...structuredClone(call.newEntries)];
    if (hashOf(projection) !== call.hash) throw new Error('compaction hash mismatch');
    this.compactions.push({
      projection,
      cut: call.cut,
      ...(call.pinned !== undefined ? { pinned: call.pinned } : {}),
    });
    const planned = this.script.compact?.({ turn: call.turn, step: call.step, cut: call.cut });
    if (typeof planned === 'object' && 'fail' in planned)
      return { kind: 'failed', error: { message: planned.fail, code: 'COMPACTION_FAILED' } };
    const { summarised, kept } = splitAtCut(projection, call);
    const summary =
      (typeof planned === 'object' ? planned.summary : planned) ?? `summary of ${summarised.length} messages`;
    const after = [summaryEntry(0, { throughSeq: call.throughSeq, summary, model: 'scripted' }), ...kept];
    const tokens = (entries: readonly TranscriptEntry[]) =>
      entries.reduce((n, e) => n + estimateTokens(e), 0);
    return {
      kind: 'ok',
      result: {
        summary,
        tokensBefore: tokens(projection),
        tokensAfter: tokens(after),
        model: 'scripted',
        ...(typeof planned === 'object' ? { usage: planned.usage } : {}),
      },
    };
  }

  /** The entry a reference names, rebuilt from what this run's history holds; throws if it holds no such entry. */
  private fromHistory(ref: RefTarget): TranscriptEntry {
    let entry: TranscriptEntry | undefined;
    if (ref.in === 'delivery') {
      for (const d of this.history.deliveries.get(ref.messageId) ?? [])
        entry ??= checked(ref, entryFromDelivery(d.name, d.payload));
    } else if (ref.in === 'tool') {
      const tool = this.history.tools.get(ref.callId);
      entry = tool && checked(ref, entryFromToolResult(ref.callId, tool.name, tool.result));
    } else {
      const result = this.history.models.get(ref.requestIndex);
      entry = result && checked(ref, entryFromModelResult(ref.id, result));
    }
    if (!entry) throw new Error(`the run's history holds no entry for reference ${JSON.stringify(ref)}`);
    return structuredClone(entry);
  }

  private readonly started = new Map<number, ToolStart>();

  private startTool(start: ToolStart): void {
    this.ran.push(start.call.callId);
    this.started.set(start.index, start);
    this.running.push(start.index);
    this.running.sort((a, b) => a - b);
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
    this.during({ at: 'tool', turn: start.turn, step: start.step, index, callId: start.call.callId });
    const plan = this.plans.get(start.call.callId) ?? { name: start.call.name };
    let result: ToolExecResult;
    let own: ToolExecResult | undefined;
    if (this.inCanceledTurn && plan.onCancel === 'abort') {
      result = failedResult({ code: 'ABORTED', message: 'the tool call was cancelled while it ran' });
    } else if (plan.error !== undefined) {
      // A tool's failure is data its activity returns (src/activities/tools.ts): a completed activity.
      result = own = failedResult({ code: 'TOOL_FAILED', message: plan.error });
    } else {
      result = {
        content: [{ type: 'text', text: plan.result ?? `result of ${plan.name}` }],
        additionalContexts: (plan.contexts ?? []).map((c, k) =>
          typeof c === 'string'
            ? { id: `${start.call.callId}:ctx${k + 1}`, content: [{ type: 'text', text: c }] }
            : { id: c.id, content: [...c.content], source: c.source },
        ),
        concludesTurn: plan.concludes === true,
      };
      own = result;
    }
    if (own)
      this.history.tools.set(start.call.callId, { name: start.call.name, result: structuredClone(own) });
    // Post-tool hooks run on every settled call, cancelled turn or not (rule 29).
    const chain = postToolChain(start.postToolHooks, result);
    let step = chain.next();
    while (!step.done) {
      const out = this.script.postTool?.(step.value.hook, start.call, step.value.result) ?? {
        kind: 'ok' as const,
        result: { kind: 'continue' as const, additionalContexts: [] },
      };
      step = chain.next(out);
    }
    return {
      kind: 'settled',
      index,
      result: step.value,
      held: own !== undefined && step.value.content === own.content,
    };
  }
}

/** What one run's Temporal history holds that a reference may name. */
function emptyRunHistory() {
  return {
    deliveries: new Map<string, { name: string; payload: unknown }[]>(),
    tools: new Map<string, { name: string; result: ToolExecResult }>(),
    models: new Map<number, ModelStepResult>(),
  };
}

function hashOf(entries: readonly TranscriptEntry[]): string {
  let hash = '0';
  for (const e of entries) hash = extendHash(hash, e);
  return hash;
}

/** A script from queues: each pre-step and model call takes the next plan (default when the queue is empty). */
export function queuedScript(
  queues: {
    preSteps?: PreStepPlan[];
    models?: ModelPlan[];
    during?: (point: AwaitPoint) => readonly Arrival[];
  } & Omit<Script, 'preStep' | 'model' | 'during'>,
): Script {
  const { preSteps: p = [], models: m = [], during, ...rest } = queues;
  const preSteps = [...p];
  const models = [...m];
  return {
    ...rest,
    preStep: () => preSteps.shift() ?? { kind: 'default' },
    model: ({ turn, step }) => models.shift() ?? { text: `answer ${turn}.${step}` },
    ...(during ? { during } : {}),
  };
}

/**
 * A log as short readable lines, for exact assertions: `insert next-step A`, `claim next-turn P`, `cancel next-step A`,
 * `turn/start 1`, `step/start 1.1`, `user/message A`, `assistant/message 1.1 [c1,c2]`, `tool/call c1`,
 * `tool/result c1` (`tool/result c1 CODE` for an error), `approval? c1` (requested), `approval c1 deny by caller`,
 * `step/end 1.1`, `turn/end 1 completed`, `session/disposed`.
 */
export function outline(log: readonly SessionEvent[], initial: Inbox = EMPTY_INBOX): string[] {
  let inbox = initial;
  return log.map((e) => {
    switch (e.type) {
      case 'agent/inbox/spliced': {
        const ids = (e.data.inserted.length ? e.data.inserted : removedBy(inbox, e.data))
          .map((m) => m.id)
          .join(',');
        inbox = applySplice(inbox, e.data);
        return `${spliceShape(e.data)} ${e.data.target} ${ids}`;
      }
      case 'turn/start':
        return `turn/start ${e.data.turn}`;
      case 'turn/end':
        return `turn/end ${e.data.turn} ${e.data.reason.kind}`;
      case 'step/start':
      case 'step/end':
        return `${e.type} ${e.data.turn}.${e.data.step}`;
      case 'user/message':
        return `user/message ${e.data.message.id}`;
      case 'assistant/message': {
        const calls = e.data.message.toolCalls?.map((c) => c.callId);
        return `assistant/message ${e.data.turn}.${e.data.step}${calls ? ` [${calls.join(',')}]` : ''}${e.data.interrupted ? ' interrupted' : ''}`;
      }
      case 'tool/call':
        return `tool/call ${e.data.callId}`;
      case 'tool/result':
        return `tool/result ${e.data.callId}${e.data.error ? ` ${e.data.error.code}` : ''}`;
      case 'tool/approval-requested':
        return `approval? ${e.data.callId}`;
      case 'tool/approval-resolved':
        return `approval ${e.data.callId} ${e.data.decision} by ${e.data.by}`;
      case 'budget/exceeded':
        return `budget/exceeded ${e.data.turn}.${e.data.step} ${e.data.over.join(',')}${e.data.waits ? '' : ' stop'}`;
      case 'budget/resolved':
        return `budget/resolved ${e.data.turn}.${e.data.step} ${e.data.decision} by ${e.data.by}`;
      case 'session/forked':
        return `session/forked ${e.data.from}@${e.data.throughSeq} ${e.data.messages.length}`;
      case 'compaction/summary':
        return `compaction/summary ${e.data.turn}.${e.data.step} through ${e.data.throughSeq}`;
      case 'subsession/started':
        return `subsession/started ${e.data.callId} ${e.data.session}`;
      case 'subsession/ended':
        return `subsession/ended ${e.data.callId} ${e.data.reason.kind}`;
      case 'session/disposed':
        return e.type;
    }
  });
}

/** Ids of the user entries of a model request. */
export function userIds(request: readonly TranscriptEntry[]): string[] {
  return request.flatMap((entry) => (entry.role === 'user' ? [entry.id] : []));
}
