/**
 * Which failures of a `deliver` update are transient, the bounded backoff SessionClient retries them with, and the
 * retry loop itself. A delivery is idempotent by message id (rule 4), so retrying one that did land is answered as
 * a duplicate and never inserts the message twice. Failures are told apart by class, gRPC status code and failure
 * type, not by their text. Does no I/O of its own: the loop calls the attempt and the status reader it is given.
 */
import {
  ApplicationFailure,
  isGrpcServiceError,
  ServiceError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
} from '@temporalio/client';
import type { DeliveryReceipt } from '../domain/wire';
import { delay } from './poll';

/** gRPC status codes (numbers fixed by the gRPC spec; @grpc/grpc-js is not a dependency of ours). */
const GrpcStatus = {
  /** The server's WorkflowNotReady: it failed the workflow task the update rode on ("…unexpected workflow task failure"). */
  FailedPrecondition: 9,
  /** "workflow update was aborted": the server dropped its in-flight updates (e.g. the workflow task was rejected). */
  Unavailable: 14,
} as const;

/**
 * Failure types the server itself gives an update that the run it reached did not process: the run's last workflow
 * task completed (continue-as-new or completion) with the update still pending.
 */
const UNPROCESSED_UPDATE_TYPES: ReadonlySet<string> = new Set([
  'UnprocessedUpdate',
  'AcceptedUpdateCompletedWorkflow',
]);

/**
 * - `transient`: the server or the RPC gave up on this attempt; the same delivery may be sent again.
 * - `run-closed`: the run the attempt reached closed under it. If the session lives on (continue-as-new), the
 *   delivery goes to its next run; if the session was disposed, the caller is told so.
 * - `final`: an answer (a rejection, a not-found session, a bad request): retrying would not change it.
 */
export type DeliveryFailureKind = 'transient' | 'run-closed' | 'final';

export function deliveryFailureKind(err: unknown): DeliveryFailureKind {
  if (err instanceof WorkflowUpdateRPCTimeoutOrCancelledError) return 'transient';
  if (err instanceof ServiceError && isGrpcServiceError(err.cause)) {
    const code: number = err.cause.code;
    if (code === GrpcStatus.FailedPrecondition || code === GrpcStatus.Unavailable) return 'transient';
  }
  if (err instanceof WorkflowNotFoundError) return 'run-closed';
  if (
    err instanceof WorkflowUpdateFailedError &&
    err.cause instanceof ApplicationFailure &&
    UNPROCESSED_UPDATE_TYPES.has(err.cause.type ?? '')
  ) {
    return 'run-closed';
  }
  return 'final';
}

/** How many times `deliver` is tried in all, and how long it waits between tries (doubling, with jitter). */
export interface DeliveryRetryPolicy {
  attempts: number;
  initialDelayMs: number;
  maxDelayMs: number;
}

/** Five tries over about 1.5 s: a continue-as-new or a rejected workflow task is over well within that. */
export const DEFAULT_DELIVERY_RETRY: DeliveryRetryPolicy = {
  attempts: 5,
  initialDelayMs: 100,
  maxDelayMs: 2_000,
};

/** The wait after the `failed`-th failed attempt: half the doubled delay, plus up to as much again at random. */
export function deliveryBackoffMs(
  policy: DeliveryRetryPolicy,
  failed: number,
  random: () => number = Math.random,
): number {
  const full = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** Math.max(0, failed - 1));
  return Math.round(full / 2 + (random() * full) / 2);
}

/**
 * Runs `attempt` until it answers, retrying what deliveryFailureKind calls transient — and a closed run while the
 * session's status is still `RUNNING` (it continued as new) — up to `policy.attempts` tries in all. Throws the
 * failure that ends it through `explain`. `idIsOurs`: the message id was made up by this call, so a duplicate
 * reported after the first attempt is this call's own earlier attempt that landed, and answers `duplicate: false`.
 */
export async function retryDelivery(
  policy: DeliveryRetryPolicy,
  idIsOurs: boolean,
  attempt: () => Promise<DeliveryReceipt>,
  session: { status: () => Promise<string | undefined>; explain: (err: unknown) => Promise<unknown> },
): Promise<DeliveryReceipt> {
  for (let n = 1; ; n++) {
    try {
      const receipt = await attempt();
      return n > 1 && idIsOurs && receipt.duplicate ? { ...receipt, duplicate: false } : receipt;
    } catch (err) {
      const kind = deliveryFailureKind(err);
      const retry =
        n < policy.attempts &&
        (kind === 'transient' || (kind === 'run-closed' && (await session.status()) === 'RUNNING'));
      if (!retry) throw await session.explain(err);
      await delay(deliveryBackoffMs(policy, n));
    }
  }
}
