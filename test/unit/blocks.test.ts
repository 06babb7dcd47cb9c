/**
 * Images, audio and resources in tool results (issue 18): the block schemas and their limits, the activity edge
 * (a native tool's return value; over-limit or malformed blocks become text saying so), the AI SDK prompt a
 * provider gets (image-data / file-data parts, or descriptions for providers that take none), what a text-only
 * reader sees, and the compaction estimate. Real parts, no server.
 */
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { defineTool, runTool, type ToolRuntime } from '../../src/activities/tools';
import { NO_TOOL_MEDIA, toModelMessages } from '../../src/activities/providers/messages';
import { outputText as outputTextForTest } from '../../src/activities/providers/local/prompt';
import { toResultBlocks } from '../../src/domain/blocks';
import { BINARY_BLOCK_TOKENS, estimateTokens, renderForSummary } from '../../src/domain/compaction';
import { EventDataSchemas, eventProblem } from '../../src/domain/events';
import {
  base64Bytes,
  ContentBlockSchema,
  LIMITS,
  textOf,
  type ContentBlock,
} from '../../src/domain/messages';
import type { TranscriptEntry } from '../../src/domain/transcript';
import { describeZodIssue } from '../../src/domain/util';

const PNG = Buffer.from('a tiny png, as far as this test is concerned').toString('base64');
const image: ContentBlock = { type: 'image', mimeType: 'image/png', data: PNG };
const toolEntry = (content: ContentBlock[]): TranscriptEntry => ({
  role: 'tool',
  callId: 'c1',
  name: 'shot',
  content,
});

describe('content blocks', () => {
  it('base64 sizes are computed from the length, padded or not', () => {
    for (const bytes of [0, 1, 2, 3, 4, 5, 1000, 1001, 1002]) {
      const b64 = Buffer.alloc(bytes, 7).toString('base64');
      expect(base64Bytes(b64)).toBe(bytes);
      expect(base64Bytes(b64.replace(/=+$/, ''))).toBe(bytes);
    }
  });

  it('schemas name the field and the limit', () => {
    const problem = (block: unknown) => {
      const r = ContentBlockSchema.safeParse(block);
      return r.success ? undefined : describeZodIssue(r.error.issues, 'block');
    };
    expect(problem(image)).toBeUndefined();
    expect(problem({ type: 'image', mimeType: 'x'.repeat(300) + '/png', data: PNG })).toBe(
      'mimeType: at most 255 characters',
    );
    expect(problem({ type: 'image', mimeType: 'png', data: PNG })).toBe(
      'mimeType: a MIME type such as image/png',
    );
    expect(problem({ type: 'audio', mimeType: 'audio/wav', data: 'A'.repeat(1_400_000) })).toBe(
      'data: at most 1048576 bytes (1398104 characters of base64)',
    );
    expect(problem({ type: 'resource', uri: '' })).toBe('uri: must not be empty');
    expect(problem({ type: 'resource', uri: 'u:1', text: 'a', data: 'AAAA' })).toBe(
      'data: a resource carries text or data, not both',
    );
    expect(problem({ type: 'video' })).toBe('type: a block of type text, image, audio or resource');
  });

  it('a tool/result event takes the new blocks, and at most 1 MiB of binary content in total', () => {
    const data = { turn: 1, step: 1, callId: 'c1', content: [image, { type: 'resource', uri: 'file:///a' }] };
    expect(eventProblem({ seq: 0, type: 'tool/result', time: 0, data })).toBeUndefined();
    const half = 'A'.repeat(800_000); // 600,000 bytes each
    const over = {
      ...data,
      content: [
        { ...image, data: half },
        { ...image, data: half },
      ],
    };
    expect(EventDataSchemas['tool/result'].safeParse(over).error?.issues[0]?.message).toBe(
      'at most 1048576 bytes of binary content in total (got 1200000)',
    );
  });

  it('text readers see one line per binary block, never base64', () => {
    const content: ContentBlock[] = [
      { type: 'text', text: 'a screenshot' },
      { ...image, data: 'A'.repeat(16_800) },
      { type: 'resource', uri: 'file:///a.txt', name: 'a', mimeType: 'text/plain', text: 'the notes' },
      { type: 'resource', uri: 'file:///b.bin', data: 'AAAA' },
      { type: 'resource', uri: 'https://x/y', name: 'y' },
    ];
    expect(textOf(content)).toBe(
      [
        'a screenshot',
        '[image image/png, 12.3 KB]',
        '[resource file:///a.txt "a" text/plain]\nthe notes',
        '[resource file:///b.bin, 3 bytes]',
        '[resource link https://x/y "y"]',
      ].join('\n\n'),
    );
  });
});

describe('the activity edge (toResultBlocks, runTool)', () => {
  it('keeps binary blocks while they fit 1 MiB per result; the one past it becomes text saying so', () => {
    const big = 'A'.repeat(1_200_000); // 900,000 bytes
    const out = toResultBlocks([
      { type: 'image', mimeType: 'image/png', data: big },
      { type: 'image', mimeType: 'image/jpeg', data: big },
      { type: 'audio', mimeType: 'audio/wav', data: 'AAAA' },
    ]);
    expect(out[0]).toEqual({ type: 'image', mimeType: 'image/png', data: big });
    expect(out[1]).toEqual({
      type: 'text',
      text: '[image image/jpeg, 878.9 KB: left out, over the limit of 1.0 MB of binary content per tool result]',
    });
    expect(out[2]).toEqual({ type: 'audio', mimeType: 'audio/wav', data: 'AAAA' });
    expect(
      out.reduce((n, b) => n + (b.type === 'image' || b.type === 'audio' ? base64Bytes(b.data) : 0), 0),
    ).toBe(900_003);
    expect(LIMITS.resultBinaryBytes).toBe(1024 * 1024);
  });

  it('a native tool returns images and resources as blocks; a malformed block is text naming the problem', async () => {
    const tool = defineTool({
      name: 'shot',
      description: 'A screenshot.',
      input: z.object({}),
      execute: () => [
        { type: 'text', text: 'here' },
        image,
        { type: 'resource', uri: 'file:///r.txt', text: 'r' },
        { type: 'image', mimeType: 'image/png' } as unknown as ContentBlock,
      ],
    });
    const controller = new AbortController();
    const runtime: ToolRuntime = {
      sessionId: 's',
      callId: 'c1',
      turn: 1,
      step: 1,
      signal: controller.signal,
      heartbeat: () => {},
      sleep: async () => {},
      inject: async () => {},
      steer: async () => {},
    };
    const out = await runTool(tool, 'shot', {}, runtime);
    expect(out.error).toBeUndefined();
    expect(out.content).toEqual([
      { type: 'text', text: 'here' },
      image,
      { type: 'resource', uri: 'file:///r.txt', text: 'r' },
      {
        type: 'text',
        text: '[image block refused: data: Invalid input: expected string, received undefined]',
      },
    ]);
  });
});

describe('the AI SDK prompt', () => {
  const entry = toolEntry([
    { type: 'text', text: 'a screenshot' },
    image,
    { type: 'audio', mimeType: 'audio/wav', data: 'AAAA' },
    { type: 'resource', uri: 'file:///docs/report.pdf', mimeType: 'application/pdf', data: 'AAAA' },
    { type: 'resource', uri: 'file:///a.txt', text: 'the notes' },
    { type: 'resource', uri: 'https://x/y' },
  ]);

  it('an image reaches the prompt as an image-data part, audio and blobs as file-data parts', () => {
    const [message] = toModelMessages([entry]);
    expect(message).toEqual({
      role: 'tool',
      content: [
        {
          type: 'tool-result',
          toolCallId: 'c1',
          toolName: 'shot',
          output: {
            type: 'content',
            value: [
              { type: 'text', text: 'a screenshot' },
              { type: 'image-data', data: PNG, mediaType: 'image/png' },
              { type: 'file-data', data: 'AAAA', mediaType: 'audio/wav' },
              { type: 'file-data', data: 'AAAA', mediaType: 'application/pdf', filename: 'report.pdf' },
              { type: 'text', text: '[resource file:///a.txt]\nthe notes' },
              { type: 'text', text: '[resource link https://x/y]' },
            ],
          },
        },
      ],
    });
  });

  it('a provider that takes no data parts gets the descriptions as text; text-only results stay text', () => {
    const [message] = toModelMessages([entry], NO_TOOL_MEDIA);
    const part = message?.role === 'tool' ? message.content[0] : undefined;
    expect(part?.type === 'tool-result' ? part.output : undefined).toEqual({
      type: 'text',
      value: textOf(entry.content),
    });
    expect(JSON.stringify(message)).not.toContain(PNG);
    const [plain] = toModelMessages([toolEntry([{ type: 'text', text: 'ok' }])]);
    expect(plain?.role === 'tool' && plain.content[0]).toMatchObject({
      output: { type: 'text', value: 'ok' },
    });
  });

  it('the local model reads data parts by name, never as base64', () => {
    expect(
      outputTextForTest({
        type: 'content',
        value: [
          { type: 'text', text: 'see' },
          { type: 'image-data', data: PNG, mediaType: 'image/png' },
        ],
      }),
    ).toBe('see\n[image-data image/png]');
  });
});

describe('compaction with binary blocks', () => {
  it('counts a binary block as a flat BINARY_BLOCK_TOKENS, not its base64; summaries describe it', () => {
    const small = estimateTokens(toolEntry([{ ...image, data: 'AAAA' }]));
    const large = estimateTokens(toolEntry([{ ...image, data: 'A'.repeat(1_000_000) }]));
    expect(small).toBe(large);
    expect(small).toBe(Math.ceil('shot'.length / 4) + BINARY_BLOCK_TOKENS + 4);
    const text = estimateTokens(toolEntry([{ type: 'resource', uri: 'file:///a', text: 'x'.repeat(400) }]));
    expect(text).toBeGreaterThan(100);
    expect(text).toBeLessThan(BINARY_BLOCK_TOKENS);
    const summary = renderForSummary([
      toolEntry([
        { type: 'text', text: 'shot taken' },
        { ...image, data: 'A'.repeat(4000) },
      ]),
    ]);
    expect(summary).toBe('[tool shot result]\nshot taken\n[image image/png, 2.9 KB]');
  });
});
