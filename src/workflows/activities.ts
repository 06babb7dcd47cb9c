/**
 * Activity proxies with their timeouts and retry policies. Type-only import of the activities (sandbox rule).
 */
import { proxyActivities } from '@temporalio/workflow';
import type { SessionActivities } from '../activities';
import { FailureTypes } from '../contract';

const nonRetryableErrorTypes = [
  FailureTypes.ModelRequestInvalid,
  FailureTypes.UnknownTool,
  FailureTypes.ScriptedFailure,
  FailureTypes.InvalidPayload,
];

export const modelActivities = proxyActivities<Pick<SessionActivities, 'modelStep'>>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 5, nonRetryableErrorTypes },
});

export const toolActivities = proxyActivities<Pick<SessionActivities, 'executeTool'>>({
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 3, nonRetryableErrorTypes },
});

export const setupActivities = proxyActivities<Pick<SessionActivities, 'describeTools'>>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumAttempts: 5, nonRetryableErrorTypes },
});
