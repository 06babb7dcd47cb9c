/**
 * Resolving the entries a model request sends by reference (src/domain/entryRefs.ts). The worker's `EntryStore` is
 * filled by the workflow itself, through the `transcriptRefs` sink (registered with `callDuringReplay`, so a worker
 * that replays a session fills it again); a reference it lacks — the request runs on another worker, or after a
 * restart or an eviction — is read from the run's history (./historyContext.ts). Every resolved entry is checked
 * against the reference's hash, and the request's own hash check (./transcriptCache.ts) then covers them all. A
 * reference neither yields fails the activity with the non-retryable `TranscriptRefMiss`: the workflow sends the
 * request again with every entry inline. Does I/O.
 */
import { ApplicationFailure } from '@temporalio/common';
import { FailureTypes } from '../contract';
import { checked, isEntryRef, type RefTarget } from '../domain/entryRefs';
import type { TranscriptEntry } from '../domain/transcript';
import type { ModelStepInput } from './types';

/** Reads the referenced entries from the history of run `runId` of a session; by seq, those it found. */
export type RefReader = (
  sessionId: string,
  runId: string,
  refs: readonly RefTarget[],
) => Promise<Map<number, TranscriptEntry>>;

export interface EntryStoreOptions {
  /** Most sessions kept; the least recently filled is dropped first. */
  maxSessions?: number;
}

/**
 * Entries the workflows on this worker send by reference, by continue-as-new chain and seq. A session's model
 * requests run one after another, so a chain keeps only the entries of its latest request (a retry of that request
 * still finds them).
 */
export class EntryStore {
  private readonly chains = new Map<string, Map<number, TranscriptEntry>>();
  /** Counters for tests and benchmarks: lookups that found an entry, and lookups that did not. */
  readonly stats = { hits: 0, misses: 0 };

  constructor(private readonly options: EntryStoreOptions = {}) {}

  /** The sink's side: the entries one request of chain `chainId` sends by reference. */
  remember(chainId: string, entries: readonly { seq: number; entry: TranscriptEntry }[]): void {
    const kept = new Map(entries.map(({ seq, entry }) => [seq, entry]));
    this.chains.delete(chainId);
    this.chains.set(chainId, kept);
    const max = this.options.maxSessions ?? 1000;
    while (this.chains.size > max) this.chains.delete(this.chains.keys().next().value as string);
  }

  get(chainId: string, seq: number): TranscriptEntry | undefined {
    const entry = this.chains.get(chainId)?.get(seq);
    if (entry) this.stats.hits += 1;
    else this.stats.misses += 1;
    return entry;
  }

  /** Forgets everything (what a restarted worker starts with). */
  clear(): void {
    this.chains.clear();
  }
}

/** Resolves a request's new entries: inline ones as they are, references from the store or the run's history. */
export class EntryRefResolver {
  /** Counters for tests and benchmarks: references resolved from the store, from history, and misses. */
  readonly stats = { fromStore: 0, fromHistory: 0, misses: 0 };

  constructor(
    readonly store: EntryStore,
    private readonly read: RefReader,
  ) {}

  /** The request's new entries, all inline. Throws a non-retryable TranscriptRefMiss naming what it lacks. */
  async resolve(input: ModelStepInput): Promise<TranscriptEntry[]> {
    const out: (TranscriptEntry | undefined)[] = [];
    const missing: RefTarget[] = [];
    for (const e of input.newEntries) {
      if (!isEntryRef(e)) {
        out.push(e);
        continue;
      }
      const entry = checked(e.ref, this.store.get(input.chainId, e.ref.seq));
      if (entry) this.stats.fromStore += 1;
      else missing.push(e.ref);
      out.push(entry);
    }
    if (missing.length === 0) return out as TranscriptEntry[];
    let found = new Map<number, TranscriptEntry>();
    let why = '';
    try {
      found = await this.read(input.sessionId, input.runId, missing);
    } catch (err) {
      why = `: reading the run's history failed: ${err instanceof Error ? err.message : String(err)}`;
    }
    let refIndex = 0;
    const lacking: number[] = [];
    input.newEntries.forEach((e, i) => {
      if (!isEntryRef(e) || out[i]) return;
      const ref = missing[refIndex++]!;
      const entry = checked(ref, found.get(ref.seq));
      if (entry) {
        this.stats.fromHistory += 1;
        out[i] = entry;
      } else lacking.push(ref.seq);
    });
    if (lacking.length) {
      this.stats.misses += 1;
      throw ApplicationFailure.create({
        type: FailureTypes.TranscriptRefMiss,
        nonRetryable: true,
        message: `request ${input.requestIndex} of ${input.sessionId}: the entries of log events ${lacking.join(', ')} are neither in this worker's store nor found in run ${input.runId}'s history${why}`,
      });
    }
    return out as TranscriptEntry[];
  }
}
