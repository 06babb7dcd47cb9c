/**
 * Result values: what a model step, a compaction and a tool call come back with, and how an interpreter reports a
 * failure as data (`Failed`, `Resolved`). `failedResult` is the one way a failure becomes a tool result the model
 * reads. A leaf (types and one builder): the effects, the tool batch, the waterfall and sub-sessions share it.
 */
import type { ErrorInfo, ToolCallInfo } from './entry';
import type { ToolsOffered, Usage } from './events';
import type { ContentBlock, MessageSource, TextBlock } from './messages';

export interface ModelStepResult {
  text: string;
  toolCalls: ToolCallInfo[];
  finish: 'stop' | 'tool-calls' | 'max-tokens';
  usage?: Usage;
  /**
   * The tool definitions the request carried: their names, and a hash of the definitions (name, description and
   * schema) the model was shown, so a transcript tells what the model saw even when a server's tools change.
   */
  tools?: ToolsOffered;
  /** The call was cancelled after it produced `text` (visible output is kept, rule 29). */
  interrupted?: boolean;
}

/** What a compactor answered, and the projection's size before and after. */
export interface CompactionResult {
  summary: string;
  tokensBefore: number;
  tokensAfter: number;
  /** The compactor (`provider:model`). */
  model: string;
  /** What the compactor's provider reported (with its cost when the worker prices the compactor). */
  usage?: Usage;
}

/** Context a tool or hook produced for the next step (rule 19); the driver gives it an id when it has none. */
export interface ContextOutput {
  id?: string;
  content: TextBlock[];
  /** Defaults to `{kind:'tool', callId}`. */
  source?: MessageSource;
}

/** The settled outcome of one tool call, after the session's post-tool hooks. */
export interface ToolExecResult {
  content: ContentBlock[];
  error?: ErrorInfo;
  additionalContexts: ContextOutput[];
  concludesTurn: boolean;
}

/**
 * A failure the interpreter reports as data. `canceled` says the effect ended because the turn's cancellation
 * reached it (the driver then closes the turn `aborted` if a cancel is in progress).
 */
export interface Failed {
  kind: 'failed';
  error: ErrorInfo;
  canceled?: boolean;
}

export type Resolved<T> = { kind: 'ok'; value: T } | Failed;

/** A tool result that reports an error to the model. */
export function failedResult(error: ErrorInfo): ToolExecResult {
  return {
    content: [{ type: 'text', text: `error: ${error.message}` }],
    error,
    additionalContexts: [],
    concludesTurn: false,
  };
}
