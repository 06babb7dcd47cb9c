/** The CLI's pure parts: argument values, the demo model choice, and the transcript renderer. */
import { describe, expect, it } from 'vitest';
import { parseModel, parseSource, parseTools, sourceLabel } from '../../src/cli/args';
import { demoModel, DEMO_SCRIPT } from '../../src/cli/demo';
import { UsageError } from '../../src/cli/errors';
import { TranscriptRenderer, wrap } from '../../src/cli/render';
import { WatchFold } from '../../src/client/watch';
import type { SessionEvent } from '../../src/domain/events';
import type { UserMessage } from '../../src/domain/messages';
import { ENV_VARS } from '../../src/worker/config';

describe('argument values', () => {
  it('parses sources written kind[:name]', () => {
    expect(parseSource('user')).toEqual({ kind: 'user' });
    expect(parseSource('plugin:watcher')).toEqual({ kind: 'plugin', plugin: 'watcher' });
    expect(parseSource('tool:call_1')).toEqual({ kind: 'tool', callId: 'call_1' });
    expect(parseSource('ci:build:42')).toEqual({ kind: 'ci', name: 'build:42' });
    expect(parseSource('monitor')).toEqual({ kind: 'monitor' });
    for (const bad of ['plugin', 'tool', 'user:me', 'a b', ':x', ''])
      expect(() => parseSource(bad), bad).toThrow(UsageError);
    expect(sourceLabel({ kind: 'plugin', plugin: 'w' })).toBe('plugin:w');
    expect(sourceLabel({ kind: 'tool', callId: 'c' })).toBe('tool:c');
    expect(sourceLabel({ kind: 'user' })).toBe('user');
  });

  it('parses models and tool lists', () => {
    expect(parseModel('scripted')).toEqual({ provider: 'scripted', steps: [] });
    expect(parseModel('openai:gpt-4o-mini')).toEqual({ provider: 'openai', model: 'gpt-4o-mini' });
    expect(parseModel('openai-compatible:llama3.1:8b')).toEqual({
      provider: 'openai-compatible',
      model: 'llama3.1:8b',
    });
    for (const bad of ['gpt-4o', 'openai:', 'acme:model', ''])
      expect(() => parseModel(bad), bad).toThrow(UsageError);
    expect(parseTools('echo, sleep')).toEqual(['echo', 'sleep']);
    expect(() => parseTools('echo,')).toThrow(UsageError);
  });
});

describe('demoModel', () => {
  it('uses OpenAI only when its key is set and the worker has the provider', () => {
    const scripted = { provider: 'scripted', steps: DEMO_SCRIPT };
    expect(demoModel({}, ['scripted'])).toEqual(scripted);
    expect(demoModel({ OPENAI_API_KEY: 'k' }, ['scripted'])).toEqual(scripted);
    expect(demoModel({}, ['scripted', 'openai'])).toEqual(scripted);
    expect(demoModel({ OPENAI_API_KEY: ' ' }, ['scripted', 'openai'])).toEqual(scripted);
    expect(demoModel({ OPENAI_API_KEY: 'k' }, ['scripted', 'openai'])).toEqual({
      provider: 'openai',
      model: 'gpt-4o-mini',
    });
    expect(demoModel({ OPENAI_API_KEY: 'k', AGENT_SESSIONS_DEMO_MODEL: 'gpt-4.1' }, ['openai'])).toEqual({
      provider: 'openai',
      model: 'gpt-4.1',
    });
  });

  it('its variables are listed in ENV_VARS', () => {
    for (const name of ['AGENT_SESSIONS_SESSION', 'AGENT_SESSIONS_DEMO_MODEL'])
      expect(Object.hasOwn(ENV_VARS, name)).toBe(true);
  });

  it('offline, turn 1 uses echo and emit_context', () => {
    expect(DEMO_SCRIPT[0]!.toolCalls!.map((c) => c.name)).toEqual(['echo', 'emit_context']);
  });
});

describe('wrap', () => {
  it('wraps at word boundaries and cuts long words', () => {
    expect(wrap('one two three four', 9)).toEqual(['one two', 'three', 'four']);
    expect(wrap('abcdefghijkl', 5)).toEqual(['abcde', 'fghij', 'kl']);
    expect(wrap('a\nb', 10)).toEqual(['a', 'b']);
    expect(wrap('', 10)).toEqual(['']);
  });
});

describe('TranscriptRenderer', () => {
  const msg = (id: string, text: string, source: UserMessage['source'] = { kind: 'user' }): UserMessage => ({
    id,
    role: 'user',
    content: [{ type: 'text', text }],
    source,
  });
  let seq = 0;
  const ev = <T extends SessionEvent['type']>(type: T, data: Extract<SessionEvent, { type: T }>['data']) =>
    ({ seq: seq++, type, time: 0, data }) as SessionEvent;

  it('renders bubbles, context cards, tools and turn boundaries, and tracks the activity', () => {
    seq = 0;
    const ctx = msg('c1', 'the file changed', { kind: 'plugin', plugin: 'watcher' });
    const p = msg('p1', 'hello');
    const s = msg('s1', 'faster');
    const events: SessionEvent[] = [
      ev('agent/inbox/spliced', { target: 'next-step', start: 0, inserted: [ctx] }),
      ev('agent/inbox/spliced', { target: 'next-turn', start: 0, inserted: [p] }),
      ev('turn/start', { turn: 1 }),
      ev('agent/inbox/spliced', { target: 'next-step', start: 0, removedCount: 1, inserted: [] }),
      ev('agent/inbox/spliced', { target: 'next-turn', start: 0, removedCount: 1, inserted: [] }),
      ev('step/start', { turn: 1, step: 1 }),
      ev('user/message', { message: ctx }),
      ev('user/message', { message: p }),
    ];
    const fold = new WatchFold();
    const r = new TranscriptRenderer({ width: 60 });
    const render = (list: SessionEvent[]) =>
      list.flatMap((e) => fold.next(e).flatMap((item) => r.render(item)));
    expect(render(events)).toEqual([
      '  · queued context from plugin:watcher: "the file changed"',
      '',
      '── turn 1 ──────────────────────────────────────────────────',
      '┌─ context · plugin:watcher',
      '│ the file changed',
      '└─',
      '',
      '╭─ you ─╮',
      '│ hello │',
      '╰───────╯',
    ]);
    expect(r.activity).toEqual({ kind: 'model' });
    expect(
      render([
        ev('assistant/message', {
          turn: 1,
          step: 1,
          message: {
            id: 'a1',
            role: 'assistant',
            content: [{ type: 'text', text: 'let me look' }],
            toolCalls: [{ callId: 'k1', name: 'echo', arguments: { text: 'x' } }],
          },
        }),
        ev('tool/call', { turn: 1, step: 1, callId: 'k1', name: 'echo', arguments: { text: 'x' } }),
      ]),
    ).toEqual(['◆ let me look', '  ⚙ echo {"text":"x"}']);
    expect(r.activity).toEqual({ kind: 'tools', names: ['echo'] });
    expect(
      render([
        ev('agent/inbox/spliced', { target: 'next-step', start: 0, inserted: [s] }),
        ev('tool/result', {
          turn: 1,
          step: 1,
          callId: 'k1',
          content: [],
          error: { code: 'TOOL_FAILED', message: 'boom' },
        }),
        ev('step/end', { turn: 1, step: 1 }),
        ev('agent/inbox/spliced', { target: 'next-step', start: 0, removedCount: 1, inserted: [] }),
        ev('step/start', { turn: 1, step: 2 }),
        ev('user/message', { message: s }),
        ev('turn/end', { turn: 1, reason: { kind: 'aborted', reason: { kind: 'user' } } }),
        ev('session/disposed', {}),
      ]),
    ).toEqual([
      '  · queued steer for the next step: "faster"',
      '    ✗ TOOL_FAILED: boom',
      '  · step 1.2',
      '',
      '╭─ you · steer ─╮',
      '│ faster        │',
      '╰───────────────╯',
      '── turn 1 · aborted (user) ─────────────────────────────────',
      '── session disposed ────────────────────────────────────────',
    ]);
    expect(r.activity).toEqual({ kind: 'idle' });
    expect(r.isDisposed).toBe(true);
  });

  it('shows images and resources of a tool result as one line each, never their base64', () => {
    seq = 0;
    const r = new TranscriptRenderer({ width: 120 });
    const data = 'A'.repeat(16_800);
    const lines = r.render({
      kind: 'event',
      event: ev('tool/result', {
        turn: 1,
        step: 1,
        callId: 'k1',
        content: [
          { type: 'text', text: 'shot' },
          { type: 'image', mimeType: 'image/png', data },
          { type: 'resource', uri: 'file:///a.txt', name: 'a' },
        ],
      }),
    });
    expect(lines).toEqual(['    ↳ shot [image image/png, 12.3 KB] [resource link file:///a.txt "a"]']);
  });

  it('shows a call that waits for approval, the decision, and the approval activity for the chat prompt', () => {
    seq = 0;
    const r = new TranscriptRenderer({ width: 80 });
    const lines = (e: SessionEvent) => r.render({ kind: 'event', event: e });
    lines(ev('turn/start', { turn: 1 }));
    lines(ev('step/start', { turn: 1, step: 1 }));
    const base = { turn: 1, step: 1 };
    lines(ev('assistant/message', { ...base, message: { id: 'a1', role: 'assistant', content: [] } }));
    expect(
      lines(
        ev('tool/approval-requested', { ...base, callId: 'c1', name: 'deploy', arguments: { env: 'prod' } }),
      ),
    ).toEqual(['  ⏸ deploy needs approval (call c1) {"env":"prod"}']);
    lines(ev('tool/approval-requested', { ...base, callId: 'c2', name: 'rm', arguments: {} }));
    expect(r.activity).toEqual({
      kind: 'approval',
      calls: [
        { callId: 'c1', name: 'deploy' },
        { callId: 'c2', name: 'rm' },
      ],
    });
    expect(
      lines(ev('tool/approval-resolved', { ...base, callId: 'c1', decision: 'approve', by: 'caller' })),
    ).toEqual(['    ✓ approved (call c1)']);
    expect(
      lines(
        ev('tool/approval-resolved', { ...base, callId: 'c2', decision: 'deny', by: 'caller', reason: 'no' }),
      ),
    ).toEqual(['    ✗ denied (call c2): no']);
    expect(r.activity).toEqual({ kind: 'turn' });
    lines(ev('tool/approval-requested', { ...base, callId: 'c3', name: 'rm', arguments: {} }));
    expect(
      lines(ev('tool/approval-resolved', { ...base, callId: 'c3', decision: 'deny', by: 'timeout' })),
    ).toEqual(['    ✗ denied (call c3): no decision in time']);
  });

  it('streams a step inline (watch --stream), ends its line at the answer, starts a retried attempt anew', () => {
    seq = 0;
    const r = new TranscriptRenderer({ width: 80 });
    const base = { turn: 1, step: 1 };
    r.render({ kind: 'event', event: ev('turn/start', { turn: 1 }) });
    r.render({ kind: 'event', event: ev('step/start', base) });
    const delta = (attempt: number, text: string, d: string, reset = false) =>
      ({ kind: 'delta', ...base, attempt, text, delta: d, reset }) as const;
    expect(r.renderDelta(delta(1, 'Hel', 'Hel'))).toBe('◆ Hel');
    expect(r.activity).toEqual({ kind: 'model', text: 'Hel' });
    expect(r.renderDelta(delta(1, 'Hello', 'lo'))).toBe('lo');
    expect(r.renderDelta(delta(2, 'Hi', 'Hi', true))).toBe('\n◆ (attempt 2) Hi');
    const answer = (text: string) =>
      r.render({
        kind: 'event',
        event: ev('assistant/message', {
          ...base,
          message: { id: 'a', role: 'assistant', content: [{ type: 'text', text }] },
        }),
      });
    expect(answer('Hi')).toEqual(['']);
    // A step that was not streamed in full is printed as a block, after ending the open line.
    r.render({ kind: 'event', event: ev('step/start', { turn: 1, step: 2 }) });
    r.renderDelta({ ...delta(1, 'Par', 'Par'), step: 2 });
    const lines = r.render({
      kind: 'event',
      event: ev('assistant/message', {
        turn: 1,
        step: 2,
        message: { id: 'b', role: 'assistant', content: [{ type: 'text', text: 'Partly different' }] },
      }),
    });
    expect(lines[0]).toBe('');
    expect(lines.join('\n')).toContain('◆ Partly different');
  });

  it('colours only when asked', () => {
    const r = new TranscriptRenderer({ color: true });
    const [line] = r
      .render({ kind: 'event', event: { seq: 0, type: 'turn/start', time: 0, data: { turn: 1 } } })
      .slice(1);
    expect(line?.startsWith('\x1b[2m── turn 1')).toBe(true);
  });
});
