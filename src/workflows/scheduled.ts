/**
 * One firing of a schedule (`agent-sessions schedule`, SessionClient.schedules): a short workflow that Temporal's
 * schedule starts, whose only step is an activity delivering the schedule's prompt to its session as a followup —
 * starting the session when it does not exist. The message id is this firing's workflow id (the schedule's id and
 * the scheduled time), so a retried delivery, or the same firing started again, is a duplicate and not a second turn.
 * Deterministic (workflow sandbox).
 */
import { ApplicationFailure, workflowInfo } from '@temporalio/workflow';
import { FailureTypes } from '../contract';
import { describeZodIssue } from '../domain/util';
import { ScheduledFollowupSchema, type DeliveryReceipt } from '../domain/wire';
import { scheduleActivities } from './activities';

export async function scheduledFollowup(input: unknown): Promise<DeliveryReceipt> {
  const parsed = ScheduledFollowupSchema.safeParse(input);
  if (!parsed.success) {
    // A firing with a bad argument (a schedule made by hand, not through the client) fails, naming the field; the
    // schedule's recent actions show it. Nothing is delivered.
    throw ApplicationFailure.create({
      type: FailureTypes.InvalidPayload,
      nonRetryable: true,
      message: `invalid scheduled followup: ${describeZodIssue(parsed.error.issues, 'input')}`,
    });
  }
  return scheduleActivities.deliverScheduled({ ...parsed.data, messageId: workflowInfo().workflowId });
}
