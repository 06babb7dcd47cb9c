/**
 * Paged reads of one run's log and transcript (the `events` query and the internal `__modelContext` query). A run
 * holds only what it added itself; earlier runs of the continue-as-new chain hold the rest and are named by
 * `previousRunId`. Pages stop before they pass PAGE_BYTES of JSON, so a query answer stays within Temporal's
 * payload limits whatever the session's length. Pure.
 */
import type { SessionEvent } from './events';
import type { TranscriptEntry, TranscriptState } from './transcript';
import { describeZodIssue } from './util';
import { DEFAULT_EVENTS_LIMIT, EventsQuerySchema } from './wire';

/** Largest JSON size of one page. */
export const PAGE_BYTES = 1024 * 1024;

export interface EventsPage {
  events: SessionEvent[];
  /** Seq of the last event in the whole log (-1 when the log is empty). */
  lastSeq: number;
  /** Seq of the first event this run holds; earlier events are in `previousRunId` (continue-as-new chain). */
  firstSeq: number;
  previousRunId?: string;
}

/** A page of model-visible entries held by one run (answer of the internal `modelContext` query). */
export interface ModelContextPage {
  /** Entries with index in [from, to) that this run holds, in order, starting at index `max(from, base)`. */
  entries: TranscriptEntry[];
  /** Index of this run's first entry; entries before it live in `previousRunId`. */
  base: number;
  previousRunId?: string;
}

/** The `events` query over one run's log. Throws an Error naming the field for a bad query. */
export function eventsPage(
  raw: unknown,
  run: { log: readonly SessionEvent[]; firstSeq: number; lastSeq: number; previousRunId?: string },
): EventsPage {
  const parsed = EventsQuerySchema.safeParse(raw ?? {});
  if (!parsed.success)
    throw new Error(`invalid events query: ${describeZodIssue(parsed.error.issues, 'query')}`);
  const afterSeq = parsed.data.afterSeq ?? -1;
  const limit = parsed.data.limit ?? DEFAULT_EVENTS_LIMIT;
  const from = Math.max(0, afterSeq + 1 - run.firstSeq);
  return {
    events: takePage(run.log, from, limit),
    lastSeq: run.lastSeq,
    firstSeq: run.firstSeq,
    ...(run.previousRunId ? { previousRunId: run.previousRunId } : {}),
  };
}

/** Model-visible entries [from, to) one run holds (for model activities whose cache missed). */
export function modelContextPage(
  range: { from: number; to: number } | undefined,
  transcript: TranscriptState,
  previousRunId: string | undefined,
): ModelContextPage {
  const { base, entries } = transcript;
  const from = Math.max(0, Math.floor(Number(range?.from) || 0) - base);
  const to = Math.min(entries.length, Math.floor(Number(range?.to) || 0) - base);
  return {
    entries: takePage(entries, from, Math.max(0, to - from)),
    base,
    ...(previousRunId ? { previousRunId } : {}),
  };
}

/** A slice of at most `limit` items from `from`, cut short before it passes PAGE_BYTES of JSON (at least one item). */
function takePage<T>(items: readonly T[], from: number, limit: number): T[] {
  const out: T[] = [];
  let bytes = 0;
  for (let i = from; i < items.length && out.length < limit; i++) {
    bytes += JSON.stringify(items[i]).length;
    if (out.length > 0 && bytes > PAGE_BYTES) break;
    out.push(items[i]!);
  }
  return out;
}

/** Reads one page of events with seq > afterSeq from a run (undefined: the latest), at most `limit` of them. */
export type EventsPageReader = (
  afterSeq: number,
  limit: number,
  runId: string | undefined,
) => Promise<EventsPage>;

/** Largest page the `events` query serves (it also stops at 1 MB of JSON). */
export const MAX_EVENTS_PAGE = 10_000;

/**
 * Events of one run (the latest when runId is undefined) with afterSeq < seq <= untilSeq, reading the runs before
 * it first (through `previousRunId`) when afterSeq lies before its first event. Used by `SessionClient.allEvents`
 * and by the worker's snapshot of a cross-session reference. Pages are as large as the session allows: a query to a
 * closed run replays that run on a worker, so fewer queries matter.
 */
export async function readEventsOfRun(
  read: EventsPageReader,
  afterSeq: number,
  runId: string | undefined,
  untilSeq: number,
): Promise<SessionEvent[]> {
  const out: SessionEvent[] = [];
  let after = afterSeq;
  let page = await read(after, MAX_EVENTS_PAGE, runId);
  if (after + 1 < page.firstSeq && page.previousRunId) {
    out.push(...(await readEventsOfRun(read, after, page.previousRunId, page.firstSeq - 1)));
  }
  for (;;) {
    out.push(...page.events.filter((e) => e.seq > after && e.seq <= untilSeq));
    const last = page.events.at(-1);
    if (!last || last.seq >= Math.min(page.lastSeq, untilSeq)) return out;
    after = last.seq;
    page = await read(after, MAX_EVENTS_PAGE, runId);
  }
}
