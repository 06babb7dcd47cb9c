/**
 * Approvals: the tool calls of the open turn that wait for a person's decision, and a bounded window of resolved
 * ones (an `approve` that repeats a decision is told `duplicate`). It never writes the log: the core appends the
 * `tool/approval-requested` / `tool/approval-resolved` events around these changes. Pure.
 */
import type { ApprovalDecision, ApprovalRequest, ApprovalResolvedBy, EventDataMap } from '../events';
import { SessionStateError } from './snapshot';

/** How many resolved approvals are remembered (an `approve` that repeats a decision is told `duplicate`). */
export const RESOLVED_APPROVAL_WINDOW = 1024;

/** A tool call waiting for a person's decision (the `state` query lists them). */
export interface PendingApproval extends ApprovalRequest {
  /** Seq of its `tool/approval-requested` event. */
  seq: number;
}

/** Where an approval is: waiting, or resolved (by whom, how). */
export type ApprovalStatus =
  | { status: 'pending'; request: PendingApproval }
  | { status: 'resolved'; decision: ApprovalDecision; by: ApprovalResolvedBy; reason?: string };

export class Approvals {
  private readonly pending = new Map<string, PendingApproval>();
  private readonly resolved = new Map<
    string,
    { decision: ApprovalDecision; by: ApprovalResolvedBy; reason?: string }
  >();

  /** A call now waits (its request event gets `seq`); throws a SessionStateError for a call asked twice. */
  request(data: ApprovalRequest, seq: number): void {
    if (this.pending.has(data.callId) || this.resolved.has(data.callId))
      throw new SessionStateError(`approval of ${data.callId} requested twice`);
    this.pending.set(data.callId, { ...data, seq });
  }

  /** Resolves a pending approval and returns its `tool/approval-resolved` data; undefined when not pending. */
  resolve(
    callId: string,
    decision: ApprovalDecision,
    by: ApprovalResolvedBy,
    reason?: string,
  ): EventDataMap['tool/approval-resolved'] | undefined {
    const pending = this.pending.get(callId);
    if (!pending) return undefined;
    this.pending.delete(callId);
    const resolved = { decision, by, ...(reason !== undefined ? { reason } : {}) };
    this.resolved.set(callId, resolved);
    for (const oldest of this.resolved.keys()) {
      if (this.resolved.size <= RESOLVED_APPROVAL_WINDOW) break;
      this.resolved.delete(oldest);
    }
    return { turn: pending.turn, step: pending.step, callId, ...resolved };
  }

  /** Ids of the calls waiting, oldest first. */
  pendingIds(): string[] {
    return [...this.pending.keys()];
  }

  /** Tool calls waiting for a decision, oldest first. */
  list(): PendingApproval[] {
    return [...this.pending.values()].map((a) => ({ ...a }));
  }

  /** Where the approval of a call is; undefined for a call that never needed one (or fell out of the window). */
  statusOf(callId: string): ApprovalStatus | undefined {
    const pending = this.pending.get(callId);
    if (pending) return { status: 'pending', request: { ...pending } };
    const resolved = this.resolved.get(callId);
    return resolved ? { status: 'resolved', ...resolved } : undefined;
  }
}
