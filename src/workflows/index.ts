/**
 * Workflow bundle entry: the `agentSession` workflow (wire name) with no workflow-side extensions. A user who adds
 * pre-step listeners writes their own workflows file that exports
 * `agentSession = defineAgentSession({ preStep: [...] })` (and re-exports `scheduledFollowup`, the workflow of a
 * schedule's firing) and points the worker at it.
 */
import { defineAgentSession } from './session';

export { defineAgentSession } from './session';
export type { AgentSessionOptions, CarriedSession } from './session';
export { contextMessage, runPreStep } from './preStep';
export type { PreStepContext, PreStepDecision, PreStepListener } from './preStep';

export const agentSession = defineAgentSession();

/** One firing of a schedule. A workflows file of your own re-exports it for schedules to work on your worker. */
export { scheduledFollowup } from './scheduled';
