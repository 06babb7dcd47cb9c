/**
 * The pure parts both the workers and the in-memory interpreter call: request assembly by the rolling hash
 * (src/domain/requestAssembly.ts) and the park/resume rule of the waiting effects (src/domain/driver/park.ts).
 */
import { describe, expect, it } from 'vitest';
import { mayResume } from '../../src/domain/driver/park';
import { assembled, hashed, holdsPrefix, transcriptHash } from '../../src/domain/requestAssembly';
import { userEntry, type TranscriptEntry } from '../../src/domain/entry';
import { user } from '../support/interpreter';

const entries: TranscriptEntry[] = ['a', 'b', 'c'].map((id) => userEntry(user(id)));

describe('request assembly', () => {
  it('appends the new entries to the prefix the reader holds, checked by both hashes', () => {
    const known = hashed(entries.slice(0, 2));
    const request = {
      prefix: { count: 1, hash: transcriptHash(entries.slice(0, 1)) },
      newEntries: [entries[1]!, entries[2]!],
      hash: transcriptHash(entries),
    };
    const whole = assembled(known, request);
    expect(whole.ok && whole.transcript.entries).toEqual(entries);
    expect(whole.ok && whole.transcript.hashes).toEqual(hashed(entries).hashes);
  });

  it('says which check failed: a prefix the reader lacks, or a whole that does not hash to the request', () => {
    const known = hashed(entries.slice(0, 1));
    const prefix = { count: 2, hash: transcriptHash(entries.slice(0, 2)) };
    expect(holdsPrefix(known, prefix)).toBe(false);
    expect(assembled(known, { prefix, newEntries: [], hash: prefix.hash })).toEqual({
      ok: false,
      mismatch: 'prefix',
      at: 2,
    });
    const one = { count: 1, hash: transcriptHash(entries.slice(0, 1)) };
    expect(
      assembled(known, { prefix: one, newEntries: [entries[2]!], hash: transcriptHash(entries) }),
    ).toEqual({ ok: false, mismatch: 'request', at: 2 });
  });
});

describe('park/resume rule', () => {
  const driver = (hasWork: boolean, budgetPaused?: object, canceling?: object) => ({
    hasWork: () => hasWork,
    core: { budgetPaused, canceling },
  });

  it('waits for work, for a budget decision or a cancel, and for a settled call or a decision', () => {
    expect(mayResume('wait-for-work', driver(false))).toBe(false);
    expect(mayResume('wait-for-work', driver(true))).toBe(true);
    expect(mayResume('await-budget', driver(false, { turn: 1, step: 1 }))).toBe(false);
    expect(mayResume('await-budget', driver(false, { turn: 1, step: 1 }, { kind: 'user' }))).toBe(true);
    expect(mayResume('await-budget', driver(false))).toBe(true);
    expect(mayResume('tool-settled', driver(false), { running: 0, woken: false })).toBe(false);
    expect(mayResume('tool-settled', driver(false), { running: 1, woken: false })).toBe(true);
    expect(mayResume('tool-settled', driver(false), { running: 0, woken: true })).toBe(true);
    expect(mayResume('model', driver(false))).toBe(true);
  });
});
