/**
 * From an MCP `tools/call` result to what the session logs: a `tool/result`'s content blocks and, for `isError`, an
 * error the model reads. Pure: no I/O. The session's content blocks are text only (protocol.md, ContentBlock), so
 * text comes through verbatim, `structuredContent` as its JSON (unless a text block already carries exactly that
 * JSON, as the MCP spec recommends servers do), embedded text resources as their text, and binary content (images,
 * audio, blobs) and resource links as a one-line text description naming type, MIME type, size and URI.
 */
import type { ErrorInfo } from '../../domain/events';
import type { ContentBlock } from '../../domain/messages';
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

/** Bytes of a base64 string (for the descriptions of binary content). */
function base64Bytes(data: string): number {
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((data.length * 3) / 4) - padding);
}

/** One MCP content block as session content. */
export function mapContent(block: McpContent): ContentBlock {
  const b = block as Record<string, unknown>;
  switch (block.type) {
    case 'text':
      return { type: 'text', text: String(b.text ?? '') };
    case 'image':
    case 'audio':
      return {
        type: 'text',
        text: `[${block.type} ${String(b.mimeType ?? 'unknown type')}, ${base64Bytes(String(b.data ?? ''))} bytes]`,
      };
    case 'resource_link':
      return {
        type: 'text',
        text: `[resource link ${String(b.uri)}${b.name ? ` "${String(b.name)}"` : ''}${b.mimeType ? ` (${String(b.mimeType)})` : ''}]`,
      };
    case 'resource': {
      const r = (b.resource ?? {}) as { uri?: string; mimeType?: string; text?: string; blob?: string };
      if (typeof r.text === 'string') return { type: 'text', text: r.text };
      return {
        type: 'text',
        text: `[resource ${String(r.uri)}${r.mimeType ? ` ${r.mimeType}` : ''}, ${base64Bytes(r.blob ?? '')} bytes]`,
      };
    }
    default:
      return { type: 'text', text: `[${block.type} content]` };
  }
}

/**
 * A whole call result. `isError: true` becomes the error `TOOL_FAILED` whose message is the result's text (the
 * model reads the content too). An empty result is one empty text block, so every `tool/result` has content.
 */
export function mapCallResult(result: McpCallResult, toolName: string): MappedResult {
  const content: ContentBlock[] = (result.content ?? []).map(mapContent);
  if (result.structuredContent !== undefined) {
    const json = JSON.stringify(result.structuredContent);
    if (!content.some((b) => b.text === json || safeJsonEqual(b.text, result.structuredContent)))
      content.push({ type: 'text', text: json });
  }
  if (result.content === undefined && result.toolResult !== undefined)
    content.push({ type: 'text', text: JSON.stringify(result.toolResult) });
  if (content.length === 0) content.push({ type: 'text', text: '' });
  if (result.isError !== true) return { content };
  const text = content
    .map((b) => b.text)
    .join('\n')
    .trim();
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
