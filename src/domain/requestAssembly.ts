/**
 * How a model request's whole transcript is assembled (docs/decisions: history grows with new content only): the
 * reader holds a prefix of the projection with its rolling hashes, the request names the prefix it builds on (count
 * and hash) and sends the entries new since; the prefix must match by its hash, the new entries are appended, and
 * the whole must match the request's hash (rule 14: the model sees exactly the model-visible part of the log). A
 * compaction's projection is assembled the same way. Pure: the worker's transcript cache
 * (src/activities/transcriptCache.ts) and the in-memory test interpreter share it.
 */
import { EMPTY_TRANSCRIPT_HASH, extendHash, type TranscriptEntry } from './entry';

/** Entries with their rolling hashes: `hashes[i]` is the hash of the first `i` entries (one more hash than entries). */
export interface HashedEntries {
  entries: TranscriptEntry[];
  hashes: string[];
}

/** What a request says of its transcript: the prefix it builds on, its new entries (inline), the whole's hash. */
export interface RequestShape {
  prefix: { count: number; hash: string };
  newEntries: readonly TranscriptEntry[];
  hash: string;
}

/** `base`'s first `count` entries (with their hashes), then `more`. */
export function extended(
  base: HashedEntries,
  count: number,
  more: readonly TranscriptEntry[],
): HashedEntries {
  const entries = base.entries.slice(0, count);
  const hashes = base.hashes.slice(0, count + 1);
  for (const e of more) {
    entries.push(e);
    hashes.push(extendHash(hashes[hashes.length - 1]!, e));
  }
  return { entries, hashes };
}

/** Entries hashed from the start. */
export function hashed(entries: readonly TranscriptEntry[]): HashedEntries {
  return extended({ entries: [], hashes: [EMPTY_TRANSCRIPT_HASH] }, 0, entries);
}

/** The rolling hash of a whole transcript. */
export function transcriptHash(entries: readonly TranscriptEntry[]): string {
  return hashed(entries).hashes[entries.length]!;
}

/** Whether `known` holds the prefix a request builds on: at least `count` entries, the first `count` hashing to it. */
export function holdsPrefix(known: HashedEntries, prefix: RequestShape['prefix']): boolean {
  return known.hashes.length > prefix.count && known.hashes[prefix.count] === prefix.hash;
}

/**
 * A request's whole transcript from the prefix `known` holds and the request's new entries, or which check failed:
 * `prefix` (`known` does not hold the prefix) or `request` (the whole does not hash to the request's hash; `at` is
 * the assembled length).
 */
export function assembled(
  known: HashedEntries,
  request: RequestShape,
): { ok: true; transcript: HashedEntries } | { ok: false; mismatch: 'prefix' | 'request'; at: number } {
  if (!holdsPrefix(known, request.prefix)) return { ok: false, mismatch: 'prefix', at: request.prefix.count };
  const transcript = extended(known, request.prefix.count, request.newEntries);
  if (transcript.hashes[transcript.entries.length] !== request.hash)
    return { ok: false, mismatch: 'request', at: transcript.entries.length };
  return { ok: true, transcript };
}
