/**
 * The tool API and the worker-side tool registry. Tools are code on the worker; a session can only select among
 * registered names. Arguments are validated with the tool's zod schema; every failure of a tool becomes a
 * `tool/result` error the model can read, never a failed activity. Not deterministic: runs in activities.
 */
import { z } from 'zod';
import { toBlocks, type ContentBlock, type MessageSource, type TextBlock } from '../domain/messages';
import { toResultBlocks } from '../domain/blocks';
import { isName, NAME_RULE } from '../domain/names';
import { failedResult } from '../domain/results';
import { describeZodIssue } from '../domain/util';
import { ErrorCodes } from '../contract';
import type { ContextOutput, ToolDescriptor, ToolExecResult, ToolSpec } from './types';

/** A message a tool sends into its own session. */
export interface ToolMessage {
  id?: string;
  content: string | TextBlock[];
  source?: MessageSource;
}

/** What a tool body gets besides its arguments. */
export interface ToolContext {
  sessionId: string;
  callId: string;
  turn: number;
  step: number;
  /** Aborted when the call is cancelled (the activity heartbeats so it learns promptly). */
  signal: AbortSignal;
  heartbeat(details?: unknown): void;
  /** Sleeps, heartbeating; rejects when the call is cancelled. */
  sleep(ms: number): Promise<void>;
  /** Context attached to this call's own result: enters the next step after the batch's results (rule 19). */
  deferContext(content: string | TextBlock[], source?: MessageSource): void;
  /** Injects into the tool's own session (non-waking). */
  inject(message: ToolMessage): Promise<void>;
  /** Steers the tool's own session. */
  steer(message: ToolMessage): Promise<void>;
  /** Ends the turn after this step, unless next-step has work (rule 21). */
  concludeTurn(): void;
}

/**
 * What a tool body returns. Its content may hold text, image, audio and resource blocks; at the activity edge each
 * is validated and binary data is held to 1 MiB per result (src/domain/blocks.ts: a block that does not fit becomes
 * a text block saying why). Contexts are messages: text only.
 */
export type ToolReturn =
  | string
  | ContentBlock[]
  | { content: string | ContentBlock[]; additionalContexts?: ToolMessage[]; concludeTurn?: boolean };

export interface ToolDefinition<S extends z.ZodType = z.ZodType> {
  name: string;
  description: string;
  input: S;
  /** Runs alone, as a barrier between the calls before and after it. */
  exclusive?: boolean;
  /**
   * A person must approve each call before it runs (`always`), or the calls this predicate picks: it gets the
   * parsed arguments and runs on the worker (a predicate that throws requires approval). A session can add tools
   * that need approval (`SessionConfig.approvals`) but never lift this requirement.
   */
  approval?: 'always' | ((args: z.infer<S>, call: { sessionId: string; callId: string }) => boolean);
  /**
   * `delegate`: the workflow performs a call by starting a sub-session (a child workflow, docs/protocol.md
   * "Sub-sessions"); `execute` never runs. See ./subsessionTools.ts.
   */
  kind?: 'delegate';
  execute(args: z.infer<S>, ctx: ToolContext): Promise<ToolReturn> | ToolReturn;
}

/**
 * Declares a tool; the JSON schema the model sees is derived from `input`. Throws when the name is not a valid tool
 * name or `input` does not describe a JSON object (model APIs take object arguments only).
 */
export function defineTool<S extends z.ZodType>(def: ToolDefinition<S>): ToolDefinition<S> {
  if (!isName(def.name)) throw new Error(`tool name "${def.name}": ${NAME_RULE}, at most 128`);
  if (inputJsonSchema(def.input).type !== 'object')
    throw new Error(`tool "${def.name}": input must be a zod object schema`);
  return def;
}

/** The JSON schema of a tool's input as the model fills it in (zod input side: defaults are optional). */
function inputJsonSchema(input: z.ZodType): Record<string, unknown> {
  const { $schema: _dialect, ...schema } = z.toJSONSchema(input, {
    io: 'input',
    unrepresentable: 'any',
  }) as Record<string, unknown>;
  return schema;
}

export class ToolRegistry {
  private readonly tools = new Map<string, ToolDefinition>();
  private readonly specs = new Map<string, ToolSpec>();

  constructor(tools: Iterable<ToolDefinition> = []) {
    for (const t of tools) this.register(t);
  }

  register(tool: ToolDefinition): this {
    if (this.tools.has(tool.name)) throw new Error(`tool "${tool.name}" is registered twice`);
    this.tools.set(tool.name, tool);
    return this;
  }

  get(name: string): ToolDefinition | undefined {
    return this.tools.get(name);
  }

  names(): string[] {
    return [...this.tools.keys()].sort();
  }

  /** What the workflow learns of a tool: whether it is exclusive, and whether its calls need approval. */
  descriptor(name: string): ToolDescriptor | undefined {
    const tool = this.tools.get(name);
    if (!tool) return undefined;
    const approval = tool.approval === 'always' ? 'always' : tool.approval ? 'check' : undefined;
    return {
      name,
      exclusive: tool.exclusive === true,
      ...(approval ? { approval } : {}),
      ...(tool.kind ? { kind: tool.kind } : {}),
    };
  }

  /**
   * Whether a call needs approval, by its tool's predicate. Fails closed: arguments the tool's schema refuses or a
   * predicate that throws require approval (the call then waits for a person, who sees the arguments).
   */
  needsApproval(
    name: string,
    args: Record<string, unknown>,
    call: { sessionId: string; callId: string },
  ): boolean {
    const tool = this.tools.get(name);
    if (!tool?.approval) return false;
    if (tool.approval === 'always') return true;
    const parsed = tool.input.safeParse(args);
    if (!parsed.success) return true;
    try {
      return tool.approval(parsed.data, call) === true;
    } catch {
      return true;
    }
  }

  /** The tool as the model sees it (cached: schemas are derived once per tool). */
  spec(name: string): ToolSpec | undefined {
    const tool = this.tools.get(name);
    if (!tool) return undefined;
    let spec = this.specs.get(name);
    if (!spec) {
      spec = { name, description: tool.description, inputSchema: inputJsonSchema(tool.input) };
      this.specs.set(name, spec);
    }
    return spec;
  }
}

/** The parts of a tool context the activity supplies. */
export type ToolRuntime = Omit<ToolContext, 'deferContext' | 'concludeTurn'>;

/** Runs one call of a registered tool and normalizes every outcome to a ToolExecResult. */
export async function runTool(
  tool: ToolDefinition | undefined,
  name: string,
  args: Record<string, unknown>,
  runtime: ToolRuntime,
): Promise<ToolExecResult> {
  const contexts: ContextOutput[] = [];
  let concludesTurn = false;
  if (!tool)
    return failedResult({
      code: ErrorCodes.UnknownTool,
      message: `tool "${name}" is not registered on this worker`,
    });
  const parsed = tool.input.safeParse(args);
  if (!parsed.success) {
    return failedResult({
      code: ErrorCodes.ToolInvalidArguments,
      message: `invalid arguments for ${name}: ${describeZodIssue(parsed.error.issues, 'arguments')}`,
    });
  }
  const ctx: ToolContext = {
    ...runtime,
    deferContext(content, source) {
      const out: ContextOutput = { content: toBlocks(content) };
      if (source) out.source = source;
      contexts.push(out);
    },
    concludeTurn() {
      concludesTurn = true;
    },
  };
  try {
    const returned = await tool.execute(parsed.data, ctx);
    if (typeof returned === 'string' || Array.isArray(returned)) {
      return { content: toResultBlocks(returned), additionalContexts: contexts, concludesTurn };
    }
    for (const extra of returned.additionalContexts ?? []) {
      const out: ContextOutput = { content: toBlocks(extra.content) };
      if (extra.id) out.id = extra.id;
      if (extra.source) out.source = extra.source;
      contexts.push(out);
    }
    return {
      content: toResultBlocks(returned.content),
      additionalContexts: contexts,
      concludesTurn: concludesTurn || returned.concludeTurn === true,
    };
  } catch (err) {
    if (runtime.signal.aborted) throw err; // a cancelled call reports cancellation; the workflow records it
    const message = err instanceof Error ? err.message : String(err);
    return failedResult({ code: ErrorCodes.ToolFailed, message });
  }
}
