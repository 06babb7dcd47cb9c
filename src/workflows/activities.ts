/**
 * Activity proxies with their timeouts and retry policies. Type-only import of the activities (sandbox rule).
 * Model and tool activities heartbeat, so a cancel reaches them within a heartbeat; the default cancellation type
 * (wait for completion) lets a cancelled call settle and commit its result (rule 29).
 */
import { ActivityCancellationType, proxyActivities } from '@temporalio/workflow';
import type { SessionActivities } from '../activities';
import { FailureTypes } from '../contract';

const nonRetryableErrorTypes = [
  FailureTypes.ModelRequestInvalid,
  FailureTypes.UnknownTool,
  FailureTypes.ScriptedFailure,
  FailureTypes.InvalidPayload,
  FailureTypes.ModelAuthFailed,
  FailureTypes.UnknownHook,
  FailureTypes.HookInvalidOutput,
];

export const modelActivities = proxyActivities<Pick<SessionActivities, 'modelStep'>>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '10 seconds',
  // Set explicitly: an unset cancellation type reaches the server as TRY_CANCEL, which reports the cancel at once.
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    maximumAttempts: 5,
    nonRetryableErrorTypes,
  },
});

export const toolActivities = proxyActivities<Pick<SessionActivities, 'executeTool'>>({
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '10 seconds',
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    maximumAttempts: 3,
    nonRetryableErrorTypes,
  },
});

export const setupActivities = proxyActivities<Pick<SessionActivities, 'describeTools' | 'describeHooks'>>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumAttempts: 5, nonRetryableErrorTypes },
});

/**
 * Hook calls (pre-step listeners and post-tool hooks). Fewer attempts than model calls: a hook that keeps failing
 * ends its turn (pre-step) or withholds its tool's result (post-tool) within seconds. A cancelled hook has no
 * result to commit, so the workflow does not wait for it to settle.
 */
export const hookActivities = proxyActivities<Pick<SessionActivities, 'preStepHook' | 'postToolHook'>>({
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '10 seconds',
  cancellationType: ActivityCancellationType.TRY_CANCEL,
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    maximumAttempts: 3,
    nonRetryableErrorTypes,
  },
});
