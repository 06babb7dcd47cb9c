/**
 * The approval effects: `check-approvals` asks the worker's approval policy about a step's calls (one activity;
 * a failure is answered as data), and `await-approval` starts the session's approval timeout for one call. Decisions
 * themselves come through the `approve` update (./handlers.ts) and the driver. Deterministic (workflow sandbox).
 */
import { condition } from '@temporalio/workflow';
import { ErrorCodes } from '../contract';
import type { SessionDriver } from '../domain/driver';
import type { Answer, ApprovalCheck } from '../domain/effects';
import { setupActivities } from './activities';
import { failed } from './errors';

export async function checkApprovals(sessionId: string, check: ApprovalCheck): Promise<Answer> {
  try {
    const value = await setupActivities.checkApprovals.executeWithOptions(
      { summary: `check approvals ${check.calls.map((c) => `${c.name} #${c.callId}`).join(', ')}` },
      [{ sessionId, ...check }],
    );
    return { kind: 'ok', value };
  } catch (err) {
    return failed(err, ErrorCodes.ToolFailed);
  }
}

/**
 * The session's approval timeout for one call: a durable timer (no activity, no polling) that resolves the call
 * `by:'timeout'` unless a decision or a cancel comes first; the condition cancels its timer when it does.
 */
export function approvalTimer(driver: SessionDriver, callId: string, timeoutMs: number | undefined): void {
  if (timeoutMs === undefined) return;
  const core = driver.core;
  condition(() => core.approvalOf(callId)?.status !== 'pending', timeoutMs, {
    summary: `approval of #${callId}`,
  }).then(
    (decided) => {
      if (!decided) driver.approvalTimedOut(callId);
    },
    // The turn was cancelled: the cancel resolves the approval.
    () => undefined,
  );
}
