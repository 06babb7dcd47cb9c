/**
 * The package's main entry for services: the client, the worker factory, the tool API and the domain types.
 * Workflow code lives in `agent-sessions/workflows` (src/workflows), bundled by the worker, never imported here.
 */
export { SessionClient } from './client';
export * from './client/errors';
export type { WatchItem } from './client/watch';
export { createSessionWorker, runWorkerFromEnv, DEFAULT_WORKFLOWS_PATH } from './worker';
export type { SessionWorkerOptions } from './worker';
export { defineTool, ToolRegistry } from './activities/tools';
export type { ToolContext, ToolDefinition, ToolReturn } from './activities/tools';
export type { ModelProvider, ModelCallContext } from './activities/model';
export { ScriptedProvider, ScriptedRecorder } from './activities/model';
export { WORKFLOW_TYPE, DEFAULT_TASK_QUEUE, FailureTypes, ErrorCodes } from './contract';
export * from './domain';
export { defineHook, httpHook, commandHook, HookError } from './activities/hooks';
export type {
  HookDefinition,
  HookCallContext,
  PreStepHookOutput,
  PostToolHookOutput,
} from './activities/hooks';
export { createProviders, AiSdkProvider } from './activities/providers';
export { modelsFromConfig, providersFromEnv, hooksFromFile } from './worker';
