/**
 * Compaction by token budget on the dev server (SessionConfig.context; docs/protocol.md "Compaction"): a worker whose
 * transcript cache keeps nothing, so every model request and every compaction assembles its projection from the
 * runs' histories — across compactions (each starts a new projection generation) and continue-as-new. What each
 * request sent the model is exactly the whole log's projection at that point; the histories replay.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { estimateTokens } from '../../src/domain/compaction';
import type { SessionEvent } from '../../src/domain/events';
import { projectTranscript, type TranscriptEntry } from '../../src/domain/transcript';
import { exportHistory, replayHistories } from '../../src/testing';
import { newId, settle, startSessionTestEnv, type SessionTestEnv } from '../support/sessionEnv';

let t: SessionTestEnv;
beforeAll(async () => {
  // Scripted answers are priced (units per million tokens), so a compaction's reported usage has a cost.
  t = await startSessionTestEnv('dev', [], {
    transcriptCacheSessions: 0,
    modelPrices: { scripted: { inputPerMillion: 2, outputPerMillion: 10 } },
  });
});
afterAll(async () => {
  await t?.teardown();
});

const words = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag}${i}`).join(' ');
const tokens = (entries: readonly TranscriptEntry[]) => entries.reduce((n, e) => n + estimateTokens(e), 0);

/** Each request the scripted model got equals the projection of the log before the answer it gave. */
function expectRequestsAreTheLog(
  events: readonly SessionEvent[],
  requests: { messages: TranscriptEntry[] }[],
) {
  const answers = events.flatMap((e, i) => (e.type === 'assistant/message' ? [i] : []));
  expect(requests).toHaveLength(answers.length);
  answers.forEach((at, i) => expect(requests[i]!.messages).toEqual(projectTranscript(events.slice(0, at))));
}

describe('a session with a token budget', { timeout: 120_000 }, () => {
  it('compacts again and again, through continue-as-new, reading its projection from history; it replays', async () => {
    const s = t.sessions();
    const id = newId('compact');
    const maxTokens = 400;
    await s.start(id, {
      context: { maxTokens, compactAt: 0.5, keepRecent: 2 },
      continueAsNewAfterEvents: 30,
    });
    for (let i = 1; i <= 10; i++) {
      await s.followup(id, { id: `p${i}`, content: words(40, `t${i}-`) });
      await settle(s, id, i);
    }
    const events = await s.allEvents(id);
    const summaries = events.filter((e) => e.type === 'compaction/summary');
    expect(summaries.length).toBeGreaterThanOrEqual(3);
    for (const e of summaries) {
      expect(e.data.model).toBe('scripted');
      expect(e.data.tokensAfter).toBeLessThan(e.data.tokensBefore);
    }
    const requests = t.recorder.requests(id);
    expectRequestsAreTheLog(events, requests);
    for (const r of requests) expect(tokens(r.messages)).toBeLessThanOrEqual(maxTokens);
    // The last request: the latest summary first, then what it kept, then the last prompt.
    const last = requests.at(-1)!.messages;
    expect(last[0]).toMatchObject({
      source: { kind: 'compaction', throughSeq: summaries.at(-1)!.data.throughSeq },
    });
    expect(last.at(-1)).toMatchObject({ role: 'user', id: 'p10' });

    // `state` shows what the next request would hold, and how many compactions there were.
    const state = await s.state(id);
    expect(state.context).toMatchObject({ maxTokens, compactions: summaries.length });
    expect(state.context!.tokens).toBeLessThanOrEqual(maxTokens);
    expect(state.context!.messages).toBe(projectTranscript(events).length);

    // It continued as new: the compacted projection crossed runs.
    const described = await s.handle(id).describe();
    expect(described.runId).not.toBe(described.raw.workflowExecutionInfo?.firstRunId);

    const dir = mkdtempSync(path.join(os.tmpdir(), 'compaction-replay-'));
    await exportHistory(t.env.client, id, path.join(dir, 'session.json'));
    expect(
      await replayHistories(dir, { workflowBundle: { codePath: inject('workflowBundlePath') } }),
    ).toMatchObject({ replayed: 1 });
  });

  it('summarises within a long turn of tool calls, keeping the prompt and each call with its result', async () => {
    const s = t.sessions();
    const id = newId('compact-tools');
    const steps = Array.from({ length: 8 }, (_, i) => ({
      toolCalls: [{ name: 'echo', args: { text: words(40, `r${i}-`) } }],
    }));
    await s.start(id, {
      tools: ['echo'],
      model: { provider: 'scripted', steps: [...steps, { text: 'all read' }] },
      context: {
        maxTokens: 500,
        compactAt: 0.5,
        keepRecent: 2,
        model: {
          provider: 'scripted',
          steps: [{ text: 'read r0 to r3; nothing unusual', usage: { inputTokens: 700, outputTokens: 30 } }],
        },
      },
    });
    await s.followup(id, { id: 'task', content: 'read everything' });
    const events = await settle(s, id, 1);
    expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: { kind: 'completed' } } });
    const summaries = events.filter((e) => e.type === 'compaction/summary');
    expect(summaries.length).toBeGreaterThanOrEqual(1);
    expect(summaries[0]!.data.summary).toBe('read r0 to r3; nothing unusual');
    // Each summary carries what its provider reported, priced by the worker; the session's totals count it (its
    // own answers report no usage), though not as a model step.
    for (const e of summaries)
      expect(e.data.usage).toEqual({ inputTokens: 700, outputTokens: 30, costMicros: 1700 });
    const { usage } = await s.state(id);
    expect(usage).toMatchObject({
      inputTokens: 700 * summaries.length,
      outputTokens: 30 * summaries.length,
      steps: 0,
    });
    const requests = t.recorder.requests(id);
    expectRequestsAreTheLog(events, requests);
    for (const r of requests) {
      // The prompt is always there, and no tool result is without the call before it.
      expect(r.messages.some((m) => m.role === 'user' && m.id === 'task')).toBe(true);
      r.messages.forEach((m, i) => {
        if (m.role !== 'tool') return;
        const before = r.messages
          .slice(0, i)
          .reverse()
          .find((x) => x.role === 'assistant');
        expect(before?.role === 'assistant' && before.toolCalls?.some((c) => c.callId === m.callId)).toBe(
          true,
        );
      });
    }
  });
});
