/**
 * The transcript projection: the model-visible messages derived from the log ("model-visible ⟺ logged", rule 14).
 * `user/message`, `assistant/message` (interrupted ones keep their visible text), `tool/result` and the snapshot a
 * forked session starts with (`session/forked`) are visible;
 * inbox splices, turn and step boundaries are not. Direct input and context differ only by `source` (rule 35).
 * A `compaction/summary` replaces every entry logged up to its `throughSeq` with one summary message.
 * Pure; the same fold runs incrementally in the workflow and over a whole log in tests.
 */
import type { AssistantMessage, ErrorInfo, EventDataMap, SessionEvent, ToolCallInfo } from './events';
import type { ContentBlock, MessageSource, TextBlock, UserMessage } from './messages';
import { summaryEntry } from './compaction';

export type TranscriptEntry =
  | { role: 'user'; id: string; content: TextBlock[]; source: MessageSource }
  | { role: 'assistant'; id: string; content: TextBlock[]; toolCalls?: ToolCallInfo[]; interrupted?: true }
  | { role: 'tool'; callId: string; name: string; content: ContentBlock[]; error?: ErrorInfo };

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

export const EMPTY_TRANSCRIPT_HASH = '0';

export function emptyTranscript(): TranscriptState {
  return { entries: [], seqs: [], generation: 0, callNames: {}, base: 0, hash: EMPTY_TRANSCRIPT_HASH };
}

/** Total number of entries, earlier runs included. */
export function transcriptLength(state: TranscriptState): number {
  return state.base + state.entries.length;
}

/**
 * Rolling hash of a transcript: hash(prefix + entry) from hash(prefix) and the entry's JSON. A 53-bit string hash
 * (cyrb53), as hex; deterministic, no Node built-ins, so the workflow and the activities compute the same value.
 */
/**
 * `Math.imul`, read once. Inside the workflow sandbox every `Math.imul` lookup goes through the sandbox's guarded
 * globals, which made this hash ~55× slower there than outside (1.7 ms per step); a module-level binding avoids it.
 */
const imul = Math.imul;

export function extendHash(previous: string, entry: TranscriptEntry): string {
  const text = `${previous}|${JSON.stringify(entry)}`;
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    h1 = imul(h1 ^ ch, 2654435761);
    h2 = imul(h2 ^ ch, 1597334677);
  }
  h1 = imul(h1 ^ (h1 >>> 16), 2246822507) ^ imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = imul(h2 ^ (h2 >>> 16), 2246822507) ^ imul(h1 ^ (h1 >>> 13), 3266489909);
  return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(16);
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

/** The entry of a `user/message`. */
export function userEntry(m: UserMessage): TranscriptEntry {
  return { role: 'user', id: m.id, content: [...m.content], source: m.source };
}

/** The entry of an `assistant/message`. */
export function assistantEntry(m: AssistantMessage, interrupted?: boolean): TranscriptEntry {
  const entry: TranscriptEntry = { role: 'assistant', id: m.id, content: m.content };
  if (m.toolCalls?.length) entry.toolCalls = m.toolCalls;
  if (interrupted) entry.interrupted = true;
  return entry;
}

/** The entry of a `tool/result` (`name` from its `tool/call`). */
export function toolEntry(
  callId: string,
  name: string,
  content: ContentBlock[],
  error: ErrorInfo | undefined,
): TranscriptEntry {
  const entry: TranscriptEntry = { role: 'tool', callId, name, content };
  if (error) entry.error = error;
  return entry;
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
