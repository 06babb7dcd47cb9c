/** Transcript projection: model-visible ⟺ logged (rule 14); sources carry the direct/context distinction (rule 35). */
import { describe, expect, it } from 'vitest';
import {
  emptyTranscript,
  projectEvent,
  projectTranscript,
  type EventDraft,
  type SessionEvent,
} from '../../src/domain/index';
import { ctx, user } from '../support/interpreter';

function log(...drafts: EventDraft[]): SessionEvent[] {
  return drafts.map((d, seq) => ({ seq, time: seq, ...d }) as SessionEvent);
}

const sample = log(
  {
    type: 'agent/inbox/spliced',
    data: { target: 'next-step', start: 0, inserted: [ctx('A', 'watch: a.ts changed', 'watcher')] },
  },
  { type: 'agent/inbox/spliced', data: { target: 'next-turn', start: 0, inserted: [user('P', 'fix it')] } },
  { type: 'turn/start', data: { turn: 1 } },
  { type: 'agent/inbox/spliced', data: { target: 'next-step', start: 0, removedCount: 1, inserted: [] } },
  { type: 'agent/inbox/spliced', data: { target: 'next-turn', start: 0, removedCount: 1, inserted: [] } },
  { type: 'step/start', data: { turn: 1, step: 1 } },
  { type: 'user/message', data: { message: ctx('A', 'watch: a.ts changed', 'watcher') } },
  { type: 'user/message', data: { message: user('P', 'fix it') } },
  {
    type: 'assistant/message',
    data: {
      turn: 1,
      step: 1,
      message: {
        id: 'a1',
        role: 'assistant',
        content: [{ type: 'text', text: 'looking' }],
        toolCalls: [{ callId: 'c1', name: 'read', arguments: { path: 'a.ts' } }],
      },
      usage: { inputTokens: 3 },
    },
  },
  { type: 'tool/call', data: { turn: 1, step: 1, callId: 'c1', name: 'read', arguments: { path: 'a.ts' } } },
  {
    type: 'tool/result',
    data: {
      turn: 1,
      step: 1,
      callId: 'c1',
      content: [{ type: 'text', text: 'no such file' }],
      error: { message: 'ENOENT', code: 'TOOL_FAILED' },
    },
  },
  { type: 'step/end', data: { turn: 1, step: 1 } },
  { type: 'step/start', data: { turn: 1, step: 2 } },
  {
    type: 'assistant/message',
    data: {
      turn: 1,
      step: 2,
      message: { id: 'a2', role: 'assistant', content: [{ type: 'text', text: 'half' }] },
      interrupted: true,
    },
  },
  { type: 'step/end', data: { turn: 1, step: 2 } },
  { type: 'turn/end', data: { turn: 1, reason: { kind: 'aborted', reason: { kind: 'user' } } } },
);

describe('projectTranscript', () => {
  it('keeps user, assistant and tool entries; splices and boundaries are invisible', () => {
    expect(projectTranscript(sample)).toEqual([
      {
        role: 'user',
        id: 'A',
        content: [{ type: 'text', text: 'watch: a.ts changed' }],
        source: { kind: 'plugin', plugin: 'watcher' },
      },
      { role: 'user', id: 'P', content: [{ type: 'text', text: 'fix it' }], source: { kind: 'user' } },
      {
        role: 'assistant',
        id: 'a1',
        content: [{ type: 'text', text: 'looking' }],
        toolCalls: [{ callId: 'c1', name: 'read', arguments: { path: 'a.ts' } }],
      },
      {
        role: 'tool',
        callId: 'c1',
        name: 'read',
        content: [{ type: 'text', text: 'no such file' }],
        error: { message: 'ENOENT', code: 'TOOL_FAILED' },
      },
      { role: 'assistant', id: 'a2', content: [{ type: 'text', text: 'half' }], interrupted: true },
    ]);
  });

  it('adds no wrapper, tag or envelope to content (rule 35)', () => {
    const texts = projectTranscript(sample).flatMap((e) =>
      e.content.map((b) => (b.type === 'text' ? b.text : '')),
    );
    expect(texts).toEqual(['watch: a.ts changed', 'fix it', 'looking', 'no such file', 'half']);
  });

  it('omits empty toolCalls and names a result whose call it never saw "unknown"', () => {
    const entries = projectTranscript(
      log(
        {
          type: 'assistant/message',
          data: { turn: 1, step: 1, message: { id: 'a', role: 'assistant', content: [], toolCalls: [] } },
        },
        { type: 'tool/result', data: { turn: 1, step: 1, callId: 'zz', content: [] } },
      ),
    );
    expect(entries).toEqual([
      { role: 'assistant', id: 'a', content: [] },
      { role: 'tool', callId: 'zz', name: 'unknown', content: [] },
    ]);
  });

  it('skips plugin event types', () => {
    const plugin = { seq: 0, time: 0, type: 'plugin/note', data: { text: 'x' } } as unknown as SessionEvent;
    expect(projectTranscript([plugin])).toEqual([]);
  });

  it('the incremental fold equals the whole-log projection at every prefix', () => {
    const state = emptyTranscript();
    sample.forEach((event, i) => {
      projectEvent(state, event);
      expect(state.entries).toEqual(projectTranscript(sample.slice(0, i + 1)));
    });
  });
});
