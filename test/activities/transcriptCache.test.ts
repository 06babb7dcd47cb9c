/**
 * The worker-side transcript cache (src/activities/transcriptCache.ts) against an in-memory session log: a hit
 * reads nothing, a cache that is behind reads only the tail, an evicted or restarted cache rebuilds from the
 * workflow runs (following the continue-as-new chain), and a transcript that does not match the log's hash is
 * refused with TranscriptMismatch instead of reaching the model.
 */
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import type { ModelContextPage } from '../../src/contract';
import { TranscriptCache, type ContextReader } from '../../src/activities/transcriptCache';
import type { ResolvedModelStepInput } from '../../src/activities/transcriptCache';
import { EMPTY_TRANSCRIPT_HASH, extendHash, type TranscriptEntry } from '../../src/domain/transcript';

const user = (text: string): TranscriptEntry => ({
  role: 'user',
  id: text,
  content: [{ type: 'text', text }],
  source: { kind: 'user' },
});

const hashOf = (entries: TranscriptEntry[]) => entries.reduce(extendHash, EMPTY_TRANSCRIPT_HASH);

/**
 * A session's model-visible log as its workflow runs hold it: each run holds the entries from its `base` on, and
 * names the run before it. Answers `modelContext` the way the workflow does, and counts the reads.
 */
class FakeSession {
  readonly entries: TranscriptEntry[] = [];
  readonly runs: { runId: string; base: number }[] = [{ runId: 'run-1', base: 0 }];
  readonly reads: { runId: string; from: number; to: number }[] = [];

  constructor(readonly sessionId: string) {}

  add(...texts: string[]): void {
    this.entries.push(...texts.map(user));
  }

  /** Continues as new: later entries belong to a new run. */
  continueAsNew(): void {
    this.runs.push({ runId: `run-${this.runs.length + 1}`, base: this.entries.length });
  }

  get latestRun(): string {
    return this.runs.at(-1)!.runId;
  }

  page(runId: string, from: number, to: number): ModelContextPage {
    this.reads.push({ runId, from, to });
    const index = this.runs.findIndex((r) => r.runId === runId);
    const run = this.runs[index]!;
    const end = this.runs[index + 1]?.base ?? this.entries.length;
    const start = Math.max(from, run.base);
    return {
      entries: this.entries.slice(start, Math.min(to, end)),
      base: run.base,
      ...(index > 0 ? { previousRunId: this.runs[index - 1]!.runId } : {}),
    };
  }

  /** The model request after the first `seen` entries were sent before: everything since is new. */
  request(seen: number, requestIndex = 0): ResolvedModelStepInput {
    const prefix = this.entries.slice(0, seen);
    return {
      sessionId: this.sessionId,
      chainId: `${this.sessionId}/run-1`,
      runId: this.latestRun,
      turn: 1,
      step: requestIndex + 1,
      requestIndex,
      tools: [],
      prefix: { count: seen, hash: hashOf(prefix) },
      newEntries: this.entries.slice(seen),
      hash: hashOf(this.entries),
    };
  }
}

function readerOf(...sessions: FakeSession[]): ContextReader {
  const byId = new Map(sessions.map((s) => [s.sessionId, s]));
  return async (sessionId, runId, from, to) => byId.get(sessionId)!.page(runId, from, to);
}

describe('TranscriptCache', () => {
  it('a hit assembles the transcript from the cache without reading the workflow', async () => {
    const s = new FakeSession('s1');
    const cache = new TranscriptCache(readerOf(s));
    s.add('a', 'b');
    expect(await cache.assemble(s.request(0, 0))).toEqual(s.entries);
    s.add('c');
    const readsBefore = s.reads.length;

    expect(await cache.assemble(s.request(2, 1))).toEqual(s.entries);
    expect(s.reads.length).toBe(readsBefore);
    expect(cache.stats.hits).toBe(1);
    expect(cache.stats.fetchedEntries).toBe(0);
  });

  it('a cache that is behind (another worker served a request) reads only the missing tail', async () => {
    const s = new FakeSession('s1');
    const cache = new TranscriptCache(readerOf(s));
    s.add('a', 'b');
    await cache.assemble(s.request(0, 0));
    s.add('c', 'd'); // request 1 went to another worker and saw four entries
    s.add('e');

    expect(await cache.assemble(s.request(4, 2))).toEqual(s.entries);
    expect(s.reads).toEqual([{ runId: 'run-1', from: 2, to: 4 }]);
    expect(cache.stats.fetchedEntries).toBe(2);
  });

  it('evicts the least recently used session and rebuilds it from the workflow on its next request', async () => {
    const [a, b, c] = ['a', 'b', 'c'].map((id) => new FakeSession(id)) as [
      FakeSession,
      FakeSession,
      FakeSession,
    ];
    const cache = new TranscriptCache(readerOf(a, b, c), { maxSessions: 2 });
    for (const s of [a, b]) {
      s.add(`${s.sessionId}1`, `${s.sessionId}2`);
      await cache.assemble(s.request(0, 0));
    }
    a.add('a3');
    await cache.assemble(a.request(2, 1)); // a is now the most recently used
    c.add('c1');
    await cache.assemble(c.request(0, 0)); // a third session: b goes

    a.add('a4');
    const aReads = a.reads.length;
    expect(await cache.assemble(a.request(3, 2))).toEqual(a.entries);
    expect(a.reads.length).toBe(aReads);

    b.add('b3');
    expect(await cache.assemble(b.request(2, 1))).toEqual(b.entries);
    expect(b.reads.at(-1)).toEqual({ runId: 'run-1', from: 0, to: 2 });
  });

  it('refuses a request whose entries do not hash to what the log says, and forgets the session', async () => {
    const s = new FakeSession('s1');
    const cache = new TranscriptCache(readerOf(s));
    s.add('a', 'b');
    await cache.assemble(s.request(0, 0));
    s.add('c');
    const forged = { ...s.request(2, 1), newEntries: [user('not what the log holds')] };

    const err = await cache.assemble(forged).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect((err as ApplicationFailure).type).toBe('TranscriptMismatch');

    // The next request starts over from the workflow instead of trusting the dropped prefix.
    const reads = s.reads.length;
    expect(await cache.assemble(s.request(2, 1))).toEqual(s.entries);
    expect(s.reads.length).toBeGreaterThan(reads);
  });

  it('refuses a prefix the workflow answers differently from the hash the request carries', async () => {
    const s = new FakeSession('s1');
    s.add('a', 'b');
    const request = s.request(2, 1);
    s.entries[1] = user('rewritten'); // the runs now hold something else than what the workflow hashed
    const cache = new TranscriptCache(readerOf(s));

    await expect(cache.assemble(request)).rejects.toMatchObject({ type: 'TranscriptMismatch' });
  });

  it('after a worker restart, a fresh cache rebuilds the whole transcript across the continue-as-new chain', async () => {
    const s = new FakeSession('s1');
    const before = new TranscriptCache(readerOf(s));
    s.add('a', 'b');
    await before.assemble(s.request(0, 0));
    s.continueAsNew();
    s.add('c');
    await before.assemble(s.request(2, 1));
    s.continueAsNew();
    s.add('d', 'e');

    // The worker restarts: its cache is empty, the log lives in three runs.
    const after = new TranscriptCache(readerOf(s));
    s.reads.length = 0;
    expect(await after.assemble(s.request(3, 2))).toEqual(s.entries);
    expect(new Set(s.reads.map((r) => r.runId))).toEqual(new Set(['run-1', 'run-2', 'run-3']));
    expect(after.stats).toMatchObject({ hits: 0, misses: 1, fetchedEntries: 3 });

    // From then on it is warm again.
    s.add('f');
    s.reads.length = 0;
    expect(await after.assemble(s.request(5, 3))).toEqual(s.entries);
    expect(s.reads).toEqual([]);
    expect(after.stats.hits).toBe(1);
  });
});
