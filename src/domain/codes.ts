/**
 * Failure type names and error codes (wire, docs/protocol.md). Failure types are the `type` of ApplicationFailures
 * a client can branch on (PascalCase, STYLE.md 7); error codes are what the log records in `tool/result.error.code`
 * and `turn/end` error reasons (UPPER_SNAKE, always). An activity failure reaches the log through `codeOf`, so a
 * log never holds a PascalCase failure type. Pure.
 */

/** Failure type names (ApplicationFailure.type) that clients branch on. */
export const FailureTypes = {
  /** A payload failed validation; the message names the field and the limit. */
  InvalidPayload: 'InvalidPayload',
  /** The session was disposed (or is being disposed): it takes no more messages. */
  SessionDisposed: 'SessionDisposed',
  ModelFailed: 'ModelFailed',
  ModelRequestInvalid: 'ModelRequestInvalid',
  /** A session names a tool this worker does not register. */
  UnknownTool: 'UnknownTool',
  ToolFailed: 'ToolFailed',
  ScriptedFailure: 'ScriptedFailure',
  /** The provider answered 429: retried by Temporal, after Retry-After when the provider sent one. */
  ModelRateLimited: 'ModelRateLimited',
  /** 5xx, 408/409, a connection error or a reset: retried by Temporal. */
  ModelUnavailable: 'ModelUnavailable',
  /** No chunk within the worker's chunk timeout: retried by Temporal. */
  ModelTimeout: 'ModelTimeout',
  /** 401/403: the worker's key was rejected; not retried (the message names the variable to fix). */
  ModelAuthFailed: 'ModelAuthFailed',
  /** A session names a hook this worker does not register. */
  UnknownHook: 'UnknownHook',
  /** A hook failed (threw, timed out, answered non-2xx, exited non-zero); retryable unless the failure says not. */
  HookFailed: 'HookFailed',
  /** A hook answered something that is not a valid decision; not retried. */
  HookInvalidOutput: 'HookInvalidOutput',
  /** A model activity could not assemble the transcript the workflow described (prefix hash mismatch). */
  TranscriptMismatch: 'TranscriptMismatch',
  /**
   * A model activity could not resolve an entry its input sends by reference (not in the worker's store, not found
   * in the run's history with its hash); not retried: the workflow sends the request again with every entry inline.
   */
  TranscriptRefMiss: 'TranscriptRefMiss',
  /** A `deliver` with `wait` timed out before its message's turn ended (the message itself was accepted). */
  TurnWaitTimeout: 'TurnWaitTimeout',
  /** An `approve` update named a call that has no pending approval, or contradicts its decision. */
  ApprovalRefused: 'ApprovalRefused',
  /** An MCP server the worker is configured with cannot be reached (or lists colliding tool names). */
  McpServerUnavailable: 'McpServerUnavailable',
  /** A `budget` update came while the session was not paused at its budget. */
  BudgetRefused: 'BudgetRefused',
  /**
   * A model answer (text and tool-call arguments) passed the worker's answer size cap; the stream was cut there.
   * Not retried.
   */
  ModelAnswerTooLarge: 'ModelAnswerTooLarge',
  /**
   * The workflow did not send an activity or child workflow whose arguments would pass Temporal's payload limit
   * (src/workflows/payloadGuard.ts). Not retried.
   */
  PayloadTooLarge: 'PayloadTooLarge',
} as const;
export type FailureType = (typeof FailureTypes)[keyof typeof FailureTypes];

/** Error codes written into `tool/result.error.code` and `turn/end` error reasons. */
export const ErrorCodes = {
  ToolNotAllowed: 'TOOL_NOT_ALLOWED',
  ToolInvalidArguments: 'TOOL_INVALID_ARGUMENTS',
  ToolFailed: 'TOOL_FAILED',
  AbortedBeforeDispatch: 'ABORTED_BEFORE_DISPATCH',
  Aborted: 'ABORTED',
  ModelFailed: 'MODEL_FAILED',
  PreStepFailed: 'PRE_STEP_FAILED',
  UnknownTool: 'UNKNOWN_TOOL',
  Internal: 'INTERNAL',
  /** A post-tool hook blocked the result; the content is the hook's feedback. */
  ToolBlocked: 'TOOL_BLOCKED',
  /** A post-tool hook failed after its retries; the tool's own result is withheld from the model. */
  PostToolHookFailed: 'POST_TOOL_HOOK_FAILED',
  UnknownHook: 'UNKNOWN_HOOK',
  ModelRequestInvalid: 'MODEL_REQUEST_INVALID',
  ModelRateLimited: 'MODEL_RATE_LIMITED',
  ModelUnavailable: 'MODEL_UNAVAILABLE',
  ModelTimeout: 'MODEL_TIMEOUT',
  ModelAuthFailed: 'MODEL_AUTH_FAILED',
  ScriptedFailure: 'SCRIPTED_FAILURE',
  HookFailed: 'HOOK_FAILED',
  HookInvalidOutput: 'HOOK_INVALID_OUTPUT',
  InvalidPayload: 'INVALID_PAYLOAD',
  TranscriptMismatch: 'TRANSCRIPT_MISMATCH',
  /** A person denied a tool call that needed approval; the content carries their reason. */
  Denied: 'DENIED',
  /** No decision on a tool call that needed approval within the session's `approvals.timeoutMs`. */
  ApprovalTimeout: 'APPROVAL_TIMEOUT',
  TranscriptRefMiss: 'TRANSCRIPT_REF_MISS',
  /** An MCP server could not be reached: its tools are refused (turn/end) or the call failed (tool/result). */
  McpServerUnavailable: 'MCP_SERVER_UNAVAILABLE',
  /** The session's budget would be breached by the next model step, and it was not extended. */
  BudgetExceeded: 'BUDGET_EXCEEDED',
  /** A `delegate` call over the sub-session limits (depth, per turn) or asking for tools the session may not use. */
  SubsessionRefused: 'SUBSESSION_REFUSED',
  /** A sub-session's turn did not complete (its reason is in the message and in `subsession/ended`). */
  SubsessionFailed: 'SUBSESSION_FAILED',
  /** The compaction before a model request failed after its retries (context.maxTokens; the turn ends). */
  CompactionFailed: 'COMPACTION_FAILED',
  /** A model answer passed the worker's answer size cap (docs/protocol.md, "Sizes"); the turn ends. */
  ModelAnswerTooLarge: 'MODEL_ANSWER_TOO_LARGE',
  /** A tool result passed the worker's result size cap; the model reads this error instead of the result. */
  ToolResultTooLarge: 'TOOL_RESULT_TOO_LARGE',
  /** An activity's input would have passed Temporal's payload limit, so it was not sent (docs/protocol.md, "Sizes"). */
  PayloadTooLarge: 'PAYLOAD_TOO_LARGE',
} as const;
export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

const UPPER_SNAKE = /^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$/;
const KNOWN_TYPES = new Set<string>(Object.values(FailureTypes));

/**
 * The error code the log records for a failure type: one of ours becomes its UPPER_SNAKE form (`ModelRateLimited` →
 * `MODEL_RATE_LIMITED`); a type that already is UPPER_SNAKE is kept; anything else (`Error`, `TypeError`, none)
 * gets the code of the place it happened (`fallback`, e.g. MODEL_FAILED).
 */
export function codeOf(failureType: string | undefined, fallback: string): string {
  if (!failureType) return fallback;
  if (UPPER_SNAKE.test(failureType)) return failureType;
  if (!KNOWN_TYPES.has(failureType)) return fallback;
  return failureType.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase();
}
