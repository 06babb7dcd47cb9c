/**
 * The transcript projection: the model-visible messages derived from the log ("model-visible ⟺ logged", rule 14).
 * `user/message`, `assistant/message` (interrupted ones keep their visible text), `tool/result` and the snapshot a
 * forked session starts with (`session/forked`) are visible;
 * inbox splices, turn and step boundaries are not. Direct input and context differ only by `source` (rule 35).
 * A `compaction/summary` replaces every entry logged up to its `throughSeq` with one summary message.
 * Pure; the same fold runs incrementally in the workflow and over a whole log in tests.
 */
import type { EventDataMap, SessionEvent } from './events';
import {
  assistantEntry,
  EMPTY_TRANSCRIPT_HASH,
  extendHash,
  summaryEntry,
  toolEntry,
  userEntry,
  type TranscriptEntry,
} from './entry';

export {
  assistantEntry,
  EMPTY_TRANSCRIPT_HASH,
  extendHash,
  toolEntry,
  userEntry,
  type TranscriptEntry,
} from './entry';

/**
 * Incremental projection state. A run of the workflow holds only the entries it added itself: `base` entries
 * came before it (earlier runs of the continue-as-new chain) and are reached through `previousRunId`. `hash`
 * covers all `base + entries.length` entries, so a reader can check a prefix it assembled elsewhere.
 */
export interface TranscriptState {
  entries: TranscriptEntry[];
  /**
   * The log seq of the event that added each of `entries` (a fork's snapshot entries share seq 0); for a
   * compaction's summary, the `throughSeq` it stands for.
   */
  seqs: number[];
  /**
   * Compactions so far (`compaction/summary`): each starts a new projection — the summary, then the entries kept —
   * with its own positions and hash from 0. Model requests name it, so a reader assembles the right one.
   */
  generation: number;
  /** Tool names of calls seen so far in this run (results lack names). */
  callNames: Record<string, string>;
  /** Number of entries before this run's first one. */
  base: number;
  /** Rolling hash of all entries so far (see extendHash). */
  hash: string;
  /** The run that holds the entries before `base`, if any. */
  previousRunId?: string;
}

export function emptyTranscript(): TranscriptState {
  return { entries: [], seqs: [], generation: 0, callNames: {}, base: 0, hash: EMPTY_TRANSCRIPT_HASH };
}

/** Total number of entries, earlier runs included. */
export function transcriptLength(state: TranscriptState): number {
  return state.base + state.entries.length;
}

function push(state: TranscriptState, entry: TranscriptEntry, seq: number): void {
  state.entries.push(entry);
  state.seqs.push(seq);
  state.hash = extendHash(state.hash, entry);
}

/**
 * A compaction: the projection becomes the summary, then the pinned message and the entries logged after
 * `throughSeq`, which the state must hold (the driver cuts only where it does: src/domain/compaction.ts). A new generation, positions from 0.
 */
function compact(state: TranscriptState, seq: number, data: EventDataMap['compaction/summary']): void {
  const keep = state.seqs.flatMap((s, i) => (s > data.throughSeq || s === data.pinned ? [i] : []));
  const kept = keep.map((i) => state.entries[i]!);
  const keptSeqs = keep.map((i) => state.seqs[i]!);
  state.entries = [];
  state.seqs = [];
  state.base = 0;
  state.hash = EMPTY_TRANSCRIPT_HASH;
  delete state.previousRunId;
  state.generation += 1;
  // The summary stands for everything up to throughSeq: a later cut after it summarises it with the rest.
  push(state, summaryEntry(seq, data), data.throughSeq);
  kept.forEach((entry, i) => push(state, entry, keptSeqs[i]!));
}

/** Folds one event into the projection (mutates and returns `state`). Unknown event types are skipped. */
export function projectEvent(state: TranscriptState, event: SessionEvent): TranscriptState {
  switch (event.type) {
    case 'user/message':
      push(state, userEntry(event.data.message), event.seq);
      break;
    case 'assistant/message':
      push(state, assistantEntry(event.data.message, event.data.interrupted), event.seq);
      break;
    case 'tool/call':
      state.callNames[event.data.callId] = event.data.name;
      break;
    case 'session/forked':
      for (const entry of event.data.messages) push(state, entry, event.seq);
      break;
    case 'tool/result':
      push(
        state,
        toolEntry(
          event.data.callId,
          state.callNames[event.data.callId] ?? 'unknown',
          event.data.content,
          event.data.error,
        ),
        event.seq,
      );
      break;
    case 'compaction/summary':
      compact(state, event.seq, event.data);
      break;
    default:
      break;
  }
  return state;
}

/** The model-visible messages of a whole log (or of its prefix up to a point). */
export function projectTranscript(events: Iterable<SessionEvent>): TranscriptEntry[] {
  const state = emptyTranscript();
  for (const e of events) projectEvent(state, e);
  return state.entries;
}
