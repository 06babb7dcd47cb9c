/**
 * The package's main entry for services, listed by name (no `export *`: what is public is what this file names).
 * The client and its errors; the sessions MCP server; the worker factory and its configuration helpers; tools, hooks and model providers;
 * the wire names (workflow type, failure types, error codes); and the domain's wire types and schemas callers pass
 * or read. The session's internals (SessionCore, the inbox fold, the loop) are not part of it. Workflow code lives
 * in `agent-sessions/workflows` (src/workflows), bundled by the worker, never imported here; the testing kit
 * (the scripted model and its recorder among it) is `agent-sessions/testing`. Every name here is in
 * api/agent-sessions.api.md: `npm run api` updates that report, `npm run check` fails when it is out of date.
 */

// ---- the client ----
export {
  SessionClient,
  DEFAULT_DELIVERY_RETRY,
  MAX_LIST_LIMIT,
  upgradeSessions,
  DEFAULT_UPGRADE_RATE,
} from './client';
export type {
  SessionClientOptions,
  MessageArg,
  DeliveryRetryPolicy,
  WatchItem,
  SessionListFilters,
  SessionPage,
  SessionRow,
  UpgradeOptions,
  UpgradeReport,
} from './client';
// Every error the client throws (the schedules' ScheduleNotFoundError is Temporal's, re-exported).
export {
  InvalidInputError,
  SessionDisposedError,
  SessionNotFoundError,
  DeliveryRejectedError,
  TurnWaitTimeoutError,
  ApprovalRefusedError,
  BudgetRefusedError,
  ScheduleNotFoundError,
} from './client';

// ---- sessions as an MCP server (docs/mcp-server.md) ----
export { createSessionsMcpServer, toolError, MAX_TURN_WAIT_MS, DEFAULT_TURN_WAIT_MS } from './mcp/server';
export type { SessionsMcpServerOptions } from './mcp/server';
export { serveSessionsMcpHttp, MCP_HTTP_PATH } from './mcp/http';
export type { SessionsMcpHttpOptions, SessionsMcpHttpServer } from './mcp/http';
export type { TurnWaitResult } from './mcp/turnWait';
// ---- scoped tokens for the viewer and MCP over HTTP (docs/security.md) ----
export { TokenStore, defaultTokensFile, TOKENS_FILE_VAR } from './access/tokens';
export type { TokenIssue, TokenRecord } from './access/tokens';
export { ReadOnlyTokenError } from './access/scope';
export type { ScopedTokens, SessionScope } from './access/scope';

// ---- cross-session references (docs/protocol.md "Cross-session references") ----
export {
  sameTenantPolicy,
  MAX_REFS_PER_MESSAGE,
  DEFAULT_MAX_SESSION_REF_BYTES,
  SESSION_REF_KIND,
} from './domain/sessionRefs';
export type { SessionRef, SessionRefParty, SessionRefPolicy } from './domain/sessionRefs';

// ---- the worker ----
// The workflow code is named one way: `SessionWorkerOptions.workflowsPath`, your workflows module (default: ours,
// from the build's bundle). `workflowBundle` (a bundle built beforehand, with SESSION_PAYLOAD_CONVERTER_PATH) stays
// for tests that bundle once per run.
export {
  createSessionWorker,
  runWorkerFromEnv,
  SESSION_PAYLOAD_CONVERTER_PATH,
  modelsFromConfig,
  providersFromEnv,
  hooksFromFile,
  createWorkerLogger,
  installWorkerLogging,
} from './worker';
export type {
  SessionWorkerOptions,
  WorkerLogger,
  WorkerLoggerOptions,
  WorkerVersioningOptions,
} from './worker';

// ---- encrypted history (optional) ----
export {
  AesGcmCodec,
  encryptionDataConverter,
  parseEncryptionKey,
  createCodecServer,
  UnknownEncryptionKeyError,
  ENCRYPTED_ENCODING,
  KEY_ID_METADATA_KEY,
} from './codec';
export type { EncryptionKey, EncryptionKeyring, CodecServerOptions } from './codec';
export { startTracing, tracingEnabled, clientTracingInterceptors } from './telemetry';
export type { Tracing } from './telemetry';

// ---- tools, hooks and models ----
export { defineTool, ToolRegistry } from './activities/tools';
export type { ToolContext, ToolDefinition, ToolReturn } from './activities/tools';
export { defineHook, httpHook, commandHook, HookError } from './activities/hooks';
export type {
  HookDefinition,
  HookCallContext,
  PreStepHookOutput,
  PostToolHookOutput,
} from './activities/hooks';
export type { ModelProvider, ModelCallContext } from './activities/model';
export type { ModelRequest, ModelStepResult } from './activities/types';
export { createProviders, AiSdkProvider } from './activities/providers';

// ---- wire names ----
export { WORKFLOW_TYPE, DEFAULT_TASK_QUEUE, FailureTypes, ErrorCodes } from './contract';
export type { FailureType, ErrorCode, EventsPage, TranscriptView } from './contract';

// ---- wire types and schemas (src/domain) ----
export {
  LIMITS,
  MessageInputSchema,
  MessageSourceSchema,
  ContentBlockSchema,
  ToolResultContentSchema,
  blockText,
  textOf,
} from './domain/messages';
export type {
  ContentBlock,
  TextBlock,
  ImageBlock,
  AudioBlock,
  ResourceBlock,
  MessageInput,
  MessageSource,
  UserMessage,
} from './domain/messages';
export { LANES, SessionConfigSchema, ModelSpecSchema, CancelInputSchema } from './domain/wire';
export type {
  Lane,
  SessionConfig,
  ModelSpec,
  ScriptedStep,
  DeliveryReceipt,
  CancelInput,
  ContextConfig,
} from './domain/wire';
export { CORE_EVENT_TYPES, isCoreEventType } from './domain/events';
export type {
  SessionEvent,
  EventOf,
  EventDataMap,
  CoreEventType,
  TurnEndReason,
  CancelCause,
  ErrorInfo,
  ToolCallInfo,
  AssistantMessage,
  Usage,
  InboxTarget,
  SpliceData,
} from './domain/events';
export type { SessionStateView, SessionStatus, UsageTotals } from './domain/session';
export { projectTranscript } from './domain/transcript';
export { estimateTokens } from './domain/compaction';
export type { TranscriptEntry } from './domain/transcript';
