/**
 * A pure, synchronous driver of the session loop for unit and property tests: it runs SessionCore and the decisions
 * of loop.ts the way the agentSession workflow does, with scripted pre-step decisions and model answers instead of
 * listeners and activities. Deliveries can be slipped in at each point where the workflow would await (pre-step,
 * the model call, between tool results), which is how tests put messages "during" a step.
 *
 * The loop, per turn: openTurn → claim('turn') → [pre-step → afterPreStep → startStep → model → assistant →
 * tool/call… → tool/result + contexts… → endStep → afterStep → claim('step')]… → endTurn.
 */
import {
  afterPreStep,
  afterStep,
  applySplice,
  EMPTY_INBOX,
  removedBy,
  SessionCore,
  spliceShape,
  type AcceptResult,
  type Inbox,
  type SessionEvent,
  type Lane,
  type MessageSource,
  type PreStepDecision,
  type SessionSnapshot,
  type ToolCallInfo,
  type TranscriptEntry,
  type TranscriptState,
  type UserMessage,
} from '../../src/domain/index';

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

/** Where the workflow would await; deliveries scripted for a point are accepted there. */
export type AwaitPoint =
  | { at: 'pre-step'; turn: number; step: number; batch: readonly UserMessage[] }
  | { at: 'model'; turn: number; step: number }
  /** While tool `index` runs, before its result commits (index 0: during the batch; later: between results). */
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
  args?: Record<string, unknown>;
  result?: string;
  /** additionalContexts: a string becomes a message with a `{kind:'tool', callId}` source. */
  contexts?: readonly (string | UserMessage)[];
  /** The tool concludes the turn (rule 21). */
  concludes?: boolean;
}

export interface ModelPlan {
  text?: string;
  toolCalls?: readonly ToolCallPlan[];
  maxTokens?: boolean;
  /** The model activity fails after its retries (rule 26). */
  fail?: string;
}

export interface Script {
  preStep?(point: { turn: number; step: number; batch: readonly UserMessage[] }): PreStepPlan;
  model?(point: { turn: number; step: number; request: number }): ModelPlan;
  during?(point: AwaitPoint): readonly Delivery[];
}

export interface SimulationOptions {
  /** Continue from a snapshot (continue-as-new) and its model-visible history. */
  snapshot?: SessionSnapshot;
  transcript?: TranscriptState;
}

export class Simulation {
  readonly core: SessionCore;
  /** The model-visible messages of every model request, in order ("model-visible ⟺ logged"). */
  readonly requests: TranscriptEntry[][] = [];
  private clock = 0;

  constructor(
    private readonly script: Script = {},
    options: SimulationOptions = {},
  ) {
    this.core = new SessionCore(
      { now: () => this.clock++ },
      options.snapshot,
      options.transcript && (JSON.parse(JSON.stringify(options.transcript)) as TranscriptState),
    );
  }

  /** Accepts deliveries in one workflow task (rule 9), then runs turns while there is waking work (rule 8). */
  deliver(...deliveries: Delivery[]): AcceptResult[] {
    const results = deliveries.map((d) => this.core.accept(d.lane, d.message));
    this.runTurns();
    return results;
  }

  followup(...messages: UserMessage[]): AcceptResult[] {
    return this.deliver(...messages.map((message) => ({ lane: 'followup' as const, message })));
  }
  steer(...messages: UserMessage[]): AcceptResult[] {
    return this.deliver(...messages.map((message) => ({ lane: 'steer' as const, message })));
  }
  inject(...messages: UserMessage[]): AcceptResult[] {
    return this.deliver(...messages.map((message) => ({ lane: 'inject' as const, message })));
  }

  private during(point: AwaitPoint): void {
    for (const d of this.script.during?.(point) ?? []) this.core.accept(d.lane, d.message);
  }

  private runTurns(): void {
    while (this.core.hasWakingWork()) this.runTurn();
  }

  private runTurn(): void {
    const core = this.core;
    const turn = core.openTurn();
    let boundary: 'turn' | 'step' = 'turn';
    let toolsOweRequest = false;
    for (;;) {
      const batch = core.claim(boundary);
      const step = core.step + 1;
      this.during({ at: 'pre-step', turn, step, batch });
      const plan = this.script.preStep?.({ turn, step, batch }) ?? { kind: 'default' };
      if (plan.kind === 'throw') {
        core.endTurn({
          kind: 'error',
          error: { message: plan.message ?? 'pre-step failed', code: plan.code ?? 'PRE_STEP_FAILED' },
        });
        return;
      }
      const decision: PreStepDecision =
        plan.kind === 'reject'
          ? plan.reason === undefined
            ? { kind: 'reject' }
            : { kind: 'reject', reason: plan.reason }
          : { kind: 'enter', messages: [...preStepMessages(plan, batch)] };
      const next = afterPreStep(decision, toolsOweRequest);
      if (next.kind === 'end') {
        core.endTurn(next.reason);
        return;
      }
      core.startStep(next.messages);
      const request = core.nextModelRequest();
      this.requests.push(core.transcript.entries.slice());
      this.during({ at: 'model', turn, step });
      const answer = this.script.model?.({ turn, step, request }) ?? { text: `answer ${turn}.${step}` };
      if (answer.fail !== undefined) {
        core.endTurn({ kind: 'error', error: { message: answer.fail, code: 'MODEL_FAILED' } });
        return;
      }
      const calls = (answer.toolCalls ?? []).map((plan, i) => ({
        plan,
        callId: plan.callId ?? `call-${turn}.${step}.${i + 1}`,
      }));
      const toolCalls: ToolCallInfo[] = calls.map(({ plan, callId }) => ({
        callId,
        name: plan.name,
        arguments: plan.args ?? {},
      }));
      core.assistant({
        id: `assistant-${turn}.${step}`,
        role: 'assistant',
        content: answer.text === undefined ? [] : [{ type: 'text', text: answer.text }],
        ...(toolCalls.length ? { toolCalls } : {}),
      });
      for (const call of toolCalls) core.toolCall(call);
      calls.forEach(({ plan, callId }, index) => {
        this.during({ at: 'tool', turn, step, index, callId });
        core.toolResult(callId, [{ type: 'text', text: plan.result ?? `result of ${plan.name}` }]);
        (plan.contexts ?? []).forEach((c, k) =>
          core.insertContext(
            typeof c === 'string' ? msg(`${callId}:ctx${k + 1}`, c, { kind: 'tool', callId }) : c,
          ),
        );
      });
      core.endStep();
      toolsOweRequest = calls.length > 0;
      const after = afterStep({
        toolsOweRequest,
        concluded: calls.some((c) => c.plan.concludes),
        maxTokens: answer.maxTokens ?? false,
        nextStepPending: core.inbox.nextStep.length > 0,
      });
      if (after.kind === 'end') {
        core.endTurn(after.reason);
        return;
      }
      boundary = 'step';
    }
  }
}

function preStepMessages(
  plan: Exclude<PreStepPlan, { kind: 'throw' | 'reject' }>,
  batch: readonly UserMessage[],
) {
  switch (plan.kind) {
    case 'default':
      return batch;
    case 'enter':
      return plan.messages;
    case 'extra':
      return [...batch, ...plan.messages];
  }
}

/** A script from queues: each pre-step and model call takes the next plan (default when the queue is empty). */
export function queuedScript(queues: {
  preSteps?: PreStepPlan[];
  models?: ModelPlan[];
  during?: (point: AwaitPoint) => readonly Delivery[];
}): Script {
  const preSteps = [...(queues.preSteps ?? [])];
  const models = [...(queues.models ?? [])];
  return {
    preStep: () => preSteps.shift() ?? { kind: 'default' },
    model: ({ turn, step }) => models.shift() ?? { text: `answer ${turn}.${step}` },
    ...(queues.during ? { during: queues.during } : {}),
  };
}

/**
 * A log as short readable lines, for exact assertions: `insert next-step A`, `claim next-turn P`, `cancel next-step A`,
 * `turn/start 1`, `step/start 1.1`, `user/message A`, `assistant/message 1.1 [c1,c2]`, `tool/call c1`,
 * `tool/result c1`, `step/end 1.1`, `turn/end 1 completed`, `session/disposed`.
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
        return `assistant/message ${e.data.turn}.${e.data.step}${calls ? ` [${calls.join(',')}]` : ''}`;
      }
      case 'tool/call':
      case 'tool/result':
        return `${e.type} ${e.data.callId}`;
      case 'session/disposed':
        return e.type;
    }
  });
}

/** Ids of the user entries of a model request. */
export function userIds(request: readonly TranscriptEntry[]): string[] {
  return request.flatMap((entry) => (entry.role === 'user' ? [entry.id] : []));
}
