/**
 * Messages and their sources: the one identified, frozen `UserMessage` shape shared by every lane, pre-step
 * listener, tool context and hook (decision: "UserMessage is the shared identified, frozen shape"), and the content
 * blocks. Messages (user, context, assistant) hold text blocks only; a tool result's content may also hold images,
 * audio and resources (`ContentBlock`), with binary data as base64 whose size is computed arithmetically here.
 * Pure and deterministic. Schemas here validate data crossing an edge; inside the domain TypeScript is trusted.
 */
import { z } from 'zod';
import { lazy } from './lazy';

/** Limits enforced at every edge; error messages name the field and the limit. */
export const LIMITS = {
  /** Longest message id. */
  idChars: 128,
  /** Largest total text of one message, in UTF-16 code units. */
  contentChars: 256 * 1024,
  /** Most content blocks in one message. */
  contentBlocks: 64,
  /** Longest source kind / plugin name. */
  sourceNameChars: 128,
  /** Largest JSON size of a message source. */
  sourceJsonChars: 4096,
  /** Most bytes of binary content (images, audio, embedded blobs; decoded) in one tool result, summed over blocks. */
  resultBinaryBytes: 1024 * 1024,
  /** Longest MIME type of a block. */
  mimeTypeChars: 255,
  /** Longest resource URI. */
  uriChars: 8192,
  /** Longest resource name. */
  resourceNameChars: 1024,
} as const;

/** Most base64 characters of one block's data: `LIMITS.resultBinaryBytes` encoded. */
export const MAX_BASE64_CHARS = Math.ceil(LIMITS.resultBinaryBytes / 3) * 4;

/** A text block: the only kind in user, context and assistant messages. */

export const TextBlockSchema = lazy(() => z.object({ type: z.literal('text'), text: z.string() }));
export type TextBlock = z.infer<typeof TextBlockSchema>;

const MimeTypeSchema = lazy(() =>
  z
    .string()
    .min(1, 'must not be empty')
    .max(LIMITS.mimeTypeChars, `at most ${LIMITS.mimeTypeChars} characters`)
    .regex(/^[\w!#$&^.+-]+\/[\w!#$&^.+-]+(\s*;.*)?$/, 'a MIME type such as image/png'),
);
const Base64Schema = lazy(() =>
  z
    .string()
    .max(
      MAX_BASE64_CHARS,
      `at most ${LIMITS.resultBinaryBytes} bytes (${MAX_BASE64_CHARS} characters of base64)`,
    )
    .regex(/^[A-Za-z0-9+/]*={0,2}$/, 'base64 (A-Z a-z 0-9 + / and = padding)'),
);

/** An image in a tool result: base64 `data` of type `mimeType`. */
export const ImageBlockSchema = lazy(() =>
  z.object({ type: z.literal('image'), mimeType: MimeTypeSchema, data: Base64Schema }),
);
export type ImageBlock = z.infer<typeof ImageBlockSchema>;
/** Audio in a tool result: base64 `data` of type `mimeType`. */
export const AudioBlockSchema = lazy(() =>
  z.object({ type: z.literal('audio'), mimeType: MimeTypeSchema, data: Base64Schema }),
);
export type AudioBlock = z.infer<typeof AudioBlockSchema>;
/**
 * A resource in a tool result: embedded with its `text`, embedded with its bytes as base64 `data`, or — with neither
 * — a link the model can only name.
 */
export const ResourceBlockSchema = lazy(() =>
  z
    .object({
      type: z.literal('resource'),
      uri: z
        .string()
        .min(1, 'must not be empty')
        .max(LIMITS.uriChars, `at most ${LIMITS.uriChars} characters`),
      name: z
        .string()
        .max(LIMITS.resourceNameChars, `at most ${LIMITS.resourceNameChars} characters`)
        .optional(),
      mimeType: MimeTypeSchema.optional(),
      text: z.string().optional(),
      data: Base64Schema.optional(),
    })
    .refine((r) => r.text === undefined || r.data === undefined, {
      path: ['data'],
      message: 'a resource carries text or data, not both',
    }),
);
export type ResourceBlock = z.infer<typeof ResourceBlockSchema>;

/**
 * A block of a tool result's content (and of a transcript's tool entries): text, image, audio or resource.
 * Consumers skip types they do not know.
 */
export const ContentBlockSchema = lazy(() =>
  z.discriminatedUnion('type', [TextBlockSchema, ImageBlockSchema, AudioBlockSchema, ResourceBlockSchema], {
    error: 'a block of type text, image, audio or resource',
  }),
);
export type ContentBlock = TextBlock | ImageBlock | AudioBlock | ResourceBlock;

/** A tool result's content: blocks whose binary data add up to at most `LIMITS.resultBinaryBytes`. */
export const ToolResultContentSchema = lazy(() =>
  z.array(ContentBlockSchema).superRefine((blocks, ctx) => {
    const bytes = blocks.reduce((n, b) => n + binaryBytes(b), 0);
    if (bytes > LIMITS.resultBinaryBytes)
      ctx.addIssue({
        code: 'custom',
        message: `at most ${LIMITS.resultBinaryBytes} bytes of binary content in total (got ${bytes})`,
      });
  }),
);

/** Decoded size of base64 text, computed from its length (no decoding, no Buffer: the workflow runs this). */
export function base64Bytes(data: string): number {
  let padding = 0;
  while (padding < 2 && data.length > padding && data.charCodeAt(data.length - 1 - padding) === 61) padding++;
  return Math.floor(((data.length - padding) * 3) / 4);
}

/** Decoded bytes of a block's binary data (0 for text, text resources and resource links). */
export function binaryBytes(block: ContentBlock): number {
  return block.type === 'text' || block.data === undefined ? 0 : base64Bytes(block.data);
}

/** A byte count as people read it: `16 bytes`, `12.3 KB`, `1.5 MB` (1 KB = 1024 bytes). */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} byte${bytes === 1 ? '' : 's'}`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

/**
 * A block as text for readers that show no binary content (CLI, text-only models, summaries, snapshots): text as
 * it is; an image or audio as `[image image/png, 12.3 KB]`; an embedded resource as `[resource <uri> "name" type,
 * size]` (a text resource followed by its text); a link as `[resource link <uri> "name" type]`. Never base64.
 */
export function blockText(block: ContentBlock): string {
  switch (block.type) {
    case 'text':
      return block.text;
    case 'image':
    case 'audio':
      return `[${block.type} ${block.mimeType}, ${formatBytes(base64Bytes(block.data))}]`;
    case 'resource': {
      const about = `${block.uri}${block.name ? ` "${block.name}"` : ''}${block.mimeType ? ` ${block.mimeType}` : ''}`;
      if (block.text !== undefined) return `[resource ${about}]\n${block.text}`;
      if (block.data !== undefined) return `[resource ${about}, ${formatBytes(base64Bytes(block.data))}]`;
      return `[resource link ${about}]`;
    }
    default:
      return `[${String((block as { type?: unknown }).type)} content]`;
  }
}

/**
 * Who produced a message. `{kind:'user'}` is a direct message; anything else is context from the named producer
 * (rule 35). Producer-specific fields are kept as given.
 */
export const MessageSourceSchema = lazy(() =>
  z
    .looseObject({
      kind: z
        .string()
        .min(1, 'must not be empty')
        .max(LIMITS.sourceNameChars, `at most ${LIMITS.sourceNameChars} characters`),
    })
    .superRefine((source, ctx) => {
      if (source.kind === 'plugin' && (typeof source.plugin !== 'string' || source.plugin.length === 0)) {
        ctx.addIssue({
          code: 'custom',
          path: ['plugin'],
          message: "a source of kind 'plugin' needs a non-empty plugin name",
        });
      }
      if (source.kind === 'tool' && (typeof source.callId !== 'string' || source.callId.length === 0)) {
        ctx.addIssue({
          code: 'custom',
          path: ['callId'],
          message: "a source of kind 'tool' needs a non-empty callId",
        });
      }
      let json: string | undefined;
      try {
        json = JSON.stringify(source);
      } catch {
        json = undefined;
      }
      if (json === undefined) ctx.addIssue({ code: 'custom', message: 'must be plain JSON' });
      else if (json.length > LIMITS.sourceJsonChars)
        ctx.addIssue({ code: 'custom', message: `at most ${LIMITS.sourceJsonChars} characters as JSON` });
    }),
);

export type MessageSource =
  | { kind: 'user' }
  | { kind: 'plugin'; plugin: string; [field: string]: unknown }
  | { kind: 'tool'; callId: string; [field: string]: unknown }
  | { kind: string; [field: string]: unknown };

export const USER_SOURCE: MessageSource = Object.freeze({ kind: 'user' });

/** Whether a message is direct user input (rule 35: by source alone). */
export function isDirect(source: MessageSource): boolean {
  return source.kind === 'user';
}

export const MessageIdSchema = lazy(() =>
  z
    .string()
    .min(1, 'must not be empty')
    .max(LIMITS.idChars, `at most ${LIMITS.idChars} characters`)
    .regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces'),
);

const ContentSchema = lazy(() =>
  z.union([z.string(), z.array(TextBlockSchema)]).superRefine((content, ctx) => {
    if (typeof content !== 'string' && content.length > LIMITS.contentBlocks) {
      ctx.addIssue({ code: 'custom', message: `at most ${LIMITS.contentBlocks} blocks` });
    }
    const chars =
      typeof content === 'string' ? content.length : content.reduce((n, b) => n + b.text.length, 0);
    if (chars > LIMITS.contentChars) {
      ctx.addIssue({
        code: 'custom',
        message: `at most ${LIMITS.contentChars} characters of text (got ${chars})`,
      });
    }
    if (chars === 0) ctx.addIssue({ code: 'custom', message: 'must not be empty' });
  }),
);

/** A message as a caller sends it on any lane (wire): id optional, content a string or blocks. */
export const MessageInputSchema = lazy(() =>
  z.strictObject({
    id: MessageIdSchema.optional(),
    content: ContentSchema,
    source: MessageSourceSchema.optional(),
  }),
);
export type MessageInput = z.infer<typeof MessageInputSchema>;

/** The identified, frozen message every lane delivers and every `user/message` carries (wire). */
export interface UserMessage {
  readonly id: string;
  readonly role: 'user';
  readonly content: readonly TextBlock[];
  readonly source: MessageSource;
}

export const UserMessageSchema = lazy(() =>
  z.object({
    id: MessageIdSchema,
    role: z.literal('user'),
    content: z.array(TextBlockSchema),
    source: MessageSourceSchema,
  }),
);

/** Normalizes a message's content to text blocks. */
export function toBlocks(content: string | readonly TextBlock[]): TextBlock[] {
  return typeof content === 'string'
    ? [{ type: 'text', text: content }]
    : content.map((b) => ({ type: 'text', text: b.text }));
}

/** Plain text of blocks, joined by blank lines; binary blocks and resources as `blockText` describes them. */
export function textOf(content: readonly ContentBlock[]): string {
  return content.map(blockText).join('\n\n');
}

/** Deep-freezes a plain JSON value (messages are frozen once identified). */
export function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value as Record<string, unknown>)) deepFreeze(v);
  }
  return value;
}

/**
 * Builds the frozen UserMessage from validated input. `newId` is called only when the input has no id; the workflow
 * passes its deterministic uuid4, the client a random one.
 */
export function makeUserMessage(
  input: MessageInput,
  defaultSource: MessageSource,
  newId: () => string,
): UserMessage {
  const source = (input.source ?? defaultSource) as MessageSource;
  return deepFreeze({
    id: input.id ?? newId(),
    role: 'user' as const,
    content: toBlocks(input.content),
    source: JSON.parse(JSON.stringify(source)) as MessageSource,
  });
}
