/**
 * The pure domain's public API, re-exported by name (no `export *`: what is public is listed here).
 * Pure and deterministic: nothing here touches Temporal or I/O, so the workflow sandbox may import it.
 */
export {
  LIMITS,
  TextBlockSchema,
  ImageBlockSchema,
  AudioBlockSchema,
  ResourceBlockSchema,
  ContentBlockSchema,
  ToolResultContentSchema,
  MAX_BASE64_CHARS,
  base64Bytes,
  binaryBytes,
  formatBytes,
  blockText,
  MessageSourceSchema,
  USER_SOURCE,
  isDirect,
  MessageIdSchema,
  MessageInputSchema,
  UserMessageSchema,
  toBlocks,
  textOf,
  deepFreeze,
  makeUserMessage,
} from './messages';
export type {
  TextBlock,
  ImageBlock,
  AudioBlock,
  ResourceBlock,
  ContentBlock,
  MessageSource,
  MessageInput,
  UserMessage,
} from './messages';
export { toResultBlocks } from './blocks';

export {
  LANES,
  LaneSchema,
  LANE_RULES,
  ScriptedToolCallSchema,
  ScriptedStepSchema,
  ModelSpecSchema,
  SessionConfigSchema,
  DEFAULT_MAX_PARALLEL_TOOL_CALLS,
  LaneSignalSchema,
  DeliverInputSchema,
  ApproveInputSchema,
  BudgetDecisionSchema,
  BudgetLimitsSchema,
  BUDGET_LIMIT_KEYS,
  ContextConfigSchema,
  budgetBreaches,
  budgetRemaining,
  MAX_APPROVAL_TIMEOUT_MS,
  CancelCauseSchema,
  CancelInputSchema,
  DisposeInputSchema,
  EventsQuerySchema,
  DEFAULT_EVENTS_LIMIT,
  laneInputProblem,
} from './wire';
export type {
  Lane,
  ScriptedStep,
  ModelSpec,
  SessionConfig,
  LaneSignal,
  DeliverInput,
  DeliveryReceipt,
  ApproveInput,
  ApprovalReceipt,
  BudgetDecision,
  BudgetKey,
  BudgetLimits,
  BudgetReceipt,
  ContextConfig,
  BudgetUsed,
  CancelInput,
  EventsQuery,
} from './wire';

export {
  CORE_EVENT_TYPES,
  isCoreEventType,
  TurnEndReasonSchema,
  EventDataSchemas,
  EventEnvelopeSchema,
  eventProblem,
} from './events';
export type {
  InboxTarget,
  SpliceData,
  CancelCause,
  ErrorInfo,
  TurnEndReason,
  ToolCallInfo,
  AssistantMessage,
  Usage,
  EventDataMap,
  CoreEventType,
  SessionEvent,
  EventOf,
  EventDraft,
  ApprovalDecision,
  ApprovalRequest,
  ApprovalResolution,
  ApprovalResolvedBy,
  SubsessionStarted,
  SubsessionEnded,
} from './events';

export {
  EMPTY_INBOX,
  InboxSpliceError,
  listOf,
  spliceShape,
  spliceProblem,
  applySplice,
  foldInbox,
  removedBy,
  insertSplice,
  claimSplice,
  cancelSplice,
} from './inbox';
export type { Inbox, SpliceShape } from './inbox';

export { emptyTranscript, projectEvent, projectTranscript } from './transcript';
export { estimateTokens, DEFAULT_COMPACT_AT, DEFAULT_KEEP_RECENT } from './compaction';
export type { TranscriptEntry, TranscriptState } from './transcript';

export { SessionCore } from './session';
export type { AcceptResult, SessionCoreDeps } from './session';
export { RECENT_ID_WINDOW } from './core/idWindows';
export { RESOLVED_APPROVAL_WINDOW } from './core/approvals';
export type { PendingApproval, ApprovalStatus } from './core/approvals';
export { initialSnapshot, SessionStateError } from './core/snapshot';
export type { SessionStatus, SessionSnapshot } from './core/snapshot';
export type { SessionStateView } from './core/stateView';

export { afterPreStep, afterStep } from './loop';
export type { AfterPreStep, StepOutcome } from './loop';

export { ErrorCodes, FailureTypes, codeOf } from './codes';
export {
  PAYLOAD_LIMIT_BYTES,
  DEFAULT_MAX_ANSWER_BYTES,
  DEFAULT_MAX_TOOL_RESULT_BYTES,
  MAX_RESULT_CAP_BYTES,
  utf8Bytes,
  jsonBytes,
} from './sizes';
export type { ErrorCode, FailureType } from './codes';

export {
  SessionDriver,
  SessionRefusal,
  DEFAULT_CONTINUE_AS_NEW_AFTER_EVENTS,
  modelForRequest,
} from './driver';
export type { CarriedSession, DriverDeps, DriverGenerator } from './driver';
export type {
  Effect,
  EffectType,
  Answer,
  AnswerMap,
  Failed,
  Resolved,
  ModelCall,
  ModelStepResult,
  PreStepDecision,
  PreStepRequest,
  ToolStart,
  ToolExecResult,
  ToolDescriptor,
  ApprovalCheck,
  HookDescriptor,
  HookKind,
  ContextOutput,
  PostToolHookResult,
} from './effects';
export { runToolBatch, failedResult } from './toolBatch';
export {
  DelegateArgsSchema,
  MAX_SUBSESSION_DEPTH,
  MAX_SUBSESSIONS_PER_TURN,
  SubsessionLinkSchema,
  delegateOutcome,
  planDelegate,
  subsessionId,
} from './subsession';
export type { DelegateArgs, DelegatePlan, DelegateStart, SubsessionLink } from './subsession';
export { runPreStep, applyPostToolHooks, postToolChain } from './waterfall';
export type { PreStepContext, PreStepListener, PostToolHookOutcome } from './waterfall';
export { eventsPage, modelContextPage, PAGE_BYTES } from './pages';
export type { EventsPage, ModelContextPage } from './pages';

export { checkLog, assertLogValid, LogInvariantError } from './invariants';
export type { LogStart, CheckLogOptions, CheckResult } from './invariants';

export { assertNever, describeZodIssue } from './util';
