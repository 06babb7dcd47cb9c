/**
 * The `testing` toolset (AGENT_SESSIONS_TOOLSETS=testing): small tools that make every path of the loop
 * observable in tests and demos. Runs in activities. It lives here, below the worker, because the worker registers
 * it by name; users reach it through `agent-sessions/testing` (src/testing re-exports it).
 */
import { z } from 'zod';
import { MessageSourceSchema, TextBlockSchema, type MessageSource } from '../domain/messages';
import { defineTool, type ToolDefinition } from './tools';

const Content = z.union([z.string().min(1), z.array(TextBlockSchema).min(1)]);

export const echoTool = defineTool({
  name: 'echo',
  description: 'Returns its text argument unchanged.',
  input: z.object({ text: z.string() }),
  execute: ({ text }) => text,
});

export const sleepTool = defineTool({
  name: 'sleep',
  description:
    'Waits `ms` milliseconds (heartbeating; cancellable), then says so. With `context`, defers that text as context ' +
    'for the next step; with `graceful`, a cancel ends the wait early and the call still returns (with its context).',
  input: z.object({
    ms: z.number().int().min(0).max(3_600_000),
    context: z.string().min(1).optional(),
    graceful: z.boolean().optional(),
  }),
  async execute({ ms, context, graceful }, ctx) {
    let result = `slept ${ms} ms`;
    try {
      await ctx.sleep(ms);
    } catch (err) {
      if (!graceful || !ctx.signal.aborted) throw err;
      result = `sleep of ${ms} ms cancelled`;
    }
    if (context) ctx.deferContext(context);
    return result;
  },
});

export const failTool = defineTool({
  name: 'fail',
  description: 'Always fails with the given message.',
  input: z.object({ message: z.string().default('failed on purpose') }),
  execute({ message }) {
    throw new Error(message);
  },
});

export const emitContextTool = defineTool({
  name: 'emit_context',
  description: 'Returns each {content, source} item of `contexts` as additional context for the next step.',
  input: z.object({
    contexts: z.array(z.object({ content: Content, source: MessageSourceSchema.optional() })).max(64),
    text: z.string().optional(),
  }),
  execute({ contexts, text }) {
    return {
      content: text ?? `emitted ${contexts.length} context${contexts.length === 1 ? '' : 's'}`,
      additionalContexts: contexts.map((c) => ({
        content: c.content,
        source: c.source as MessageSource | undefined,
      })),
    };
  },
});

const SelfMessage = z.object({ content: Content, source: MessageSourceSchema.optional() });

export const injectSelfTool = defineTool({
  name: 'inject_self',
  description: 'Injects {content, source?} into this session (non-waking context for the next step).',
  input: SelfMessage,
  async execute({ content, source }, ctx) {
    await ctx.inject({ content, source: source as MessageSource | undefined });
    return 'injected';
  },
});

export const steerSelfTool = defineTool({
  name: 'steer_self',
  description: 'Steers this session with {content, source?}.',
  input: SelfMessage,
  async execute({ content, source }, ctx) {
    await ctx.steer({ content, source: source as MessageSource | undefined });
    return 'steered';
  },
});

export const concludeTool = defineTool({
  name: 'conclude',
  description: 'Concludes the turn after this step (unless more input is waiting).',
  input: z.object({ text: z.string().default('done') }),
  execute({ text }, ctx) {
    ctx.concludeTurn();
    return text;
  },
});

/** Every tool of the testing toolset. */
export const testingTools: ToolDefinition[] = [
  echoTool,
  sleepTool,
  failTool,
  emitContextTool,
  injectSelfTool,
  steerSelfTool,
  concludeTool,
] as ToolDefinition[];
