/**
 * Compaction by token budget (SessionConfig.context; docs/protocol.md "Compaction"), run through the one loop
 * (src/domain/driver.ts) by the in-memory interpreter. Each compaction gets the projection a model request would see
 * (assembled and hash-checked the way the activity does), and every later request is checked against the log:
 * what the model saw is exactly the whole log's projection at that point (`projectTranscript`), so the summary
 * stands in for what it replaced and nothing else changes. Every log passes the invariant checker.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  checkLog,
  projectTranscript,
  type SessionConfig,
  type TranscriptEntry,
} from '../../src/domain/index';
import { compactionCut, estimateTokens } from '../../src/domain/compaction';
import { SessionConfigSchema } from '../../src/domain/wire';
import { outline, queuedScript, InMemorySession, user, type ModelPlan } from '../support/interpreter';

let sims: InMemorySession[] = [];
afterEach(() => {
  const done = sims;
  sims = [];
  for (const s of done) {
    expect(checkLog(s.log)).toEqual({ ok: true });
    // Model-visible ⟺ logged: each request is the whole log's projection at the moment it was made.
    s.requests.forEach((request, i) =>
      expect(request).toEqual(projectTranscript(s.log.slice(0, s.requestAt[i]))),
    );
  }
});

const words = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag}${i}`).join(' ');
const tokens = (entries: readonly TranscriptEntry[]) => entries.reduce((n, e) => n + estimateTokens(e), 0);

function sim(
  context: NonNullable<SessionConfig['context']>,
  models: ModelPlan[] = [],
  extra: SessionConfig = {},
) {
  const s = new InMemorySession(queuedScript({ models, tools: [{ name: 'read', exclusive: false }] }), {
    config: { tools: ['read'], context, ...extra },
  });
  sims.push(s);
  return s;
}

describe('compaction by token budget', () => {
  it('summarises the oldest part before the request that would pass the budget, keeping the newest verbatim', () => {
    const s = sim({ maxTokens: 400, compactAt: 0.5, keepRecent: 2 });
    // Each turn adds ~60 tokens (a 40-word prompt and its answer); the fourth request would pass 200.
    for (let t = 1; t <= 3; t++) s.followup(user(`P${t}`, words(40, `p${t}-`)));
    expect(s.log.some((e) => e.type === 'compaction/summary')).toBe(false);
    s.followup(user('P4', words(40, 'p4-')));

    const summary = s.log.find((e) => e.type === 'compaction/summary');
    expect(summary).toBeDefined();
    expect(outline(s.log).slice(-6)).toEqual([
      'step/start 4.1',
      'user/message P4',
      `compaction/summary 4.1 through ${summary!.data.throughSeq}`,
      'assistant/message 4.1',
      'step/end 4.1',
      'turn/end 4 completed',
    ]);
    // What it was given: every entry so far; it kept the newest two (the last answer and P4) verbatim.
    expect(s.compactions).toHaveLength(1);
    const [c] = s.compactions;
    expect(c!.projection).toEqual(projectTranscript(s.log.slice(0, summary!.seq)));
    expect(c!.projection.length - c!.cut).toBe(2);
    // The request after it: the summary (source names the compactor), then the two kept — nothing else.
    const last = s.requests.at(-1)!;
    const label = (e: TranscriptEntry) => (e.role === 'user' ? e.id : e.role);
    expect(last.map(label)).toEqual([`compaction-${summary!.seq}`, 'assistant', 'P4']);
    expect(last[0]).toMatchObject({
      role: 'user',
      source: { kind: 'compaction', model: 'scripted', throughSeq: summary!.data.throughSeq },
    });
    expect(summary!.data.tokensBefore).toBeGreaterThan(200);
    expect(summary!.data.tokensAfter).toBeLessThan(summary!.data.tokensBefore);
    // The log is never rewritten: every earlier message is still there.
    expect(s.log.filter((e) => e.type === 'user/message').map((e) => e.data.message.id)).toEqual([
      'P1',
      'P2',
      'P3',
      'P4',
    ]);
  });

  it('never separates a tool call from its result, and keeps the step’s pending contexts', () => {
    const s = sim({ maxTokens: 300, compactAt: 0.5, keepRecent: 1 }, [
      { toolCalls: [{ name: 'read', callId: 'r1', result: words(30, 'a'), contexts: ['ctx after r1'] }] },
      { toolCalls: [{ name: 'read', callId: 'r2', result: words(60, 'b') }] },
      { toolCalls: [{ name: 'read', callId: 'r3', result: words(60, 'c') }] },
      { text: 'done' },
    ]);
    s.followup(user('P', words(20, 'p')));
    const summaries = s.log.filter((e) => e.type === 'compaction/summary');
    expect(summaries.length).toBeGreaterThan(0);
    for (const c of s.compactions) {
      const at = c.projection[c.cut]!;
      expect(at.role).not.toBe('tool');
    }
    // Within one turn the latest direct message is P: the cut can never pass it, so nothing before P is lost.
    for (const request of s.requests)
      expect(request.some((e) => e.role === 'user' && e.id === 'P')).toBe(true);
    expect(outline(s.log).at(-1)).toBe('turn/end 1 completed');
  });

  it('compacts again and again: each summary replaces the one before, and 1,000 turns stay under the budget', () => {
    const maxTokens = 600;
    const s = sim({ maxTokens, compactAt: 0.8, keepRecent: 3 }, [], { continueAsNewAfterEvents: 400 });
    for (let t = 1; t <= 1000; t++) s.followup(user(`P${t}`, words(10 + (t % 30), `t${t}-`)));
    const summaries = s.log.filter((e) => e.type === 'compaction/summary');
    expect(summaries.length).toBeGreaterThan(50);
    expect(s.continuedAsNew).toBeGreaterThan(5);
    expect(s.requests).toHaveLength(1000);
    for (const request of s.requests) {
      expect(tokens(request)).toBeLessThanOrEqual(maxTokens);
      // At most one summary, and it comes first.
      const kinds = request.map((e) => (e.role === 'user' ? e.source.kind : e.role));
      expect(kinds.filter((k) => k === 'compaction').length).toBeLessThanOrEqual(1);
      if (kinds.includes('compaction')) expect(kinds[0]).toBe('compaction');
    }
    // A later summary was given the earlier one to summarise (the projection starts with it).
    const second = s.compactions[1]!;
    expect(second.projection[0]).toMatchObject({ source: { kind: 'compaction' } });
  });

  it('uses the provider’s reported usage over its own estimate', () => {
    // The answers report far more input tokens than the estimate: the session compacts on the report.
    const s = sim({ maxTokens: 1000, keepRecent: 1 }, [
      { text: 'a1', usage: { inputTokens: 500, outputTokens: 10 } },
      { text: 'a2', usage: { inputTokens: 900, outputTokens: 10 } },
      { text: 'a3' },
    ]);
    s.followup(user('P1', 'short'));
    s.followup(user('P2', 'short'));
    expect(s.log.some((e) => e.type === 'compaction/summary')).toBe(false);
    s.followup(user('P3', 'short'));
    expect(s.log.filter((e) => e.type === 'compaction/summary')).toHaveLength(1);
  });

  it('ends the turn COMPACTION_FAILED when the compactor fails, and the next turn compacts again', () => {
    let fail = true;
    const s = new InMemorySession(
      {
        ...queuedScript({}),
        compact: () => {
          if (!fail) return 'the gist';
          fail = false;
          return { fail: 'the compactor is down' };
        },
      },
      { config: { context: { maxTokens: 256, compactAt: 0.3, keepRecent: 1 } } },
    );
    sims.push(s);
    s.followup(user('P1', words(40, 'x')));
    s.followup(user('P2', words(40, 'y')));
    expect(s.log.at(-1)).toMatchObject({
      type: 'turn/end',
      data: { reason: { kind: 'error', error: { code: 'COMPACTION_FAILED' } } },
    });
    s.followup(user('P3', words(10, 'z')));
    expect(s.log.find((e) => e.type === 'compaction/summary')).toMatchObject({
      data: { summary: 'the gist' },
    });
    expect(s.log.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: { kind: 'completed' } } });
  });

  it('carries the compacted projection across continue-as-new', () => {
    const s = sim({ maxTokens: 300, compactAt: 0.5, keepRecent: 2 });
    for (let t = 1; t <= 4; t++) s.followup(user(`P${t}`, words(40, `p${t}-`)));
    expect(s.log.some((e) => e.type === 'compaction/summary')).toBe(true);
    s.suggestContinueAsNewAtNextQuietPoint();
    s.followup(user('P5', 'after the restart'));
    expect(s.continuedAsNew).toBe(1);
    s.followup(user('P6', 'and once more'));
    const last = s.requests.at(-1)!;
    expect(last[0]).toMatchObject({ source: { kind: 'compaction' } });
    expect(last.at(-1)).toMatchObject({ id: 'P6' });
  });
});

describe('the cut', () => {
  const u = (id: string): TranscriptEntry => ({
    role: 'user',
    id,
    content: [{ type: 'text', text: id }],
    source: { kind: 'user' },
  });
  const a = (id: string, calls = false): TranscriptEntry => ({
    role: 'assistant',
    id,
    content: [],
    ...(calls ? { toolCalls: [{ callId: `${id}c`, name: 't', arguments: {} }] } : {}),
  });
  const ctx = (id: string): TranscriptEntry => ({
    role: 'user',
    id,
    content: [{ type: 'text', text: id }],
    source: { kind: 'tool', callId: 'A3c' },
  });
  const tool = (callId: string): TranscriptEntry => ({ role: 'tool', callId, name: 't', content: [] });

  const seqs = [1, 2, 3, 4, 5, 6, 7];

  it('moves back over tool results to their call', () => {
    const entries = [a('A0'), a('A1'), a('A2', true), tool('A2c'), tool('A2d'), a('A3')];
    expect(compactionCut(entries, seqs, 0, 2, 6)).toEqual({ cut: 2 }); // entry 4 is a result: back to its call
  });

  it('keeps what the step entered, and pins the latest direct message when it comes before the cut', () => {
    const entries = [u('P1'), a('A1'), u('P2'), a('A2', true), tool('A2c'), a('A3', true), tool('A3c')];
    // The latest direct message P2 (2) is kept verbatim, moved after the summary; the cut is before A3.
    expect(compactionCut(entries, seqs, 0, 2, 7)).toEqual({ cut: 5, pinned: 2 });
    // A step that entered its last two entries keeps them, whatever keepRecent says.
    expect(compactionCut([...entries, ctx('C1'), ctx('C2')], [...seqs, 8, 9], 0, 0, 7)).toEqual({
      cut: 7,
      pinned: 2,
    });
    // Only entries this run holds can be kept: a cut before the run's first entry is refused.
    expect(compactionCut(entries.slice(3), seqs.slice(3), 3, 6, 7)).toBeUndefined();
  });

  it('cuts a fork’s snapshot, which one event added, only as a whole', () => {
    const entries = [u('F1'), a('F2'), u('F3'), a('F4'), u('P'), a('A')];
    expect(compactionCut(entries, [0, 0, 0, 0, 5, 6], 0, 2, 6)).toEqual({ cut: 4 });
    expect(compactionCut(entries, [0, 0, 0, 0, 5, 6], 0, 3, 6)).toBeUndefined();
  });

  it('is refused in config with a message naming the field and the limit', () => {
    const parsed = SessionConfigSchema.safeParse({ context: { maxTokens: 10 } });
    expect(parsed.success).toBe(false);
    expect(JSON.stringify(parsed.error!.issues)).toContain('maxTokens');
    expect(JSON.stringify(parsed.error!.issues)).toContain('256');
  });
});
