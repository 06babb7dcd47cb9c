/**
 * A `delegate` tool call (docs/protocol.md "Sub-sessions"): the child session is a child workflow of this type, on
 * this task queue, terminated if this session closes first; it gets the task as a followup, ends itself after the
 * task's turn and returns that turn's outcome. Deterministic (workflow sandbox).
 */
import {
  CancellationScope,
  ChildWorkflowCancellationType,
  ParentClosePolicy,
  startChild,
  type WorkflowInfo,
} from '@temporalio/workflow';
import { cancelSignal, ErrorCodes, followupSignal } from '../contract';
import {
  delegateFailure,
  delegateOutcome,
  type DelegateSettled,
  type DelegateStart,
  type SubsessionOutcome,
} from '../domain/subsession';
import type { SessionConfig } from '../domain/wire';
import { errorInfo } from './errors';
import { oversized } from './payloadGuard';

/**
 * Starts the child session, sends it the task and waits for the child to finish. A cancel of the turn sends the
 * child `cancel` (its turn aborts or its task is discarded) and the call settles ABORTED once the child has ended.
 * Never throws.
 */
export function delegate(info: WorkflowInfo, d: DelegateStart): Promise<DelegateSettled> {
  const turnScope = CancellationScope.current();
  return CancellationScope.nonCancellable(async () => {
    try {
      const tooLarge = oversized('sub-session start', [d.config]);
      if (tooLarge) throw tooLarge;
      const handle = await startChild<(config: SessionConfig) => Promise<SubsessionOutcome | undefined>>(
        info.workflowType,
        {
          workflowId: d.session,
          args: [d.config],
          taskQueue: info.taskQueue,
          parentClosePolicy: ParentClosePolicy.TERMINATE,
          cancellationType: ChildWorkflowCancellationType.ABANDON,
          staticSummary: `sub-session of ${info.workflowId} (call ${d.config.subsession?.callId ?? ''})`,
        },
      );
      await handle.signal(followupSignal, { message: d.message });
      let canceled = false;
      let ended = false;
      turnScope.cancelRequested.catch(() => {
        // A cancel of the turn after the child ended (a later step) sends nothing.
        if (ended) return;
        canceled = true;
        handle.signal(cancelSignal, {}).catch(() => undefined);
      });
      const outcome = await handle.result().finally(() => (ended = true));
      return delegateOutcome(outcome ?? undefined, canceled);
    } catch (err) {
      return delegateFailure(errorInfo(err, ErrorCodes.SubsessionFailed));
    }
  });
}
