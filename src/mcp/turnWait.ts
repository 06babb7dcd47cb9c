/**
 * Waiting for the end of a turn from outside the session, for the MCP `wait_for_turn` tool: polls the `state` and
 * `events` queries (as `SessionClient.watch` does) until a `turn/end` after a given seq appears, the session is idle
 * with nothing queued, it is disposed, or the deadline passes. Does I/O (queries); never throws on a timeout.
 */
import { delay, type SessionClient } from '../client';
import type { SessionEvent, TurnEndReason } from '../domain/events';
import { textOf } from '../domain/messages';

/** How a wait ended. `ended` carries the turn's end reason and answer (its last assistant text), as `ask` does. */
export type TurnWaitResult =
  | { status: 'ended'; turn: number; reason: TurnEndReason; seq: number; answer?: string }
  | { status: 'idle'; turn: number; lastSeq: number }
  | { status: 'disposed'; lastSeq: number }
  | { status: 'timeout'; turn: number; sessionStatus: string; lastSeq: number };

export interface TurnWaitOptions {
  /** Wait for the first turn that ends after this seq (e.g. a delivery receipt's `seq`); default: the log's end now. */
  afterSeq?: number;
  timeoutMs: number;
  /** How often the queries are repeated (default 250 ms). */
  pollMs?: number;
  /** Stops the wait early (the MCP request was cancelled); answers like a timeout. */
  signal?: AbortSignal;
  /** Called about every `progressEveryMs` while waiting, with the milliseconds waited. */
  onProgress?: (waitedMs: number) => Promise<void> | void;
  progressEveryMs?: number;
}

/**
 * Waits for the first `turn/end` with seq > afterSeq. Returns `idle` at once when no such turn has ended and the
 * session is idle with no follow-up queued (nothing will start a turn by itself), `disposed` when it was disposed,
 * `timeout` after `timeoutMs`. Throws what the client's queries throw (SessionNotFoundError, …).
 */
export async function waitForTurn(
  sessions: SessionClient,
  sessionId: string,
  opts: TurnWaitOptions,
): Promise<TurnWaitResult> {
  const started = Date.now();
  const deadline = started + opts.timeoutMs;
  const pollMs = opts.pollMs ?? 250;
  const progressEveryMs = opts.progressEveryMs ?? 5_000;
  let lastProgress = started;
  let cursor = opts.afterSeq ?? (await sessions.events(sessionId, -1, 1)).lastSeq;
  const from = cursor;
  /** The last assistant text of each turn seen since `from`. */
  const answers = new Map<number, string>();
  for (;;) {
    // State first, then events: a session idle at the state read has logged every turn end before it.
    const state = await sessions.state(sessionId);
    const events = await sessions.allEvents(sessionId, cursor);
    for (const event of events) {
      cursor = event.seq;
      if (event.type === 'assistant/message')
        answers.set(event.data.turn, textOf(event.data.message.content));
      if (event.type === 'session/disposed') return { status: 'disposed', lastSeq: event.seq };
      if (event.type === 'turn/end') {
        const { turn, reason } = event.data;
        const answer = answers.get(turn) ?? (await earlierAnswer(sessions, sessionId, turn, from));
        return { status: 'ended', turn, reason, seq: event.seq, ...(answer !== undefined ? { answer } : {}) };
      }
    }
    if (state.status === 'disposed') return { status: 'disposed', lastSeq: cursor };
    if (state.status === 'idle' && state.pending.nextTurn.length === 0)
      return { status: 'idle', turn: state.turn, lastSeq: cursor };
    const now = Date.now();
    if (now >= deadline || opts.signal?.aborted)
      return { status: 'timeout', turn: state.turn, sessionStatus: state.status, lastSeq: cursor };
    if (opts.onProgress && now - lastProgress >= progressEveryMs) {
      lastProgress = now;
      await opts.onProgress(now - started);
    }
    await delay(Math.min(pollMs, deadline - now), opts.signal);
  }
}

/**
 * The last assistant text of `turn` logged at or before `beforeSeq` (the wait began inside the turn), reading back
 * in growing windows until the turn's `turn/start`. Undefined when the turn has no assistant message.
 */
async function earlierAnswer(
  sessions: SessionClient,
  sessionId: string,
  turn: number,
  beforeSeq: number,
): Promise<string | undefined> {
  let until = beforeSeq;
  for (let window = 64; until > -1; window *= 4) {
    const after = Math.max(-1, until - window);
    const events: SessionEvent[] = (await sessions.allEvents(sessionId, after)).filter((e) => e.seq <= until);
    for (let i = events.length - 1; i >= 0; i--) {
      const event = events[i]!;
      if (event.type === 'assistant/message' && event.data.turn === turn)
        return textOf(event.data.message.content);
      if (event.type === 'turn/start' && event.data.turn === turn) return undefined;
    }
    until = after;
  }
  return undefined;
}
