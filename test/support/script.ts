/**
 * The script language of the in-memory interpreter (./interpreter.ts): messages as tests write them, arrivals, the
 * points where the workflow would await, the scripted answers of pre-steps, models, tools, hooks, compactions and
 * approval checks, and what each plan answers.
 */
import {
  failedResult,
  type Answer,
  type ApprovalReceipt,
  type BudgetReceipt,
  type CarriedSession,
  type DeliveryReceipt,
  type Lane,
  type MessageSource,
  type PostToolHookOutcome,
  type SessionConfig,
  type ToolDescriptor,
  type ToolExecResult,
  type ToolStart,
  type UserMessage,
} from '../../src/domain/index';
import type { ModelStepResult } from '../../src/domain/effects';
import type { Usage } from '../../src/domain/events';

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

/** What a pre-step plan answers for its claimed batch. */
export function preStepAnswer(plan: PreStepPlan, batch: readonly UserMessage[]): Answer {
  if (plan.kind === 'throw') {
    const error = { message: plan.message ?? 'pre-step failed', code: plan.code ?? 'PRE_STEP_FAILED' };
    return { kind: 'failed', error };
  }
  if (plan.kind === 'reject')
    return { kind: 'decided', decision: { kind: 'reject', ...(plan.reason ? { reason: plan.reason } : {}) } };
  const extra = plan.kind === 'extra' ? plan.messages : [];
  const messages = plan.kind === 'enter' ? [...plan.messages] : [...batch, ...extra];
  return { kind: 'decided', decision: { kind: 'enter', messages } };
}

/** A model plan's answer at a step, and the plan of each tool call it makes by call id. */
export function modelAnswer(
  plan: ModelPlan,
  at: { turn: number; step: number },
): { result: ModelStepResult; plans: Map<string, ToolCallPlan> } {
  const plans = new Map<string, ToolCallPlan>();
  const calls = (plan.toolCalls ?? []).map((p, i) => {
    const callId = p.callId ?? `call-${at.turn}.${at.step}.${i + 1}`;
    plans.set(callId, p);
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
  return { result, plans };
}

/** What a tool call's activity returns when it runs to its end: a failure is data (src/activities/tools.ts). */
export function toolResult(plan: ToolCallPlan, callId: string): ToolExecResult {
  if (plan.error !== undefined) return failedResult({ code: 'TOOL_FAILED', message: plan.error });
  const additionalContexts = (plan.contexts ?? []).map((c, k) =>
    typeof c === 'string'
      ? { id: `${callId}:ctx${k + 1}`, content: [{ type: 'text' as const, text: c }] }
      : { id: c.id, content: [...c.content], source: c.source },
  );
  const text = plan.result ?? `result of ${plan.name}`;
  return { content: [{ type: 'text', text }], additionalContexts, concludesTurn: plan.concludes === true };
}

/** The worker's answer to `resolve-hooks` (a name starting `post` is a post-tool hook) or `resolve-tools`. */
export function resolvedNames(
  effect: 'resolve-hooks' | 'resolve-tools',
  config: SessionConfig,
  tools: readonly ToolDescriptor[] = [],
): Answer {
  if (effect === 'resolve-tools') {
    const tool = (name: string) => tools.find((t) => t.name === name) ?? { name, exclusive: false };
    return { kind: 'ok', value: (config.tools ?? []).map(tool) };
  }
  const kind = (name: string) => (name.startsWith('post') ? ('post-tool' as const) : ('pre-step' as const));
  return { kind: 'ok', value: (config.hooks ?? []).map((name) => ({ name, kind: kind(name) })) };
}
