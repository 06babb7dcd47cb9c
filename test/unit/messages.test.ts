/** Messages, sources and wire payloads: what is accepted, and that every refusal names the field (rule 5). */
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import {
  CancelInputSchema,
  DeliverInputSchema,
  describeZodIssue,
  EventsQuerySchema,
  isDirect,
  laneInputProblem,
  LaneSignalSchema,
  LIMITS,
  makeUserMessage,
  MessageInputSchema,
  ModelSpecSchema,
  SessionConfigSchema,
  textOf,
  toBlocks,
  USER_SOURCE,
} from '../../src/domain/index';

/** The refusal text an edge would report, or 'ok'. */
function refusal(schema: z.ZodType, value: unknown): string {
  const parsed = schema.safeParse(value);
  return parsed.success ? 'ok' : describeZodIssue(parsed.error.issues);
}
const signal = (message: unknown) => refusal(LaneSignalSchema, { message });

describe('message input (followup / steer / inject signal payload)', () => {
  it('accepts string content, block content, an id and a source with producer fields', () => {
    expect(signal({ content: 'hi' })).toBe('ok');
    expect(
      signal({
        id: 'm-1',
        content: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
        ],
      }),
    ).toBe('ok');
    expect(signal({ content: 'x', source: { kind: 'plugin', plugin: 'watcher', file: 'a.ts' } })).toBe('ok');
    expect(signal({ content: 'x', source: { kind: 'tool', callId: 'c1' } })).toBe('ok');
    expect(signal({ content: 'x', source: { kind: 'tui-reference', session: 's2' } })).toBe('ok');
  });

  it('names the field of a bad id', () => {
    expect(signal({ id: '', content: 'x' })).toBe('message.id: must not be empty');
    expect(signal({ id: 'a b', content: 'x' })).toBe('message.id: printable ASCII without spaces');
    expect(signal({ id: 'é', content: 'x' })).toBe('message.id: printable ASCII without spaces');
    expect(signal({ id: 'a'.repeat(LIMITS.idChars + 1), content: 'x' })).toBe(
      'message.id: at most 128 characters',
    );
    expect(signal({ id: 'a'.repeat(LIMITS.idChars), content: 'x' })).toBe('ok');
    expect(signal({ id: 7, content: 'x' })).toMatch(/^message\.id: .*expected string/);
  });

  it('refuses empty content and content over the size limit, naming both', () => {
    expect(signal({ content: '' })).toBe('message.content: must not be empty');
    expect(signal({ content: [] })).toBe('message.content: must not be empty');
    expect(signal({ content: 'x'.repeat(LIMITS.contentChars) })).toBe('ok');
    expect(signal({ content: 'x'.repeat(LIMITS.contentChars + 1) })).toBe(
      `message.content: at most ${LIMITS.contentChars} characters of text (got ${LIMITS.contentChars + 1})`,
    );
    const half = { type: 'text', text: 'x'.repeat(LIMITS.contentChars / 2 + 1) };
    expect(signal({ content: [half, half] })).toMatch(/^message\.content: at most 262144 characters of text/);
  });

  it('DOMAIN BUG: refuses more content blocks than the limit, naming the limit', () => {
    const blocks = (n: number) => Array.from({ length: n }, () => ({ type: 'text', text: 'a' }));
    expect(signal({ content: blocks(LIMITS.contentBlocks) })).toBe('ok');
    // DOMAIN BUG (reported): the union in ContentSchema swallows the array's max check: "message.content: Invalid input".
    expect(signal({ content: blocks(LIMITS.contentBlocks + 1) })).toBe(
      `message.content: at most ${LIMITS.contentBlocks} blocks`,
    );
  });

  it('refuses unknown block types and non-text content, naming the field', () => {
    expect(signal({ content: [{ type: 'image', url: 'x' }] })).toMatch(/^message\.content/);
    expect(signal({ content: 5 })).toMatch(/^message\.content/);
    expect(signal({ content: null })).toMatch(/^message\.content/);
  });

  it('has no attachments, placements or envelopes (rule 1): unknown keys are refused by name', () => {
    expect(signal({ content: 'x', attachments: [] })).toBe('message: Unrecognized key: "attachments"');
    expect(signal({ content: 'x', placement: 'prefix' })).toBe('message: Unrecognized key: "placement"');
    expect(refusal(LaneSignalSchema, { message: { content: 'x' }, contexts: [] })).toBe(
      'payload: Unrecognized key: "contexts"',
    );
  });

  it('checks sources: kind present and bounded, plugin and tool fields, plain JSON, size', () => {
    expect(signal({ content: 'x', source: {} })).toMatch(/^message\.source\.kind: /);
    expect(signal({ content: 'x', source: { kind: '' } })).toBe('message.source.kind: must not be empty');
    expect(signal({ content: 'x', source: { kind: 'k'.repeat(129) } })).toBe(
      'message.source.kind: at most 128 characters',
    );
    expect(signal({ content: 'x', source: { kind: 'plugin' } })).toBe(
      "message.source.plugin: a source of kind 'plugin' needs a non-empty plugin name",
    );
    expect(signal({ content: 'x', source: { kind: 'plugin', plugin: '' } })).toMatch(
      /^message\.source\.plugin: /,
    );
    expect(signal({ content: 'x', source: { kind: 'tool' } })).toBe(
      "message.source.callId: a source of kind 'tool' needs a non-empty callId",
    );
    expect(signal({ content: 'x', source: { kind: 'k', n: 1n } })).toBe('message.source: must be plain JSON');
    expect(signal({ content: 'x', source: { kind: 'k', pad: 'x'.repeat(LIMITS.sourceJsonChars) } })).toBe(
      `message.source: at most ${LIMITS.sourceJsonChars} characters as JSON`,
    );
    expect(signal({ content: 'x', source: 'user' })).toMatch(/^message\.source: .*expected object/);
  });

  it('refuses non-object (non-JSON-ish) payloads without throwing', () => {
    for (const payload of ['hello', 42, null, undefined, [], true]) {
      expect(refusal(LaneSignalSchema, payload)).toMatch(/^payload: Invalid input: expected object/);
    }
    expect(refusal(LaneSignalSchema, {})).toMatch(/^message: /);
    expect(refusal(LaneSignalSchema, { message: 'hi' })).toMatch(/^message: .*expected object/);
  });
});

describe('deliver update payload', () => {
  it('accepts the three lanes', () => {
    for (const lane of ['followup', 'steer', 'inject']) {
      expect(refusal(DeliverInputSchema, { lane, message: { content: 'x', source: { kind: 'user' } } })).toBe(
        'ok',
      );
    }
  });

  it('refuses an unknown or missing lane, naming it', () => {
    expect(refusal(DeliverInputSchema, { lane: 'shout', message: { content: 'x' } })).toBe(
      'lane: Invalid option: expected one of "followup"|"steer"|"inject"',
    );
    expect(refusal(DeliverInputSchema, { message: { content: 'x' } })).toMatch(/^lane: /);
    expect(refusal(DeliverInputSchema, { lane: 'steer', message: { content: '' } })).toBe(
      'message.content: must not be empty',
    );
  });

  it('requires a source for inject only', () => {
    expect(laneInputProblem('inject', {})).toBe('message.source: required for inject');
    expect(laneInputProblem('inject', { source: { kind: 'plugin', plugin: 'p' } })).toBeUndefined();
    expect(laneInputProblem('followup', {})).toBeUndefined();
    expect(laneInputProblem('steer', {})).toBeUndefined();
  });
});

describe('other wire payloads', () => {
  it('cancel: user or hook cause (callers cannot claim disposed), keepInbox boolean', () => {
    expect(refusal(CancelInputSchema, {})).toBe('ok');
    expect(refusal(CancelInputSchema, { cause: { kind: 'hook', reason: 'policy' }, keepInbox: true })).toBe(
      'ok',
    );
    expect(refusal(CancelInputSchema, { cause: { kind: 'disposed' } })).toMatch(/^cause\.kind: /);
    expect(refusal(CancelInputSchema, { cause: { kind: 'hook' } })).toMatch(/^cause\.reason: /);
    expect(refusal(CancelInputSchema, { keepInbox: 'yes' })).toMatch(/^keepInbox: /);
  });

  it('events query: afterSeq from -1, limit at least 1', () => {
    expect(refusal(EventsQuerySchema, { afterSeq: -1, limit: 1 })).toBe('ok');
    expect(refusal(EventsQuerySchema, { afterSeq: -2 })).toMatch(/^afterSeq: /);
    expect(refusal(EventsQuerySchema, { limit: 0 })).toMatch(/^limit: /);
    expect(refusal(EventsQuerySchema, { afterSeq: 1.5 })).toMatch(/^afterSeq: /);
  });

  it('session config: strict keys, tool names, parallelism range, model specs', () => {
    expect(refusal(SessionConfigSchema, {})).toBe('ok');
    expect(refusal(SessionConfigSchema, { modle: 'x' })).toBe('payload: Unrecognized key: "modle"');
    expect(refusal(SessionConfigSchema, { tools: ['ok_name', 'bad name'] })).toBe(
      'tools[1]: letters, digits and _ . : - only, or mcp:<server>/<tool>',
    );
    expect(refusal(SessionConfigSchema, { tools: ['mcp:fs', 'mcp:fs/read_text_file', 'echo'] })).toBe('ok');
    expect(refusal(SessionConfigSchema, { tools: ['mcp:fs/a/b'] })).toMatch(/^tools\[0\]: /);
    expect(refusal(SessionConfigSchema, { maxParallelToolCalls: 0 })).toMatch(/^maxParallelToolCalls: /);
    expect(
      refusal(SessionConfigSchema, { model: { provider: 'scripted', steps: [{ text: 'hi', extra: 1 }] } }),
    ).toMatch(/^model\.steps\[0\]: Unrecognized key/);
    expect(ModelSpecSchema.parse({ provider: 'scripted' })).toEqual({ provider: 'scripted', steps: [] });
    expect(refusal(ModelSpecSchema, { provider: 'openai' })).toMatch(/^model: /);
    expect(refusal(ModelSpecSchema, { provider: 'mystery', model: 'x' })).toMatch(/^provider: /);
  });
});

describe('UserMessage', () => {
  it('is built frozen, with blocks, the default source and an id only generated when missing', () => {
    let generated = 0;
    const newId = () => `gen-${++generated}`;
    const m = makeUserMessage(MessageInputSchema.parse({ content: 'hello' }), USER_SOURCE, newId);
    expect(m).toEqual({
      id: 'gen-1',
      role: 'user',
      content: [{ type: 'text', text: 'hello' }],
      source: { kind: 'user' },
    });
    expect(
      Object.isFrozen(m) &&
        Object.isFrozen(m.content) &&
        Object.isFrozen(m.content[0]) &&
        Object.isFrozen(m.source),
    ).toBe(true);
    const own = makeUserMessage({ id: 'mine', content: 'x' }, USER_SOURCE, newId);
    expect(own.id).toBe('mine');
    expect(generated).toBe(1);
  });

  it('copies the source, so the caller mutating its input later changes nothing (rule 2)', () => {
    const source = { kind: 'plugin', plugin: 'watcher', path: 'a' };
    const m = makeUserMessage({ id: 'a', content: 'x', source }, USER_SOURCE, () => 'n');
    source.path = 'b';
    expect(m.source).toEqual({ kind: 'plugin', plugin: 'watcher', path: 'a' });
  });

  it('tells direct input from context by source alone (rule 35)', () => {
    expect(isDirect({ kind: 'user' })).toBe(true);
    expect(isDirect({ kind: 'plugin', plugin: 'p' })).toBe(false);
    expect(isDirect({ kind: 'tool', callId: 'c' })).toBe(false);
  });

  it('normalizes content without adding any wrapper', () => {
    expect(toBlocks('plain')).toEqual([{ type: 'text', text: 'plain' }]);
    expect(
      textOf(
        toBlocks([
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
        ]),
      ),
    ).toBe('a\n\nb');
  });
});
