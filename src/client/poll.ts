/**
 * Following a session's log by polling: the one loop behind `SessionClient.watch` and `SessionClient.stream`, and
 * the abortable `delay` every poll and retry of the client (and the MCP turn wait) waits with. The loop reads new
 * events with the `events` query every `pollMs`; given a live-text reader (stream), it also reads the running model
 * step's text every `streamPollMs` while the log says a model call runs. Ends when `signal` aborts or the session
 * is disposed. Does I/O only through the readers it is given.
 */
import type { SessionEvent } from '../domain/events';
import { DeltaFold, type LiveText, type StreamItem } from './stream';
import { WatchFold, type WatchItem } from './watch';

/** Resolves after `ms` (at once for `ms` ≤ 0), or as soon as `signal` aborts; never rejects. */
export function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    signal?.addEventListener('abort', done, { once: true });
  });
}

export interface FollowOptions {
  /** Items are yielded for events after this seq (earlier ones are folded silently); default -1, all. */
  afterSeq?: number;
  /** How often the log is read (default 250 ms). */
  pollMs?: number;
  /** How often the live text is read while a model call runs (default 100 ms; with `liveText` only). */
  streamPollMs?: number;
  signal?: AbortSignal;
}

/** Where the loop reads: every event after a seq (all runs), and — to stream — the running step's text. */
export interface FollowReaders {
  events: (afterSeq: number) => Promise<SessionEvent[]>;
  liveText?: () => Promise<LiveText | undefined>;
}

/**
 * Yields every event after `afterSeq` with its derived inbox notifications (WatchFold) and, with a `liveText`
 * reader, `delta` items while a model step runs (DeltaFold). Without one, the log is read every round.
 */
export function follow(
  read: FollowReaders & { liveText?: undefined },
  opts: FollowOptions,
): AsyncGenerator<WatchItem>;
export function follow(read: FollowReaders, opts: FollowOptions): AsyncGenerator<StreamItem>;
export async function* follow(read: FollowReaders, opts: FollowOptions): AsyncGenerator<StreamItem> {
  const afterSeq = opts.afterSeq ?? -1;
  const pollMs = opts.pollMs ?? 250;
  const streamPollMs = opts.streamPollMs ?? 100;
  const fold = new WatchFold();
  const deltas = new DeltaFold();
  // Without a live-text reader no model call counts as running: the log is read every round.
  const { liveText } = read;
  const streaming = () => liveText !== undefined && deltas.modelRunning;
  let seen = -1;
  let eventsAt = -Infinity;
  while (!opts.signal?.aborted) {
    let fresh = 0;
    if (Date.now() - eventsAt >= pollMs || !streaming()) {
      const events = await read.events(seen);
      eventsAt = Date.now();
      fresh = events.length;
      for (const event of events) {
        seen = event.seq;
        // A step's answer may complete the text its deltas delivered: that last delta comes before the answer.
        const last = deltas.event(event);
        if (last) yield last;
        yield* fold.next(event, event.seq > afterSeq);
        if (event.type === 'session/disposed') return;
      }
    }
    if (liveText && deltas.modelRunning) {
      const live = await liveText();
      const delta = live && deltas.next(live);
      if (delta) yield delta;
    }
    if (fresh === 0) await delay(streaming() ? streamPollMs : pollMs, opts.signal);
  }
}
