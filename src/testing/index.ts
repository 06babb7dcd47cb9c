/**
 * The testing kit users import for their own agent tests (docs/testing.md): the scripted model and
 * its request recorder, the testing toolset, a one-call time-skipping session env, history export and replay, and
 * the session-log invariant checker. Not deterministic; never import from workflow code.
 */
export { ScriptedProvider, ScriptedRecorder } from '../activities/model';
export type { ModelProvider, ModelCallContext } from '../activities/model';
export type { ModelRequest } from '../activities/types';
export { defineTool } from '../activities/tools';
export type { ToolDefinition, ToolContext } from '../activities/tools';
export {
  testingTools,
  echoTool,
  sleepTool,
  failTool,
  emitContextTool,
  injectSelfTool,
  steerSelfTool,
  concludeTool,
} from '../activities/testingTools';
export { createTestSessionEnv, patientQuery, settle, waitUntil } from './env';
export type { TestSessionEnv, TestSessionEnvOptions } from './env';
export {
  exportHistory,
  historyJson,
  parseHistoryJson,
  readHistoryFile,
  replayHistories,
  replayHistoryFiles,
  HistoryReplayError,
} from './history';
export type { ExportHistoryOptions, ReplayOptions, ReplaySummary, ReplayFailure } from './history';
export { assertLogValid, checkLog, LogInvariantError } from '../domain/invariants';
export type { CheckLogOptions, CheckResult } from '../domain/invariants';
