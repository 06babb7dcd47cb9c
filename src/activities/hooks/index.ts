/** Hooks: definitions (function, HTTP, command), the worker's registry and the runner the activities use. */
export { commandHook, COMMAND_HOOK_DEFAULTS, type CommandHookSpec } from './command';
export { httpHook, HTTP_HOOK_DEFAULTS, type HttpHookSpec } from './http';
export { defineHook, HookRegistry, type FunctionHookSpec } from './registry';
export { runPostToolHook, runPreStepHook } from './run';
export {
  HookError,
  PostToolHookOutputSchema,
  PreStepHookOutputSchema,
  type HookCallContext,
  type HookDefinition,
  type HookInput,
  type HookKind,
  type PostToolHookInput,
  type PostToolHookOutput,
  type PreStepHookInput,
  type PreStepHookOutput,
} from './types';
