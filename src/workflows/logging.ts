/**
 * Turn and step on every workflow log line. A workflow interceptor module (the worker bundles it with every bundle
 * of ours: src/worker/bundle.ts) whose `getLogAttributes` adds the session's current turn and step to what the SDK
 * already attaches (workflow id = session id, run id). The session keeps them current by passing each event it
 * logs to {@link trackLogContext} (or by calling {@link setLogContext}). Module state is per workflow execution:
 * the SDK gives every workflow its own module instances. Deterministic: no I/O, and log attributes never reach the
 * history.
 */
import type { WorkflowInterceptorsFactory } from '@temporalio/workflow';

let context: { turn?: number; step?: number } = {};

/** Sets the turn and step log lines carry from now on (`step` absent between a turn's start and its first step). */
export function setLogContext(next: { turn?: number; step?: number }): void {
  context = {
    ...(next.turn !== undefined ? { turn: next.turn } : {}),
    ...(next.step !== undefined ? { step: next.step } : {}),
  };
}

/** Follows the session's log: `turn/start` sets the turn (no step yet), `step/start` the step; the rest keep them. */
export function trackLogContext(event: { type: string; data: unknown }): void {
  const data = event.data as { turn?: number; step?: number };
  if (event.type === 'turn/start') setLogContext({ turn: data.turn });
  else if (event.type === 'step/start') setLogContext({ turn: data.turn, step: data.step });
}

export const interceptors: WorkflowInterceptorsFactory = () => ({
  outbound: [{ getLogAttributes: (input, next) => next({ ...input, ...context }) }],
});
