/**
 * The continue-as-new carry (rule 33): what a run hands to the next one — the core's snapshot and references
 * instead of content (earlier runs keep their events and transcript entries and answer queries for them) — and how
 * the next run restores its transcript from it. Pure.
 */
import type { ContextMeter } from '../compaction';
import type { TranscriptEntry } from '../entry';
import type { SessionCore, SessionSnapshot } from '../session';
import { emptyTranscript, transcriptLength, type TranscriptState } from '../transcript';

/**
 * What a run hands to the next one across continue-as-new (rule 33): the core's snapshot (inbox, counters, recent
 * ids, seq), and references instead of content — the earlier runs keep their events and transcript entries and
 * answer queries for them, so the carried state stays small whatever the session's length.
 */
export interface CarriedSession {
  snapshot: SessionSnapshot;
  /**
   * The transcript's hash, and the entries no model request has sent yet (usually the last answer), which the new
   * run holds from index `base` on: every entry then reaches some model request's input, so a run's history holds
   * all of its transcript (src/activities/historyContext.ts). Runs carried before `entries` existed omit it.
   */
  transcript: {
    base: number;
    hash: string;
    entries?: TranscriptEntry[];
    /** The log seq that added each of `entries`. */
    seqs?: number[];
    /** Compactions so far (absent: none). */
    generation?: number;
  };
  /** Count and hash of the transcript prefix the last model request saw. */
  sent: { count: number; hash: string };
  /** The projection's token count so far (sessions with `context`). */
  context?: ContextMeter;
  previousRunId: string;
}

/** Default number of events a run may log before it continues as new at the next quiet point. */
export const DEFAULT_CONTINUE_AS_NEW_AFTER_EVENTS = 10_000;

/** The transcript a run starts with: empty, or the carried entries from their `base` on. */
export function restoredTranscript(carried: CarriedSession | undefined): TranscriptState {
  const transcript: TranscriptState = emptyTranscript();
  if (carried) {
    transcript.base = carried.transcript.base;
    transcript.hash = carried.transcript.hash;
    transcript.entries = [...(carried.transcript.entries ?? [])];
    transcript.seqs = carried.transcript.seqs ?? transcript.entries.map(() => 0);
    transcript.generation = carried.transcript.generation ?? 0;
    transcript.previousRunId = carried.previousRunId;
  }
  return transcript;
}

/**
 * The state the next run starts from. Entries no request has sent move to the next run, whose first request sends
 * them as new entries; the ones before stay in this run's history (its requests' inputs) and state (the
 * modelContext query). A session with a token budget also carries the newest entries a compaction would keep
 * (`keptTail`), which the next run must hold, and its token count (`context`).
 */
export function carryState(
  core: SessionCore,
  sent: { count: number; hash: string },
  previousRunId: string,
  tokenBudget?: { keptTail: number; tokens: number },
): CarriedSession {
  const t = core.transcript;
  let from = Math.max(t.base, sent.count);
  if (tokenBudget) from = Math.min(from, tokenBudget.keptTail);
  const carried = t.entries.slice(from - t.base);
  const generation = t.generation ? { generation: t.generation } : {};
  return {
    snapshot: core.snapshot,
    transcript: {
      base: from,
      hash: t.hash,
      entries: carried,
      seqs: t.seqs.slice(from - t.base),
      ...generation,
    },
    sent,
    ...(tokenBudget ? { context: { tokens: tokenBudget.tokens, count: transcriptLength(t) } } : {}),
    previousRunId,
  };
}
