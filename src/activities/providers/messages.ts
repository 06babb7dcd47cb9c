/**
 * Mapping between our transcript and the AI SDK's prompt, both ways: TranscriptEntry[] → ModelMessage[] (user
 * messages, assistant text with its tool calls, tool results), ToolSpec[] → the SDK's ToolSet (JSON schemas from
 * the worker's registry, no `execute`: tools run as our own activities), and the SDK's tool-call parts → our
 * ToolCallInfo. Pure; runs in activities.
 */
import { jsonSchema, tool, type JSONSchema7, type ModelMessage, type ToolSet } from 'ai';
import type { ToolCallInfo } from '../../domain/events';
import { blockText, textOf, type ContentBlock } from '../../domain/messages';
import type { TranscriptEntry } from '../../domain/transcript';
import type { ToolSpec } from '../types';

type ToolResultPart = Extract<ModelMessage, { role: 'tool' }>['content'][number];
type ToolOutput = Extract<ToolResultPart, { type: 'tool-result' }>['output'];
type OutputPart = Extract<ToolOutput, { type: 'content' }>['value'][number];

/**
 * Which binary blocks of tool results a provider takes as data parts (by kind and MIME type); the others reach the
 * model as their one-line description (`[image image/png, 12.3 KB]`), never as base64 text.
 */
export type ToolMediaSupport = (kind: 'image' | 'audio' | 'resource', mimeType: string) => boolean;

/** Every binary block as a data part (the default; providers narrow it to what their API accepts). */
export const ALL_TOOL_MEDIA: ToolMediaSupport = () => true;
/** No binary block as a data part (text-only models; APIs whose tool messages hold text only). */
export const NO_TOOL_MEDIA: ToolMediaSupport = () => false;

/**
 * The model-visible transcript as SDK messages, in log order. Consecutive tool results become one tool message
 * (they answer one assistant message); consecutive user messages stay separate (the provider adapters merge them
 * where the API needs it). An assistant entry with neither text nor calls is left out (APIs refuse empty turns).
 */
export function toModelMessages(
  entries: readonly TranscriptEntry[],
  media: ToolMediaSupport = ALL_TOOL_MEDIA,
): ModelMessage[] {
  const out: ModelMessage[] = [];
  for (const entry of entries) {
    switch (entry.role) {
      case 'user':
        out.push({
          role: 'user',
          content: entry.content.map((b) => ({ type: 'text' as const, text: b.text })),
        });
        break;
      case 'assistant': {
        const text = textOf(entry.content);
        const parts = [
          ...(text ? [{ type: 'text' as const, text }] : []),
          ...(entry.toolCalls ?? []).map((c) => ({
            type: 'tool-call' as const,
            toolCallId: c.callId,
            toolName: c.name,
            // Unparsable arguments go back to the model as the text it wrote (the result explains the error).
            input: c.arguments ?? c.rawArguments ?? '',
          })),
        ];
        if (parts.length) out.push({ role: 'assistant', content: parts });
        break;
      }
      case 'tool': {
        const text = textOf(entry.content);
        const part: ToolResultPart = {
          type: 'tool-result',
          toolCallId: entry.callId,
          toolName: entry.name,
          output: entry.error
            ? { type: 'error-text', value: text || entry.error.message }
            : toolOutput(entry.content, text, media),
        };
        const last = out[out.length - 1];
        if (last?.role === 'tool') last.content.push(part);
        else out.push({ role: 'tool', content: [part] });
        break;
      }
    }
  }
  return out;
}

/**
 * A successful tool result's output: text alone as `text`; with binary blocks the provider takes, `content` parts
 * in block order — text, `image-data` for images, `file-data` for audio and embedded blobs — and every other block
 * as a text part describing it.
 */
function toolOutput(content: readonly ContentBlock[], text: string, media: ToolMediaSupport): ToolOutput {
  const parts = content.map(outputPart(media));
  if (!parts.some((p) => p.type !== 'text')) return { type: 'text', value: text };
  return { type: 'content', value: parts };
}

function outputPart(media: ToolMediaSupport): (block: ContentBlock) => OutputPart {
  return (block) => {
    switch (block.type) {
      case 'text':
        return { type: 'text', text: block.text };
      case 'image':
        return media('image', block.mimeType)
          ? { type: 'image-data', data: block.data, mediaType: block.mimeType }
          : { type: 'text', text: blockText(block) };
      case 'audio':
        return media('audio', block.mimeType)
          ? { type: 'file-data', data: block.data, mediaType: block.mimeType }
          : { type: 'text', text: blockText(block) };
      case 'resource': {
        const mediaType = block.mimeType ?? 'application/octet-stream';
        if (block.data === undefined || !media('resource', mediaType))
          return { type: 'text', text: blockText(block) };
        const filename = block.name ?? block.uri.split('/').pop() ?? '';
        return { type: 'file-data', data: block.data, mediaType, ...(filename ? { filename } : {}) };
      }
      default:
        return { type: 'text', text: blockText(block) };
    }
  };
}

/** The tools the model may call, as an SDK ToolSet without `execute` (the SDK reports calls, never runs them). */
export function toToolSet(specs: readonly ToolSpec[]): ToolSet | undefined {
  if (specs.length === 0) return undefined;
  const set: ToolSet = {};
  for (const spec of specs) {
    set[spec.name] = tool({
      description: spec.description,
      inputSchema: jsonSchema<Record<string, unknown>>(spec.inputSchema as JSONSchema7),
    });
  }
  return set;
}

/** A tool-call stream part as the SDK reports it (a valid call, or one with `invalid: true` and the raw input). */
export interface SdkToolCall {
  toolCallId: string;
  toolName: string;
  input: unknown;
  invalid?: boolean;
}

/**
 * Our call record of an SDK tool call. Arguments that are not a JSON object (malformed JSON, an array, a number)
 * become `arguments: null` with the raw text in `rawArguments`: the call is logged and answered with an error the
 * model can read, and never runs.
 */
export function fromSdkToolCall(part: SdkToolCall): ToolCallInfo {
  const input = part.input;
  const isObject = typeof input === 'object' && input !== null && !Array.isArray(input);
  if (isObject)
    return { callId: part.toolCallId, name: part.toolName, arguments: input as Record<string, unknown> };
  return {
    callId: part.toolCallId,
    name: part.toolName,
    arguments: null,
    rawArguments: typeof input === 'string' ? input : (JSON.stringify(input) ?? ''),
  };
}
