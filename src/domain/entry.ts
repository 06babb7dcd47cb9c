/**
 * The transcript entry: one model-visible message as the projection holds it and a model request sends it. Its
 * type and schema, the builders that make it from an event (the workflow, the activities that rebuild a referenced
 * entry and the tests use the same ones), and the rolling hash over entries. A leaf: it imports only zod and the
 * message blocks, so the log, the projection and compaction can all use it without importing each other.
 */
import { z } from 'zod';
import { lazy } from './lazy';
import {
  MessageSourceSchema,
  TextBlockSchema,
  ToolResultContentSchema,
  type ContentBlock,
  type MessageSource,
  type TextBlock,
  type UserMessage,
} from './messages';

export type TranscriptEntry =
  | { role: 'user'; id: string; content: TextBlock[]; source: MessageSource }
  | { role: 'assistant'; id: string; content: TextBlock[]; toolCalls?: ToolCallInfo[]; interrupted?: true }
  | { role: 'tool'; callId: string; name: string; content: ContentBlock[]; error?: ErrorInfo };

export const ErrorInfoSchema = lazy(() => z.object({ message: z.string(), code: z.string() }));
/** A failure as data: what went wrong, and its code (docs/protocol.md "Error codes"). */
export type ErrorInfo = z.infer<typeof ErrorInfoSchema>;

export const ToolCallInfoSchema = lazy(() =>
  z.object({
    callId: z.string(),
    name: z.string(),
    arguments: z.record(z.string(), z.unknown()).nullable(),
    rawArguments: z.string().optional(),
  }),
);
/**
 * One tool call of an assistant message. `arguments` is the parsed JSON object, or `null` when the model's
 * arguments were not a JSON object; then `rawArguments` holds the text as the model wrote it, and the call is
 * answered with a TOOL_INVALID_ARGUMENTS result without running.
 */
export type ToolCallInfo = z.infer<typeof ToolCallInfoSchema>;

export const AssistantMessageSchema = lazy(() =>
  z.object({
    id: z.string(),
    role: z.literal('assistant'),
    content: z.array(TextBlockSchema),
    toolCalls: z.array(ToolCallInfoSchema).optional(),
  }),
);
/** A model answer as an `assistant/message` carries it: its text, and the tool calls it asks for. */
export type AssistantMessage = z.infer<typeof AssistantMessageSchema>;

/** One model-visible message (a `TranscriptEntry`), as a fork's snapshot carries it. */
export const TranscriptEntrySchema = lazy(() =>
  z.discriminatedUnion('role', [
    z.strictObject({
      role: z.literal('user'),
      id: z.string().min(1),
      content: z.array(TextBlockSchema),
      source: MessageSourceSchema,
    }),
    z.strictObject({
      role: z.literal('assistant'),
      id: z.string().min(1),
      content: z.array(TextBlockSchema),
      toolCalls: z.array(ToolCallInfoSchema).optional(),
      interrupted: z.literal(true).optional(),
    }),
    z.strictObject({
      role: z.literal('tool'),
      callId: z.string().min(1),
      name: z.string(),
      content: ToolResultContentSchema,
      error: ErrorInfoSchema.optional(),
    }),
  ]),
);

export const EMPTY_TRANSCRIPT_HASH = '0';

/**
 * `Math.imul`, read once. Inside the workflow sandbox every `Math.imul` lookup goes through the sandbox's guarded
 * globals, which made this hash ~55× slower there than outside (1.7 ms per step); a module-level binding avoids it.
 */
const imul = Math.imul;

/**
 * Rolling hash of a transcript: hash(prefix + entry) from hash(prefix) and the entry's JSON. A 53-bit string hash
 * (cyrb53), as hex; deterministic, no Node built-ins, so the workflow and the activities compute the same value.
 */

export function extendHash(previous: string, entry: TranscriptEntry): string {
  const text = `${previous}|${JSON.stringify(entry)}`;
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    h1 = imul(h1 ^ ch, 2654435761);
    h2 = imul(h2 ^ ch, 1597334677);
  }
  h1 = imul(h1 ^ (h1 >>> 16), 2246822507) ^ imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = imul(h2 ^ (h2 >>> 16), 2246822507) ^ imul(h1 ^ (h1 >>> 13), 3266489909);
  return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(16);
}

/** The hash of one entry on its own (the rolling hash of a transcript holding only it). */
export function entryHash(entry: TranscriptEntry): string {
  return extendHash(EMPTY_TRANSCRIPT_HASH, entry);
}

/** The entry of a `user/message`. */
export function userEntry(m: UserMessage): TranscriptEntry {
  return { role: 'user', id: m.id, content: [...m.content], source: m.source };
}

/** The entry of an `assistant/message`. */
export function assistantEntry(m: AssistantMessage, interrupted?: boolean): TranscriptEntry {
  const entry: TranscriptEntry = { role: 'assistant', id: m.id, content: m.content };
  if (m.toolCalls?.length) entry.toolCalls = m.toolCalls;
  if (interrupted) entry.interrupted = true;
  return entry;
}

/** The entry of a `tool/result` (`name` from its `tool/call`). */
export function toolEntry(
  callId: string,
  name: string,
  content: ContentBlock[],
  error: ErrorInfo | undefined,
): TranscriptEntry {
  const entry: TranscriptEntry = { role: 'tool', callId, name, content };
  if (error) entry.error = error;
  return entry;
}

/** The model-visible message that stands for everything a `compaction/summary` replaced. */
export function summaryEntry(
  seq: number,
  data: { throughSeq: number; summary: string; model: string },
): TranscriptEntry {
  return {
    role: 'user',
    id: `compaction-${seq}`,
    content: [
      {
        type: 'text',
        text: `Summary of the earlier conversation (log seq 0–${data.throughSeq} except the messages that follow; compacted by ${data.model}):\n\n${data.summary}`,
      },
    ],
    source: { kind: 'compaction', model: data.model, throughSeq: data.throughSeq },
  };
}
