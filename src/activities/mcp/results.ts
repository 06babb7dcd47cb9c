/**
 * From an MCP `tools/call` result to what the session logs: a `tool/result`'s content blocks and, for `isError`, an
 * error the model reads. Pure: no I/O. Text comes through verbatim, `structuredContent` as its JSON (unless a text
 * block already carries exactly that JSON, as the MCP spec recommends servers do), images and audio as image and
 * audio blocks, embedded resources as resource blocks with their text or their bytes (`data`), resource links as
 * resource blocks with neither; a block of a type this mapping does not know as a one-line text description. The
 * blocks then pass the activity edge's checks (src/domain/blocks.ts: validated, binary at most 1 MiB per result).
 */
import type { ErrorInfo } from '../../domain/events';
import { toResultBlocks } from '../../domain/blocks';
import { textOf, type ContentBlock } from '../../domain/messages';
import { ErrorCodes } from '../../contract';

/** The parts of an MCP CallToolResult this mapping reads (the SDK's type is wider; unknown blocks are described). */
export interface McpCallResult {
  content?: readonly McpContent[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  /** Old servers answer `{toolResult}` instead (protocol 2024-10-07). */
  toolResult?: unknown;
}

export type McpContent =
  | { type: 'text'; text: string }
  | { type: 'image' | 'audio'; data: string; mimeType: string }
  | { type: 'resource_link'; uri: string; name?: string; mimeType?: string }
  | {
      type: 'resource';
      resource: { uri: string; mimeType?: string; text?: string; blob?: string };
    }
  | { type: string; [field: string]: unknown };

/** What one call settles as: the blocks, and an error when the server flagged the result (`isError`). */
export interface MappedResult {
  content: ContentBlock[];
  error?: ErrorInfo;
}

/**
 * One MCP content block as a session block, before validation (fields are copied as the server sent them; the
 * edge's checks turn a malformed one into a text block saying why).
 */
export function mapContent(block: McpContent): unknown {
  const b = block as Record<string, unknown>;
  switch (block.type) {
    case 'text':
      return { type: 'text', text: String(b.text ?? '') };
    case 'image':
    case 'audio':
      return { type: block.type, mimeType: b.mimeType, data: b.data };
    case 'resource_link':
      return withOptional({ type: 'resource', uri: b.uri }, { name: b.name, mimeType: b.mimeType });
    case 'resource': {
      const r = (b.resource ?? {}) as Record<string, unknown>;
      return withOptional(
        { type: 'resource', uri: r.uri },
        { name: r.name, mimeType: r.mimeType, text: r.text, data: r.blob },
      );
    }
    default:
      return { type: 'text', text: `[${block.type} content]` };
  }
}

/** `base` with the fields of `optional` that are present (absent fields stay absent, as the schemas expect). */
function withOptional(
  base: Record<string, unknown>,
  optional: Record<string, unknown>,
): Record<string, unknown> {
  for (const [k, v] of Object.entries(optional)) if (v !== undefined && v !== null) base[k] = v;
  return base;
}

/**
 * A whole call result. `isError: true` becomes the error `TOOL_FAILED` whose message is the result's text (the
 * model reads the content too). An empty result is one empty text block, so every `tool/result` has content.
 */
export function mapCallResult(result: McpCallResult, toolName: string): MappedResult {
  const content: ContentBlock[] = toResultBlocks((result.content ?? []).map(mapContent));
  if (result.structuredContent !== undefined) {
    const json = JSON.stringify(result.structuredContent);
    const carried = content.some(
      (b) => b.type === 'text' && (b.text === json || safeJsonEqual(b.text, result.structuredContent)),
    );
    if (!carried) content.push({ type: 'text', text: json });
  }
  if (result.content === undefined && result.toolResult !== undefined)
    content.push({ type: 'text', text: JSON.stringify(result.toolResult) });
  if (content.length === 0) content.push({ type: 'text', text: '' });
  if (result.isError !== true) return { content };
  const text = textOf(content).trim();
  return {
    content,
    error: {
      code: ErrorCodes.ToolFailed,
      message: `${toolName} reported an error${text ? `: ${text.slice(0, 2000)}` : ''}`,
    },
  };
}

/** Whether `text` is JSON equal to `value` (a server may pretty-print the JSON it also sends as text). */
function safeJsonEqual(text: string, value: unknown): boolean {
  try {
    return JSON.stringify(JSON.parse(text)) === JSON.stringify(value);
  } catch {
    return false;
  }
}
