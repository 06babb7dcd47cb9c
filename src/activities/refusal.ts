/**
 * The refusal of a session that names tools or hooks this worker does not register: the failure says which names,
 * which worker refused (its Temporal identity and task queue) and why, and what to do when workers with different
 * registrations poll one task queue (docs/protocol.md "Starting a session"). Runs in activities (reads their context).
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { FailureTypes } from '../contract';

/** The worker running the current activity: `worker <identity> on task queue "<queue>"` (`this worker` outside one). */
export function refusingWorker(): string {
  let ctx: Context;
  try {
    ctx = Context.current();
  } catch {
    return 'this worker';
  }
  return `${clientIdentity(ctx) ?? 'this worker'} on task queue "${ctx.info.taskQueue}"`;
}

/** `worker <identity>`: the worker's client carries the identity the worker polls with (a mock activity has none). */
function clientIdentity(ctx: Context): string | undefined {
  try {
    return `worker ${ctx.client.options.identity}`;
  } catch {
    return undefined;
  }
}

/**
 * The non-retryable `UnknownTool` / `UnknownHook` failure for `unknown` names, listing what this worker registers.
 * The session ends itself when this refuses it in its first run (src/workflows/refusal.ts).
 */
export function unknownNames(
  kind: 'tool' | 'hook',
  unknown: readonly string[],
  registered: readonly string[],
): ApplicationFailure {
  const names = unknown.map((n) => `"${n}"`).join(', ');
  return ApplicationFailure.create({
    type: kind === 'tool' ? FailureTypes.UnknownTool : FailureTypes.UnknownHook,
    nonRetryable: true,
    message:
      `session names ${kind}${unknown.length > 1 ? 's' : ''} ${names} that ${refusingWorker()} does not register ` +
      `(registered: ${registered.join(', ') || 'none'}); every worker polling a task queue must register the ` +
      `same ${kind}s, so give a worker with other ${kind}s its own task queue`,
  });
}
