/**
 * The id windows: the accepted message ids the session remembers (idempotency, rule 4: a repeated id gets its first
 * receipt) with what became of each (claimed by a turn, discarded), and the turn ends remembered for callers that
 * wait on a message (`deliver` with `wait`). Both are bounded and carried across continue-as-new as tuples. Pure.
 */
import type { TurnEndReason } from '../events';
import type { Inbox } from '../inbox';
import type { DeliveryReceipt, Lane } from '../wire';
import type { RecentTuple, SessionSnapshot } from './snapshot';

/** How many accepted message ids are remembered for idempotency (rule 4); carried across continue-as-new. */
export const RECENT_ID_WINDOW = 4096;
/** How many turn ends are remembered for waiters (`deliver` with `wait`); carried across continue-as-new. */
export const TURN_END_WINDOW = 256;
/**
 * How much answer text the remembered turn ends carry across continue-as-new (characters, newest first; the newest
 * answer always goes): older turn ends keep their reason and seq. Without it 256 long answers could pass the 2 MB
 * a continue-as-new payload may hold, and the session could not continue.
 */
export const CARRIED_ANSWER_CHARS = 128 * 1024;

/** Where a delivered message is in its life, for a caller waiting on it. */
export type MessageOutcome =
  | { status: 'pending' }
  | { status: 'discarded' }
  | { status: 'running'; turn: number }
  | { status: 'ended'; turn: number; reason: TurnEndReason; seq: number; answer?: string };

interface Remembered {
  lane: Lane;
  seq?: number;
  turn?: number;
  discarded?: true;
}

export class IdWindows {
  private readonly recent: Map<string, Remembered>;
  private readonly turnEnds: Map<number, { reason: TurnEndReason; seq: number; answer?: string }>;

  constructor(snapshot: Pick<SessionSnapshot, 'recent' | 'turnEnds'>) {
    this.recent = new Map(snapshot.recent.map((tuple) => [tuple[0], fromTuple(tuple)]));
    this.turnEnds = new Map(
      (snapshot.turnEnds ?? []).map(([turn, reason, seq, answer]) => [
        turn,
        { reason, seq, ...(answer !== null ? { answer } : {}) },
      ]),
    );
  }

  /** The windows as a snapshot carries them (the newest answers up to CARRIED_ANSWER_CHARS). */
  encode(): Pick<SessionSnapshot, 'recent' | 'turnEnds'> {
    const recent = [...this.recent].map(([id, r]) => toTuple(id, r));
    let answerChars = 0;
    const turnEnds = [...this.turnEnds]
      .reverse()
      .map(([turn, e], i): NonNullable<SessionSnapshot['turnEnds']>[number] => {
        const answer = e.answer ?? null;
        if (answer === null) return [turn, e.reason, e.seq, null];
        answerChars += answer.length;
        return [turn, e.reason, e.seq, i === 0 || answerChars <= CARRIED_ANSWER_CHARS ? answer : null];
      })
      .reverse();
    return { recent, ...(turnEnds.length ? { turnEnds } : {}) };
  }

  has(id: string): boolean {
    return this.recent.has(id);
  }

  /** Remembers an accepted id; the oldest fall out of the window, but never one still pending in `inbox`. */
  remember(id: string, lane: Lane, inbox: Inbox, seq?: number): void {
    this.recent.set(id, seq === undefined ? { lane } : { lane, seq });
    if (this.recent.size <= RECENT_ID_WINDOW) return;
    const pending = new Set([...inbox.nextTurn, ...inbox.nextStep].map((m) => m.id));
    for (const oldest of this.recent.keys()) {
      if (this.recent.size <= RECENT_ID_WINDOW) break;
      if (!pending.has(oldest)) this.recent.delete(oldest);
    }
  }

  /** Adds what happened to a remembered id (claimed in a turn, discarded). */
  mark(id: string, what: { turn?: number; discarded?: true }): void {
    const seen = this.recent.get(id);
    if (seen) Object.assign(seen, what);
  }

  /** The receipt of an already accepted id, if it is within the recent window. */
  receiptOf(id: string): DeliveryReceipt | undefined {
    const seen = this.recent.get(id);
    if (!seen) return undefined;
    return {
      messageId: id,
      lane: seen.lane,
      duplicate: true,
      ...(seen.seq !== undefined ? { seq: seen.seq } : {}),
    };
  }

  /** Where an accepted message is in its life; undefined for an id outside the window. */
  outcomeOf(id: string): MessageOutcome | undefined {
    const seen = this.recent.get(id);
    if (!seen) return undefined;
    if (seen.discarded) return { status: 'discarded' };
    if (seen.turn === undefined) return { status: 'pending' };
    const ended = this.turnEnds.get(seen.turn);
    if (ended) return { status: 'ended', turn: seen.turn, ...ended };
    return { status: 'running', turn: seen.turn };
  }

  /** Remembers how a turn ended (its `turn/end` seq and answer); the oldest fall out of the window. */
  turnEnded(turn: number, end: { reason: TurnEndReason; seq: number; answer?: string }): void {
    this.turnEnds.set(turn, end);
    for (const old of this.turnEnds.keys()) {
      if (this.turnEnds.size <= TURN_END_WINDOW) break;
      this.turnEnds.delete(old);
    }
  }

  /** The last turn that ended (within the remembered window) and how it ended. */
  lastTurnEnd(): { turn: number; reason: TurnEndReason } | undefined {
    let last: { turn: number; reason: TurnEndReason } | undefined;
    for (const [turn, end] of this.turnEnds)
      if (!last || turn > last.turn) last = { turn, reason: end.reason };
    return last;
  }
}

function fromTuple([, lane, seq, turn, discarded]: RecentTuple): Remembered {
  const r: Remembered = { lane };
  if (typeof seq === 'number') r.seq = seq;
  if (typeof turn === 'number') r.turn = turn;
  if (discarded === 1) r.discarded = true;
  return r;
}

function toTuple(id: string, r: Remembered): RecentTuple {
  if (r.discarded) return [id, r.lane, r.seq ?? null, r.turn ?? null, 1];
  if (r.turn !== undefined) return [id, r.lane, r.seq ?? null, r.turn];
  return r.seq === undefined ? [id, r.lane] : [id, r.lane, r.seq];
}
