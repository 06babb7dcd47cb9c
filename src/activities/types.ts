/**
 * Inputs and outputs of the session's activities: the boundary between the deterministic workflow and the world.
 * Types only (the workflow imports this file as types). Failures are normalized here into data or into named
 * ApplicationFailures (contract FailureTypes) so the workflow stores values, not exceptions.
 */
import type { ErrorInfo, ToolCallInfo, Usage } from '../domain/events';
import type { ContentBlock, MessageSource, UserMessage } from '../domain/messages';
import type { TranscriptEntry } from '../domain/transcript';
import type { ModelSpec } from '../domain/wire';

/**
 * One model request as the workflow schedules it. It carries only what is new since the session's previous model
 * request (`newEntries`) plus the count and hash of what came before (`prefix`); the activity assembles the full
 * model-visible transcript from its cache, or from the workflow itself on a miss (docs/decisions: history grows
 * with new content only). What the model sees is exactly the model-visible part of the log (rule 14).
 */
export interface ModelStepInput {
  sessionId: string;
  /** First run id of the session's continue-as-new chain (cache key: a reused session id is a new chain). */
  chainId: string;
  /** The run that scheduled this request; it (and the runs before it) answer `modelContext` queries. */
  runId: string;
  turn: number;
  step: number;
  /** 0-based index of this request in the whole session. */
  requestIndex: number;
  /** The session's model; absent when the session names none (the worker's default model answers). */
  model?: ModelSpec;
  system?: string;
  /** Tools the model may call (names registered on the worker). */
  tools: string[];
  /** Count and hash of the entries the previous model request saw. */
  prefix: { count: number; hash: string };
  /** Entries added since the previous model request, oldest first. */
  newEntries: TranscriptEntry[];
  /** Hash of prefix + newEntries. */
  hash: string;
}

/** What a provider gets: the request with the assembled model-visible messages, oldest first. */
export interface ModelRequest {
  sessionId: string;
  turn: number;
  step: number;
  requestIndex: number;
  /** The model that answers: the session's, or the worker's default. */
  model: ModelSpec;
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

export interface ModelStepResult {
  text: string;
  toolCalls: ToolCallInfo[];
  finish: 'stop' | 'tool-calls' | 'max-tokens';
  usage?: Usage;
  /** The call was cancelled after it produced `text` (visible output is kept, rule 29). */
  interrupted?: boolean;
}

export interface DescribeToolsInput {
  names: string[];
}
export interface ToolDescriptor {
  name: string;
  exclusive: boolean;
}

export type HookKind = 'pre-step' | 'post-tool';
export interface DescribeHooksInput {
  names: string[];
}
export interface HookDescriptor {
  name: string;
  kind: HookKind;
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

/** A post-tool hook's decision: continue (adding contexts) or block (the result becomes `feedback`). */
export type PostToolHookResult =
  | { kind: 'continue'; additionalContexts: ContextOutput[] }
  | { kind: 'block'; feedback: string; additionalContexts: ContextOutput[] };

export interface ToolExecInput {
  sessionId: string;
  turn: number;
  step: number;
  callId: string;
  name: string;
  arguments: Record<string, unknown>;
}

/** Context a tool produced for the next step (rule 19); the workflow gives it an id when it has none. */
export interface ContextOutput {
  id?: string;
  content: ContentBlock[];
  /** Defaults to `{kind:'tool', callId}`. */
  source?: MessageSource;
}

export interface ToolExecResult {
  content: ContentBlock[];
  error?: ErrorInfo;
  additionalContexts: ContextOutput[];
  concludesTurn: boolean;
}
