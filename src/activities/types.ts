/**
 * Inputs and outputs of the session's activities: the boundary between the deterministic workflow and the world.
 * Types only (the workflow imports this file as types). Failures are normalized here into data or into named
 * ApplicationFailures (contract FailureTypes) so the workflow stores values, not exceptions.
 */
import type { ErrorInfo, ToolCallInfo, Usage } from '../domain/events';
import type { ContentBlock, MessageSource } from '../domain/messages';
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
  model: ModelSpec;
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
  model: ModelSpec;
  system?: string;
  tools: string[];
  messages: TranscriptEntry[];
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
