/**
 * Mapping between our transcript and the AI SDK's prompt, both ways: TranscriptEntry[] → ModelMessage[] (user
 * messages, assistant text with its tool calls, tool results), ToolSpec[] → the SDK's ToolSet (JSON schemas from
 * the worker's registry, no `execute`: tools run as our own activities), and the SDK's tool-call parts → our
 * ToolCallInfo. Pure; runs in activities.
 */
import { jsonSchema, tool, type JSONSchema7, type ModelMessage, type ToolSet } from 'ai';
import type { ToolCallInfo } from '../../domain/events';
import { textOf } from '../../domain/messages';
import type { TranscriptEntry } from '../../domain/transcript';
import type { ToolSpec } from '../types';

type ToolResultPart = Extract<ModelMessage, { role: 'tool' }>['content'][number];

/**
 * The model-visible transcript as SDK messages, in log order. Consecutive tool results become one tool message
 * (they answer one assistant message); consecutive user messages stay separate (the provider adapters merge them
 * where the API needs it). An assistant entry with neither text nor calls is left out (APIs refuse empty turns).
 */
export function toModelMessages(entries: readonly TranscriptEntry[]): ModelMessage[] {
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
            : { type: 'text', value: text },
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
