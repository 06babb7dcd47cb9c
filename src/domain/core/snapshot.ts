/**
 * The core's state as a plain serializable snapshot (everything but the log itself): what a run carries across
 * continue-as-new, and what SessionCore reads and writes. The id windows and the ledger keep their parts of it
 * (./idWindows.ts, ./ledger.ts). Pure.
 */
import type { CancelCause, TurnEndReason } from '../events';
import { EMPTY_INBOX, type Inbox } from '../inbox';
import type { BudgetLimits, Lane } from '../wire';

/**
 * A remembered id in a snapshot: `[id, lane, seq?, turn?, discarded?]` — the seq of its insertion splice (null for
 * ids a pre-step listener added), the turn that claimed it (null until claimed), 1 if a cancel discarded it.
 * Snapshots written before these fields existed hold `[id, lane]`.
 */
export type RecentTuple = [string, Lane, ...(number | null)[]];

export type SessionStatus = 'idle' | 'running' | 'disposed';

/** Token totals of one model (or of the whole session). */
export interface UsageTotals {
  inputTokens: number;
  outputTokens: number;
  /** Model answers that reported usage. */
  steps: number;
}

/** Serializable state of a session (everything but the log itself). */
export interface SessionSnapshot {
  nextSeq: number;
  turn: number;
  step: number;
  turnOpen: boolean;
  stepOpen: boolean;
  inbox: Inbox;
  /** Ids of pending `next-step` messages that came by `steer` (they wake; injected ones do not). */
  wakingIds: string[];
  suspended: boolean;
  /**
   * Accepted ids, oldest first, with the lane that accepted them and the seq of the splice that inserted them
   * (absent for ids a pre-step listener added, and in snapshots written before receipts carried a seq).
   */
  recent: RecentTuple[];
  /** The most recent turn ends (at most TURN_END_WINDOW), for callers that wait for a message's turn. */
  turnEnds?: [turn: number, reason: TurnEndReason, seq: number, answer: string | null][];
  refused: number;
  lastRefusal?: string;
  /** Set while a cancel of the running turn is in progress (first cause wins). */
  canceling?: CancelCause;
  disposed: boolean;
  /** Model requests made so far in the whole session (the scripted model answers the n-th with step n). */
  modelRequests: number;
  /** Tokens the providers reported, per model label (`provider:model`, `default`), over the whole session. */
  usage?: Record<string, UsageTotals>;
  /** Committed model answers and tool results over the whole session (the budget's call counts). */
  ledger?: {
    modelCalls: number;
    toolCalls: number;
    costMicros?: number;
    inputTokens?: number;
    outputTokens?: number;
  };
  /** The budget limits in force (the config's, then as a person extended them). */
  budget?: BudgetLimits;
  /** Set while the open turn waits for a decision on its budget (`budget/exceeded` logged, `waits`). */
  budgetPause?: { turn: number; step: number };
  /** How the last budget pause ended (the driver reads it when the wait is over). */
  lastBudgetDecision?: 'extend' | 'deny';
}

export function initialSnapshot(): SessionSnapshot {
  return {
    nextSeq: 0,
    turn: 0,
    step: 0,
    turnOpen: false,
    stepOpen: false,
    inbox: EMPTY_INBOX,
    wakingIds: [],
    suspended: false,
    recent: [],
    refused: 0,
    disposed: false,
    modelRequests: 0,
  };
}

/** A state change the core refuses (a bug in its caller: the log stays well-formed). */
export class SessionStateError extends Error {
  override name = 'SessionStateError';
}

export function structuredCloneJson<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}
