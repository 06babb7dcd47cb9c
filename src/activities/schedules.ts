/**
 * The activity of a schedule's firing: delivers the schedule's prompt to its session as a followup through the
 * `deliver` update, starting the session with the schedule's config when it does not exist (update-with-start, as
 * SessionClient.deliverWithStart does). A disposed session is not started again: the firing fails, naming it. Not
 * deterministic: runs in activities.
 */
import { Context } from '@temporalio/activity';
import {
  WithStartWorkflowOperation,
  WorkflowExecutionAlreadyStartedError,
  WorkflowUpdateFailedError,
} from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { deliverUpdate, FailureTypes, WORKFLOW_TYPE } from '../contract';
import { sessionStartOptions } from '../contract/searchAttributes';
import type { ScheduledFollowup, DeliveryReceipt } from '../domain/wire';

export interface ScheduledDelivery extends ScheduledFollowup {
  /** The firing's workflow id: the message's id. */
  messageId: string;
}

export async function deliverScheduled(input: ScheduledDelivery): Promise<DeliveryReceipt> {
  const ctx = Context.current();
  const config = input.config ?? {};
  const message = {
    id: input.messageId,
    content: input.content,
    source: { kind: 'schedule', name: input.scheduleId },
  };
  try {
    return await ctx.client.workflow.executeUpdateWithStart(deliverUpdate, {
      args: [{ lane: 'followup', message }],
      startWorkflowOperation: new WithStartWorkflowOperation(input.workflowType ?? WORKFLOW_TYPE, {
        workflowId: input.sessionId,
        taskQueue: ctx.info.taskQueue,
        args: [config],
        ...sessionStartOptions(config, {
          searchAttributes: input.searchAttributes === true,
          now: new Date(),
        }),
        workflowIdConflictPolicy: 'USE_EXISTING',
        // A session that ended (disposed) stays ended: a schedule does not start a new one under its id.
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
      }),
    });
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) {
      throw ApplicationFailure.create({
        type: FailureTypes.SessionDisposed,
        nonRetryable: true,
        message: `session ${input.sessionId} has ended (disposed): schedule ${input.scheduleId} cannot deliver to it`,
      });
    }
    if (err instanceof WorkflowUpdateFailedError) {
      // The session refused the message (disposed, invalid): the same answer on every attempt.
      const cause = err.cause instanceof ApplicationFailure ? err.cause : undefined;
      throw ApplicationFailure.create({
        type: cause?.type ?? FailureTypes.InvalidPayload,
        nonRetryable: true,
        message: `session ${input.sessionId} refused the followup of schedule ${input.scheduleId}: ${cause?.message ?? err.message}`,
      });
    }
    throw err; // transient (the server, the network): retried with the same message id
  }
}
