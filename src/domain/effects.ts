/**
 * What the session driver (./driver.ts) asks of the world, and what the world answers. The driver is a generator
 * that yields one Effect at a time and resumes with its Answer; an interpreter performs the effect. The workflow
 * interprets effects as activities, conditions and cancellation scopes (src/workflows); the tests interpret them
 * in memory with scripted outcomes and random arrival moments. Both run the same driver. Types only, and pure.
 */
import type { BudgetUsed } from './budget';
import type { RefTarget } from './refTarget';
import type { ToolCallInfo, TurnEndReason } from './events';
import type { UserMessage } from './messages';
import type { TranscriptEntry } from './entry';
import type {
  CompactionResult,
  ContextOutput,
  Failed,
  ModelStepResult,
  Resolved,
  ToolExecResult,
} from './results';
import type { ModelSpec, SessionConfig } from './wire';

export type {
  CompactionResult,
  ContextOutput,
  Failed,
  ModelStepResult,
  Resolved,
  ToolExecResult,
} from './results';

/** A worker tool as the session may use it (resolved by name on the worker). */
export interface ToolDescriptor {
  name: string;
  exclusive: boolean;
  /**
   * The worker requires a person's decision before a call runs: always, or when its predicate over the call's
   * arguments says so (`check`, asked on the worker through the `check-approvals` effect).
   */
  approval?: 'always' | 'check';
  /** `delegate`: a call starts a sub-session (a child workflow) instead of running an activity. */
  kind?: 'delegate';
}

/** A call whose need for approval the worker decides (its tool's predicate). */
export interface ApprovalCheck {
  turn: number;
  step: number;
  calls: { callId: string; name: string; arguments: Record<string, unknown> }[];
}

export type HookKind = 'pre-step' | 'post-tool';
/** A worker hook as the session may use it (resolved by name on the worker). */
export interface HookDescriptor {
  name: string;
  kind: HookKind;
}

/** A pre-step decision (closed union, rule 13). */
export type PreStepDecision =
  { kind: 'enter'; messages: UserMessage[] } | { kind: 'reject'; reason?: string };

/** What a pre-step waterfall is given. */
export interface PreStepRequest {
  turn: number;
  /** Number of the step this pre-step would open. */
  step: number;
  /** The claimed batch, in claim order (next-step items, then the next-turn item at a turn boundary). */
  batch: readonly UserMessage[];
  /** The session's pre-step hooks, in the session's order (the interpreter adds one listener per hook). */
  hooks: readonly string[];
}

/** One model request as the driver schedules it; the interpreter adds the run's identity. */
export interface ModelCall {
  turn: number;
  step: number;
  /** 0-based index of this request in the whole session. */
  requestIndex: number;
  /** The session's model for this request; absent when it names none (the worker's default answers). */
  model?: ModelSpec;
  /** A scripted model's request carries only its own step; this is that step's index in the script. */
  stepsFrom?: number;
  system?: string;
  /** Tools the model may call (names registered on the worker). */
  tools: string[];
  /** Count and hash of the entries the previous model request saw. */
  prefix: { count: number; hash: string };
  /** Entries added since the previous model request, oldest first (history grows with new content only). */
  newEntries: TranscriptEntry[];
  /**
   * For each of `newEntries`, where the run's history holds it (it is then sent by reference), or null (sent
   * inline). See ./entryRefs.ts.
   */
  refs: (RefTarget | null)[];
  /** Hash of prefix + newEntries. */
  hash: string;
  /** The projection's compactions so far (./compaction.ts); absent before the first. Positions count from it. */
  generation?: number;
}

/**
 * A compaction request (./compaction.ts): the whole projection, sent as a model request sends it (prefix, new
 * entries inline, hash, generation), and where to cut it. Entries before `cut` are summarised.
 */
export interface CompactionCall extends Pick<
  ModelCall,
  'turn' | 'step' | 'prefix' | 'newEntries' | 'hash' | 'generation'
> {
  /** The compactor: `context.model`, else the session's model (a scripted one without its steps). */
  model?: ModelSpec;
  cut: number;
  /** The latest direct message's position when it comes before the cut: kept verbatim, not summarised. */
  pinned?: number;
  /** The seq of the last event summarised (the entry at `cut` was logged after it). */
  throughSeq: number;
}

/** A post-tool hook's decision: continue (adding contexts) or block (the result becomes `feedback`). */
export type PostToolHookResult =
  | { kind: 'continue'; additionalContexts: ContextOutput[] }
  | { kind: 'block'; feedback: string; additionalContexts: ContextOutput[] };

/** A delegate call the session will perform: the child to start and the followup that carries the task. */
export interface DelegateStart {
  session: string;
  config: SessionConfig;
  message: { id: string; content: string };
}

/** One tool call the driver starts; it settles later (answered through `tool-settled`). */
export interface ToolStart {
  turn: number;
  step: number;
  /** Position of the call in the assistant message (results commit in this order, rule 18). */
  index: number;
  call: ToolCallInfo & { arguments: Record<string, unknown> };
  /** The session's post-tool hooks, in order; they see the result before it commits (rule 19). */
  postToolHooks: readonly string[];
  /** A delegate call: the sub-session to start instead of a tool activity (./subsession.ts). */
  delegate?: DelegateStart;
}

/** Everything the driver can ask for, with the answer each one gets. */
export type Effect =
  /** Wait until the driver has waking work or a dispose (`driver.hasWork()`); answer: undefined. */
  | { type: 'wait-for-work' }
  /** The session's hooks resolved on the worker (once per run; later asks are answered from memory). */
  | { type: 'resolve-hooks' }
  /** The session's tools resolved on the worker (once per run; later asks are answered from memory). */
  | { type: 'resolve-tools' }
  /** Run the pre-step waterfall (rule 13). */
  | { type: 'pre-step'; request: PreStepRequest }
  /** Call the model. */
  | { type: 'model'; call: ModelCall }
  /** Summarise the oldest part of the projection (before a model request that would pass the token budget). */
  | { type: 'compact'; call: CompactionCall }
  /** Start a tool call and its post-tool hooks; answer at once (undefined); it settles through `tool-settled`. */
  | { type: 'start-tool'; start: ToolStart }
  /**
   * Wait for the next started tool call to settle, in whatever order they finish, or for an approval to be
   * resolved (a decision, its timeout, a cancel): answered `{kind:'approval'}`, the driver reads the core.
   */
  | { type: 'tool-settled' }
  /** Ask the worker which of these calls need approval (their tools' predicates); answer: the callIds that do. */
  | { type: 'check-approvals'; check: ApprovalCheck }
  /**
   * A call now waits for a decision (its `tool/approval-requested` is logged); answer at once (undefined). With
   * `timeoutMs` the interpreter starts a durable timer that resolves it `by:'timeout'` through the driver.
   */
  | { type: 'await-approval'; approval: { callId: string; timeoutMs?: number } }
  /**
   * The turn waits at its budget (`budget/exceeded` logged): until a `budget` decision ends the pause
   * (`core.budgetPaused` clears) or a cancel reaches the turn. Answer: undefined; the driver reads the core.
   */
  | { type: 'await-budget' }
  /**
   * A quiet point where the driver wants to continue as new (rule 33): wait for every handler to finish, then, if
   * `driver.canContinueAsNew()` still holds, continue as new with `driver.carry()`. Answer undefined if not done.
   */
  | { type: 'continue-as-new' };

export type EffectType = Effect['type'];

/** The answer to each effect type. */
export interface AnswerMap {
  'wait-for-work': undefined;
  'resolve-hooks': Resolved<HookDescriptor[]>;
  'resolve-tools': Resolved<ToolDescriptor[]>;
  'pre-step': { kind: 'decided'; decision: PreStepDecision } | Failed;
  model: { kind: 'ok'; result: ModelStepResult } | Failed;
  compact: { kind: 'ok'; result: CompactionResult } | Failed;
  'start-tool': undefined;
  /** `held`: the result's content is what the tool activity returned (its result in history holds it). */
  'tool-settled':
    | {
        kind: 'settled';
        index: number;
        result: ToolExecResult;
        held?: boolean;
        /** A delegate call: how its sub-session's turn ended (`subsession/ended`). */
        subsession?: { reason: TurnEndReason; used?: BudgetUsed };
      }
    | { kind: 'approval' };
  'check-approvals': Resolved<string[]>;
  'await-approval': undefined;
  'await-budget': undefined;
  'continue-as-new': undefined;
}

export type Answer = AnswerMap[EffectType];
