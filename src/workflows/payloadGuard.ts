/**
 * No payload the workflow creates passes Temporal's payload limit (docs/protocol.md, "Sizes and secrets"). Every
 * activity proxy of ours is wrapped by {@link sizeGuarded}, and the start of a sub-session checks its input with
 * {@link oversized}: arguments over MAX_RESULT_CAP_BYTES of JSON (the room under the 2 MiB limit) are not sent, and
 * the call fails at once with the non-retryable `PayloadTooLarge`, which the session handles like any failure of that
 * call (the turn ends, or the model reads a tool error). Without it such a command fails the workflow task again and
 * again and the session hangs. Where content comes together that can pass the limit: a post-tool hook's input (a
 * call's arguments and its result), a pre-step hook's batch of large messages, a model request sent all inline after
 * a reference miss. In the workflow code itself rather than an interceptor, so every bundle has it. Deterministic:
 * JSON sizes only.
 */
import { ApplicationFailure } from '@temporalio/workflow';
import { FailureTypes } from '../domain/codes';
import { formatBytes } from '../domain/messages';
import { jsonBytes, MAX_RESULT_CAP_BYTES } from '../domain/sizes';

/** The failure for arguments of `what` over the limit, or undefined when they fit. */
export function oversized(what: string, args: readonly unknown[]): ApplicationFailure | undefined {
  const bytes = jsonBytes(args);
  if (bytes <= MAX_RESULT_CAP_BYTES) return undefined;
  return ApplicationFailure.create({
    type: FailureTypes.PayloadTooLarge,
    nonRetryable: true,
    message: `the input of ${what} is ${formatBytes(bytes)} (${bytes} bytes), over the limit of ${MAX_RESULT_CAP_BYTES} bytes that Temporal's 2 MiB payload limit leaves: it was not sent`,
  });
}

type Activity = ((...args: unknown[]) => Promise<unknown>) & {
  executeWithOptions(options: unknown, args: unknown[]): Promise<unknown>;
};

/**
 * Activity proxies (from `proxyActivities`) whose calls, direct or `executeWithOptions`, reject with
 * `PayloadTooLarge` instead of scheduling an activity whose arguments would pass the limit.
 */
export function sizeGuarded<T extends object>(proxies: T): T {
  return new Proxy(proxies, {
    get(target, name, receiver) {
      const activity = Reflect.get(target, name, receiver) as unknown;
      if (typeof name !== 'string' || typeof activity !== 'function') return activity;
      const inner = activity as Activity;
      const what = `activity ${name}`;
      const call = (...args: unknown[]) => {
        const failure = oversized(what, args);
        return failure ? Promise.reject(failure) : inner(...args);
      };
      call.executeWithOptions = (options: unknown, args: unknown[]) => {
        const failure = oversized(what, args);
        return failure ? Promise.reject(failure) : inner.executeWithOptions(options, args);
      };
      return call;
    },
  });
}
