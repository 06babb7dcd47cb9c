/**
 * The worker-side transcript cache behind model activities. A model request carries only the entries new since
 * the previous request plus the count and hash of the prefix; this cache holds each session's prefix, keyed by
 * its continue-as-new chain, and fills a miss (another worker, a restart, an eviction) by querying the workflow
 * runs that hold the entries. A prefix is used only when its hash matches the one the workflow computed, so a
 * retry or crash at any point still sends the model exactly the messages the log holds. Does I/O.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { ModelContextPage } from '../contract';
import { assembled, extended, hashed, holdsPrefix, type HashedEntries } from '../domain/requestAssembly';
import type { TranscriptEntry } from '../domain/transcript';
import type { ModelStepInput } from './types';

/**
 * Reads entries [from, to) of one projection generation (0 before any compaction) from one run of a session (the
 * `modelContext` query answers the run's current generation).
 */
export type ContextReader = (
  sessionId: string,
  runId: string,
  from: number,
  to: number,
  generation?: number,
) => Promise<ModelContextPage>;

/** What assembling a request's transcript needs: the run, the prefix, the new entries all inline, the hash. */
export type ResolvedModelStepInput = Pick<
  ModelStepInput,
  'sessionId' | 'chainId' | 'runId' | 'prefix' | 'hash' | 'generation'
> &
  Partial<Omit<ModelStepInput, 'newEntries'>> & { newEntries: TranscriptEntry[] };

interface Cached extends HashedEntries {
  lastUsed: number;
}

export interface TranscriptCacheOptions {
  /** Most sessions kept; the least recently used is dropped first. */
  maxSessions?: number;
}

export class TranscriptCache {
  private readonly sessions = new Map<string, Cached>();
  private clock = 0;
  /** Counters for tests and benchmarks. */
  readonly stats = { hits: 0, misses: 0, fetchedEntries: 0 };

  constructor(
    private readonly read: ContextReader,
    private readonly options: TranscriptCacheOptions = {},
  ) {}

  /**
   * The full model-visible transcript of a request whose references are resolved (./entryStore.ts). Throws a
   * retryable failure if the log cannot be matched.
   */
  async assemble(input: ResolvedModelStepInput): Promise<TranscriptEntry[]> {
    const whole = assembled(await this.prefix(input), input);
    if (!whole.ok) {
      this.sessions.delete(keyOf(input));
      throw ApplicationFailure.create({
        type: 'TranscriptMismatch',
        message: `transcript of ${input.sessionId} does not match the log at entry ${whole.at}`,
      });
    }
    this.store(keyOf(input), { ...whole.transcript, lastUsed: ++this.clock });
    return whole.transcript.entries;
  }

  /** A cached prefix covering at least `input.prefix` whose hash matches; fetched from the workflow on a miss. */
  private async prefix(input: ResolvedModelStepInput): Promise<Cached> {
    const { count } = input.prefix;
    const hit = this.sessions.get(keyOf(input));
    const generation = input.generation ?? 0;
    if (hit && holdsPrefix(hit, input.prefix)) {
      this.stats.hits += 1;
      return hit;
    }
    this.stats.misses += 1;
    // Usually only the tail is missing (the cache is behind): read just that, and check the result by its hash.
    if (hit && hit.hashes.length <= count) {
      const tail = await this.fetch(input.sessionId, input.runId, hit.entries.length, count, generation);
      const longer = extended(hit, hit.entries.length, tail);
      if (holdsPrefix(longer, input.prefix)) return { ...longer, lastUsed: ++this.clock };
    }
    const fetched = hashed(await this.fetch(input.sessionId, input.runId, 0, count, generation));
    if (!holdsPrefix(fetched, input.prefix)) {
      throw ApplicationFailure.create({
        type: 'TranscriptMismatch',
        message: `fetched transcript of ${input.sessionId} does not match the prefix hash at ${count}`,
      });
    }
    return { ...fetched, lastUsed: ++this.clock };
  }

  /** Entries [from, to), following the continue-as-new chain back through earlier runs. */
  private async fetch(
    sessionId: string,
    runId: string,
    from: number,
    to: number,
    generation: number,
  ): Promise<TranscriptEntry[]> {
    if (from >= to) return [];
    const out: TranscriptEntry[] = [];
    let next = from;
    while (next < to) {
      const page = await this.read(sessionId, runId, next, to, generation);
      if (next < page.base) {
        if (!page.previousRunId)
          throw new Error(`run ${runId} of ${sessionId} starts at ${page.base} with no earlier run`);
        out.push(...(await this.fetch(sessionId, page.previousRunId, next, page.base, generation)));
        next = page.base;
        continue;
      }
      if (page.entries.length === 0)
        throw new Error(`run ${runId} of ${sessionId} has no entries from ${next}`);
      out.push(...page.entries);
      next += page.entries.length;
      // Counted per page read, so entries of earlier runs (read by the recursive call) count once.
      this.stats.fetchedEntries += page.entries.length;
    }
    return out;
  }

  private store(key: string, value: Cached): void {
    this.sessions.delete(key);
    this.sessions.set(key, value);
    const max = this.options.maxSessions ?? 1000;
    while (this.sessions.size > max) this.sessions.delete(this.sessions.keys().next().value as string);
  }
}

/** The cache key of a request's projection: its chain, and its generation after a compaction. */
function keyOf(input: Pick<ResolvedModelStepInput, 'chainId' | 'generation'>): string {
  return input.generation ? `${input.chainId}#${input.generation}` : input.chainId;
}
