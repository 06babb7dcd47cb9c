/**
 * Activity proxies with their timeouts and retry policies. Type-only import of the activities (sandbox rule).
 * Model and tool activities heartbeat, so a cancel reaches them within a heartbeat; the default cancellation type
 * (wait for completion) lets a cancelled call settle and commit its result (rule 29). Every proxy refuses arguments
 * over the payload limit before it schedules anything (./payloadGuard.ts).
 */
import { ActivityCancellationType, proxyActivities, type RetryPolicy } from '@temporalio/workflow';
import type { SessionActivities } from '../activities';
import { FailureTypes } from '../contract';
import { sizeGuarded } from './payloadGuard';

/**
 * Attempts allowed on top of a call's own budget for attempts lost with their worker (a heartbeat timeout). The
 * activities count their own failures and make the last one of their budget final (src/activities/attempts.ts:
 * model 5, tools 3, hooks 3, the numbers below), so worker loss does not use up that budget; this bounds how often
 * a call that takes its worker down every time is tried, and `scheduleToCloseTimeout` bounds how long. Temporal's
 * backoff grows with every attempt, lost ones included, so the longest wait is 10 s: the waits between genuine
 * attempts (1, 2, 4, 8 s) stay what they were, and a call retried after many lost workers waits at most 10 s more.
 */
const WORKER_LOSS_RETRIES = 20;

const nonRetryableErrorTypes = [
  FailureTypes.ModelRequestInvalid,
  FailureTypes.UnknownTool,
  FailureTypes.ScriptedFailure,
  FailureTypes.InvalidPayload,
  FailureTypes.ModelAuthFailed,
  FailureTypes.UnknownHook,
  FailureTypes.HookInvalidOutput,
];

/** Retries 1 s apart at first, doubling up to `maximumInterval`; our non-retryable failure types are final. */
function backoff(
  maximumAttempts: number,
  maximumInterval: RetryPolicy['maximumInterval'] = '10 seconds',
): RetryPolicy {
  return {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval,
    maximumAttempts,
    nonRetryableErrorTypes,
  };
}

export const modelActivities = sizeGuarded(
  proxyActivities<Pick<SessionActivities, 'modelStep' | 'compactTranscript'>>({
    startToCloseTimeout: '10 minutes',
    scheduleToCloseTimeout: '1 hour',
    heartbeatTimeout: '10 seconds',
    // Set explicitly: an unset cancellation type reaches the server as TRY_CANCEL, which reports the cancel at once.
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: backoff(5 + WORKER_LOSS_RETRIES),
  }),
);

export const toolActivities = sizeGuarded(
  proxyActivities<Pick<SessionActivities, 'executeTool'>>({
    startToCloseTimeout: '30 minutes',
    scheduleToCloseTimeout: '2 hours',
    heartbeatTimeout: '10 seconds',
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: backoff(3 + WORKER_LOSS_RETRIES),
  }),
);

export const setupActivities = sizeGuarded(
  proxyActivities<Pick<SessionActivities, 'describeTools' | 'describeHooks' | 'checkApprovals'>>({
    startToCloseTimeout: '1 minute',
    retry: { initialInterval: '1 second', maximumAttempts: 5, nonRetryableErrorTypes },
  }),
);

/**
 * Hook calls (pre-step listeners and post-tool hooks). Fewer attempts than model calls: a hook that keeps failing
 * ends its turn (pre-step) or withholds its tool's result (post-tool) within seconds. A cancelled hook has no
 * result to commit, so the workflow does not wait for it to settle.
 */
export const hookActivities = sizeGuarded(
  proxyActivities<Pick<SessionActivities, 'preStepHook' | 'postToolHook'>>({
    startToCloseTimeout: '5 minutes',
    scheduleToCloseTimeout: '30 minutes',
    heartbeatTimeout: '10 seconds',
    cancellationType: ActivityCancellationType.TRY_CANCEL,
    retry: backoff(3 + WORKER_LOSS_RETRIES),
  }),
);

/**
 * The delivery of a schedule's firing (src/workflows/scheduled.ts). Its message keeps its id across attempts, so
 * retrying a delivery that reached the session is a duplicate; a session that refuses it (disposed, invalid config)
 * fails the firing at once.
 */
export const scheduleActivities = sizeGuarded(
  proxyActivities<Pick<SessionActivities, 'deliverScheduled'>>({
    startToCloseTimeout: '1 minute',
    scheduleToCloseTimeout: '30 minutes',
    retry: backoff(10, '30 seconds'),
  }),
);
