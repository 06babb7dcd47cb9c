/**
 * A tool result's content as it crosses an activity edge (a native tool's return value, an MCP server's answer):
 * every block validated against ContentBlockSchema, and the binary data of the result held to
 * `LIMITS.resultBinaryBytes`. Nothing is dropped silently: a block that does not fit becomes a text block that
 * describes it and says why. Pure and deterministic (sizes come from base64 lengths).
 */
import { describeZodIssue } from './util';
import {
  base64Bytes,
  ContentBlockSchema,
  formatBytes,
  LIMITS,
  type ContentBlock,
  type TextBlock,
} from './messages';

/** Longest piece of a refused block's own fields quoted in its description. */
const QUOTE_CHARS = 100;

/**
 * Tool-result content from raw blocks: a string becomes one text block; each block is validated (a refused one
 * becomes `[<type> block refused: <field>: <problem>]`); binary blocks are kept in order while their decoded bytes
 * add up to at most `maxBinaryBytes`, and each one that would pass it becomes a text block describing it
 * (`[image image/png, 1.5 MB: left out, over the limit of 1 MiB of binary content per tool result]`). Never throws.
 */
export function toResultBlocks(
  raw: string | readonly unknown[],
  maxBinaryBytes: number = LIMITS.resultBinaryBytes,
): ContentBlock[] {
  if (typeof raw === 'string') return [{ type: 'text', text: raw }];
  let left = maxBinaryBytes;
  return raw.map((item): ContentBlock => {
    const bytes = rawBinaryBytes(item);
    if (bytes > left) return overLimit(item, bytes, maxBinaryBytes);
    const parsed = ContentBlockSchema.safeParse(item);
    if (!parsed.success) return refused(item, describeZodIssue(parsed.error.issues, 'block'));
    left -= bytes;
    return parsed.data;
  });
}

/** Decoded bytes of a raw block's `data`, read before validation (0 when it has no string `data`). */
function rawBinaryBytes(item: unknown): number {
  const data = isRecord(item) ? item.data : undefined;
  return typeof data === 'string' ? base64Bytes(data) : 0;
}

function overLimit(item: unknown, bytes: number, limit: number): TextBlock {
  const r = isRecord(item) ? item : {};
  const type = quote(r.type) || 'binary';
  const about = [type === 'resource' ? quote(r.uri) : '', quote(r.mimeType)].filter(Boolean).join(' ');
  return {
    type: 'text',
    text: `[${type}${about ? ` ${about}` : ''}, ${formatBytes(bytes)}: left out, over the limit of ${formatBytes(limit)} of binary content per tool result]`,
  };
}

function refused(item: unknown, problem: string): TextBlock {
  const type = (isRecord(item) && quote(item.type)) || 'content';
  return { type: 'text', text: `[${type} block refused: ${problem}]` };
}

/** A field of a raw block for a description: strings only, cut to QUOTE_CHARS. */
function quote(value: unknown): string {
  if (typeof value !== 'string') return '';
  return value.length > QUOTE_CHARS ? `${value.slice(0, QUOTE_CHARS)}…` : value;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
