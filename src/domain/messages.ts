/**
 * Messages and their sources: the one identified, frozen `UserMessage` shape shared by every lane, pre-step
 * listener, tool context and hook (decision: "UserMessage is the shared identified, frozen shape").
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
} as const;

export const TextBlockSchema = lazy(() => z.object({ type: z.literal('text'), text: z.string() }));
export type TextBlock = z.infer<typeof TextBlockSchema>;
/** The content block union; only text today. Consumers skip types they do not know. */
export const ContentBlockSchema = TextBlockSchema;
export type ContentBlock = TextBlock;

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
  z.union([z.string(), z.array(ContentBlockSchema)]).superRefine((content, ctx) => {
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
  readonly content: readonly ContentBlock[];
  readonly source: MessageSource;
}

export const UserMessageSchema = lazy(() =>
  z.object({
    id: MessageIdSchema,
    role: z.literal('user'),
    content: z.array(ContentBlockSchema),
    source: MessageSourceSchema,
  }),
);

/** Normalizes content to blocks. */
export function toBlocks(content: string | readonly ContentBlock[]): ContentBlock[] {
  return typeof content === 'string'
    ? [{ type: 'text', text: content }]
    : content.map((b) => ({ type: 'text', text: b.text }));
}

/** Plain text of a message's blocks, joined by blank lines. */
export function textOf(content: readonly { text: string }[]): string {
  return content.map((b) => b.text).join('\n\n');
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
