/**
 * The `state` query's result (wire): the session's status, counters, pending lanes, refusals, usage, approvals and
 * budget, built from the core's parts. The driver adds the token budget's part (`context`). Pure.
 */
import type { PendingApproval } from './approvals';
import type { BudgetLimits, BudgetUsed } from '../wire';
import type { SessionSnapshot, SessionStatus, UsageTotals } from './snapshot';

/** The `state` query result (wire). */
export interface SessionStateView {
  status: SessionStatus;
  turn: number;
  step: number;
  pending: { nextTurn: string[]; nextStep: string[] };
  refused: number;
  lastRefusal?: string;
  /** Reported token usage over the whole session, in total and per model label. */
  usage: UsageTotals & { byModel: Record<string, UsageTotals> };
  /** Tool calls of the running turn that wait for a decision (the `approve` update), oldest first. */
  approvals: PendingApproval[];
  /** The session's budget, when it has one: limits, what is used and left, and whether it waits for a decision. */
  budget?: {
    limits: BudgetLimits;
    used: BudgetUsed;
    remaining: Partial<BudgetUsed>;
    paused?: { turn: number; step: number };
  };
  /**
   * A session with a token budget (`context`): what its next model request would hold, estimated as the session
   * decides compaction (docs/protocol.md "Compaction"), the budget, and how many compactions it has made.
   */
  context?: { tokens: number; maxTokens: number; compactions: number; messages: number };
}

export function stateView(
  s: SessionSnapshot,
  parts: {
    status: SessionStatus;
    usage: SessionStateView['usage'];
    approvals: PendingApproval[];
    budget: () => SessionStateView['budget'];
  },
): SessionStateView {
  const view: SessionStateView = {
    status: parts.status,
    turn: s.turn,
    step: s.step,
    pending: {
      nextTurn: s.inbox.nextTurn.map((m) => m.id),
      nextStep: s.inbox.nextStep.map((m) => m.id),
    },
    refused: s.refused,
    usage: parts.usage,
    approvals: parts.approvals,
  };
  if (s.lastRefusal !== undefined) view.lastRefusal = s.lastRefusal;
  const budget = parts.budget();
  if (budget) view.budget = budget;
  return view;
}
