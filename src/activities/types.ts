/**
 * Inputs and outputs of the session's activities: the boundary between the deterministic workflow and the world.
 * Types only (the workflow imports this file as types). Failures are normalized here into data or into named
 * ApplicationFailures (contract FailureTypes) so the workflow stores values, not exceptions. The results the
 * driver consumes are defined with its effects (src/domain/effects.ts) and re-exported here.
 */
import type {
  ApprovalCheck,
  CompactionCall,
  CompactionResult,
  ContextOutput,
  HookDescriptor,
  HookKind,
  ModelCall,
  ModelStepResult,
  PostToolHookResult,
  ToolDescriptor,
  ToolExecResult,
} from '../domain/effects';
import type { WireEntry } from '../domain/entryRefs';
import type { ErrorInfo } from '../domain/events';
import type { ContentBlock, UserMessage } from '../domain/messages';
import type { TranscriptEntry } from '../domain/transcript';
import type { ModelSpec } from '../domain/wire';

export type {
  CompactionResult,
  ContextOutput,
  HookDescriptor,
  HookKind,
  ModelStepResult,
  PostToolHookResult,
  ToolDescriptor,
  ToolExecResult,
};

/** A compaction as the workflow schedules it: the driver's CompactionCall and the run's identity. */
export interface CompactionInput extends CompactionCall {
  sessionId: string;
  chainId: string;
  runId: string;
}

/**
 * One model request as the workflow schedules it: the driver's ModelCall — only what is new since the session's
 * previous model request (`newEntries`) plus the count and hash of what came before (`prefix`) — and the run's
 * identity. The activity assembles the full model-visible transcript from its cache, or from the workflow itself
 * on a miss (docs/decisions: history grows with new content only). What the model sees is exactly the
 * model-visible part of the log (rule 14).
 */
export interface ModelStepInput extends Omit<ModelCall, 'newEntries' | 'refs'> {
  /**
   * The entries new since the previous request: inline, or a reference to the place in this run's history that
   * holds the entry (src/domain/entryRefs.ts). The activity resolves references from the worker's entry store (the
   * workflow fills it through a sink) or from the run's history, checks each against its hash, and fails with the
   * non-retryable `TranscriptRefMiss` when it cannot; the workflow then sends the request again, every entry inline.
   * Histories recorded before references existed hold only inline entries.
   */
  newEntries: WireEntry[];
  sessionId: string;
  /** First run id of the session's continue-as-new chain (cache key: a reused session id is a new chain). */
  chainId: string;
  /** The run that scheduled this request; it (and the runs before it) answer `modelContext` queries. */
  runId: string;
}

/** What a provider gets: the request with the assembled model-visible messages, oldest first. */
export interface ModelRequest {
  sessionId: string;
  turn: number;
  step: number;
  requestIndex: number;
  /** The model that answers: the session's, or the worker's default. */
  model: ModelSpec;
  /** For a scripted model: the index in the session's script of `model.steps[0]`. */
  stepsFrom?: number;
  system?: string;
  tools: string[];
  /** What the model sees of each tool in `tools`: description and JSON schema from the worker's registry. */
  toolSpecs: ToolSpec[];
  messages: TranscriptEntry[];
}

/** A tool as the model sees it (derived from the tool's zod input schema with `z.toJSONSchema`). */
export interface ToolSpec {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

export interface DescribeToolsInput {
  names: string[];
}
export interface DescribeHooksInput {
  names: string[];
}
/** Which of a batch's calls need approval: the worker asks each call's tool predicate. */
export interface CheckApprovalsInput extends ApprovalCheck {
  sessionId: string;
}

/** What a pre-step hook is asked (also the JSON an HTTP or command hook receives). */
export interface PreStepHookInput {
  event: 'pre-step';
  hook: string;
  sessionId: string;
  turn: number;
  /** Number of the step this pre-step would open. */
  step: number;
  /** The claimed batch, in claim order. */
  batch: UserMessage[];
}

/** A pre-step hook's decision: enter (adding `messages` after the downstream batch) or reject. */
export type PreStepHookResult =
  { kind: 'enter'; messages: ContextOutput[] } | { kind: 'reject'; reason?: string };

/** What a post-tool hook is asked (also the JSON an HTTP or command hook receives). */
export interface PostToolHookInput {
  event: 'post-tool';
  hook: string;
  sessionId: string;
  turn: number;
  step: number;
  call: { callId: string; name: string; arguments: Record<string, unknown> };
  result: { content: ContentBlock[]; error?: ErrorInfo };
}

export interface ToolExecInput {
  sessionId: string;
  turn: number;
  step: number;
  callId: string;
  name: string;
  arguments: Record<string, unknown>;
}
