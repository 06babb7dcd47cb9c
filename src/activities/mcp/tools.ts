/**
 * The worker's MCP tools: the configured servers' connections, the model-visible names of their tools, argument
 * validation against each tool's JSON Schema (ajv) and the mapping of every outcome of a call to a ToolExecResult,
 * so an MCP call behaves like a native one in the session (docs/decisions/2026-12-04-mcp-tools.md). Failures the
 * model should read become `tool/result` errors, and so does an answer over a server's `maxMessageBytes`
 * (`TOOL_RESULT_TOO_LARGE`: dropped as it arrived, never held whole); an unreachable server is a retryable
 * `McpServerUnavailable` activity failure (the next attempt reconnects, restarting a stdio server). Not
 * deterministic: runs in activities.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { Ajv, type ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ErrorInfo } from '../../domain/events';
import { ErrorCodes, FailureTypes } from '../../contract';
import { formatBytes } from '../../domain/messages';
import { failedResult } from '../../domain/results';
import type { ToolDescriptor, ToolExecResult, ToolSpec } from '../types';
import { McpConnection, McpTooLargeError, McpUnavailableError, type McpProgress } from './connection';
import { MAX_MESSAGE_BYTES, MIN_MESSAGE_BYTES, type McpServers } from './config';
import { collisions, modelToolName, parseSelector, SEPARATOR, serverOf } from './names';
import { mapCallResult } from './results';

/** One MCP tool as the worker knows it. */
export interface McpToolEntry {
  /** The name the model sees and calls (`<server>__<tool>`). */
  modelName: string;
  server: string;
  tool: Tool;
}

/** Options of a worker's MCP tools. */
export interface McpToolsOptions {
  /**
   * Most bytes of one message from a server, for servers that do not set their own (default 10 MiB, the SDK's stdio
   * limit; at least 64 KiB). A larger answer is counted and dropped as it arrives, and the call is answered
   * `TOOL_RESULT_TOO_LARGE`; a result within it is still held to the worker's `maxToolResultBytes`.
   */
  maxMessageBytes?: number;
}

/** What a call gets from its activity. */
export interface McpCallRuntime {
  signal: AbortSignal;
  heartbeat(details?: unknown): void;
}

export class McpTools {
  private readonly connections = new Map<string, McpConnection>();
  private readonly indexes = new WeakMap<Tool[], Map<string, McpToolEntry>>();
  private readonly validators = new WeakMap<Tool, ValidateFunction | null>();
  private readonly ajv = new Ajv({ strict: false, allErrors: false, validateFormats: false, logger: false });
  private readonly ajv2020 = new Ajv2020({
    strict: false,
    allErrors: false,
    validateFormats: false,
    logger: false,
  });

  /**
   * Throws when a native tool's name could collide with an MCP tool's (`<server>__…` of a configured server).
   */
  constructor(servers: McpServers, nativeNames: readonly string[] = [], opts: McpToolsOptions = {}) {
    const max = opts.maxMessageBytes;
    if (max !== undefined && (!Number.isInteger(max) || max < MIN_MESSAGE_BYTES || max > MAX_MESSAGE_BYTES))
      throw new Error(
        `maxMessageBytes: must be an integer from ${MIN_MESSAGE_BYTES} to ${MAX_MESSAGE_BYTES} (bytes), got ${max}`,
      );
    for (const [name, config] of Object.entries(servers))
      this.connections.set(
        name,
        new McpConnection(name, config, { ...(max ? { maxMessageBytes: max } : {}) }),
      );
    const clash = nativeNames.find((n) => {
      const server = serverOf(n);
      return server !== undefined && this.connections.has(server);
    });
    if (clash)
      throw new Error(
        `tool "${clash}": native tool names must not start with "<server>${SEPARATOR}" of a configured MCP server (${serverOf(clash)}): the model would see two tools of that name`,
      );
  }

  /** The configured server names. */
  servers(): string[] {
    return [...this.connections.keys()].sort();
  }

  /** Whether a model-visible name belongs to a configured server. */
  owns(modelName: string): boolean {
    const server = serverOf(modelName);
    return server !== undefined && this.connections.has(server);
  }

  /**
   * A server's tools by model-visible name, from its cached list. Throws the retryable `McpServerUnavailable` when
   * the server cannot be reached, and a non-retryable one when two of its tools map to one model-visible name.
   */
  async tools(server: string): Promise<Map<string, McpToolEntry>> {
    const conn = this.connections.get(server);
    if (!conn) throw new Error(`no MCP server "${server}"`);
    let list: Tool[];
    try {
      list = await conn.listTools();
    } catch (err) {
      throw unavailable(err);
    }
    let index = this.indexes.get(list);
    if (!index) {
      const clashes = collisions(list.map((t) => ({ server, tool: t.name })));
      if (clashes.length)
        throw ApplicationFailure.create({
          type: FailureTypes.McpServerUnavailable,
          nonRetryable: true,
          message: `MCP server "${server}" lists tools whose model-visible names collide: ${clashes.map((c) => `${c.claimedBy.join(' and ')} → ${c.name}`).join('; ')}`,
        });
      index = new Map(
        list.map((tool) => [
          modelToolName(server, tool.name),
          { modelName: modelToolName(server, tool.name), server, tool },
        ]),
      );
      this.indexes.set(list, index);
    }
    return index;
  }

  /**
   * The tools a session selector names (`mcp:<server>` or `mcp:<server>/<tool>`). Throws `UnknownTool` (not
   * retried) for an unknown server or tool, and `McpServerUnavailable` (not retried: the turn ends with
   * `MCP_SERVER_UNAVAILABLE` and a later turn asks again) when the server cannot be reached.
   */
  async resolve(selector: string): Promise<McpToolEntry[]> {
    const sel = parseSelector(selector);
    if (!sel || !this.connections.has(sel.server))
      throw ApplicationFailure.create({
        type: FailureTypes.UnknownTool,
        nonRetryable: true,
        message: `session names "${selector}" but this worker has no MCP server "${sel?.server ?? selector}" (configured: ${this.servers().join(', ') || 'none'})`,
      });
    let index: Map<string, McpToolEntry>;
    try {
      index = await this.tools(sel.server);
    } catch (err) {
      const failure = ApplicationFailure.fromError(err);
      if (failure.nonRetryable) throw failure; // colliding names: not a matter of waiting
      throw ApplicationFailure.create({
        type: FailureTypes.McpServerUnavailable,
        nonRetryable: true,
        message: `${failure.message}; its tools are refused until it is back (a later turn tries again)`,
      });
    }
    const entries = [...index.values()];
    if (sel.tool === undefined) return entries;
    const one = entries.find((e) => e.tool.name === sel.tool);
    if (!one)
      throw ApplicationFailure.create({
        type: FailureTypes.UnknownTool,
        nonRetryable: true,
        message: `session names "${selector}" but MCP server "${sel.server}" has no tool "${sel.tool}" (it has: ${entries.map((e) => e.tool.name).join(', ') || 'none'})`,
      });
    return [one];
  }

  /** Descriptors of the tools a selector names, for the workflow (MCP tools are never exclusive). */
  async describe(selector: string): Promise<ToolDescriptor[]> {
    return (await this.resolve(selector)).map((e) => ({ name: e.modelName, exclusive: false }));
  }

  /** The tool as the model sees it: its description and its JSON Schema unchanged; undefined if it is gone. */
  async spec(modelName: string): Promise<ToolSpec | undefined> {
    const server = serverOf(modelName);
    if (!server || !this.connections.has(server)) return undefined;
    const entry = (await this.tools(server)).get(modelName);
    if (!entry) return undefined;
    return {
      name: modelName,
      description: entry.tool.description ?? entry.tool.title ?? '',
      inputSchema: entry.tool.inputSchema as Record<string, unknown>,
    };
  }

  /**
   * One call, every outcome as data except an unreachable server (a retryable `McpServerUnavailable`) and a
   * cancellation (rethrown, as for native tools).
   */
  async call(
    modelName: string,
    args: Record<string, unknown>,
    runtime: McpCallRuntime,
  ): Promise<ToolExecResult> {
    const server = serverOf(modelName)!;
    const entry = (await this.tools(server)).get(modelName);
    if (!entry)
      return failedResult({
        code: ErrorCodes.UnknownTool,
        message: `MCP server "${server}" no longer offers the tool ${modelName}`,
      });
    const invalid = this.validate(entry.tool, args);
    if (invalid)
      return failedResult({
        code: ErrorCodes.ToolInvalidArguments,
        message: `invalid arguments for ${modelName}: ${invalid}`,
      });
    runtime.heartbeat();
    let result;
    try {
      result = await this.connections.get(server)!.callTool(entry.tool.name, args, {
        signal: runtime.signal,
        onProgress: (p: McpProgress) =>
          runtime.heartbeat({ progress: p.progress, ...(p.total !== undefined ? { total: p.total } : {}) }),
      });
    } catch (err) {
      // A cancelled call reports the activity's own cancellation, as a native tool's does (the SDK rejects with an
      // McpError wrapping it, after sending notifications/cancelled).
      if (runtime.signal.aborted) throw runtime.signal.reason instanceof Error ? runtime.signal.reason : err;
      if (err instanceof McpUnavailableError) throw unavailable(err);
      if (err instanceof McpTooLargeError) return failedResult(tooLarge(modelName, err));
      return failedResult({
        code: ErrorCodes.ToolFailed,
        message: `${modelName} failed: ${err instanceof Error ? err.message : String(err)}`,
      });
    }
    const mapped = mapCallResult(result, modelName);
    return {
      content: mapped.content,
      ...(mapped.error ? { error: mapped.error } : {}),
      additionalContexts: [],
      concludesTurn: false,
    };
  }

  /** Why `args` do not match the tool's input schema (`arguments.path: must be string`), or undefined. */
  private validate(tool: Tool, args: Record<string, unknown>): string | undefined {
    let validator = this.validators.get(tool);
    if (validator === undefined) {
      const schema = tool.inputSchema as Record<string, unknown>;
      const ajv =
        typeof schema.$schema === 'string' && schema.$schema.includes('2020-12') ? this.ajv2020 : this.ajv;
      try {
        validator = ajv.compile(schema);
      } catch {
        validator = null; // a schema ajv cannot compile: the server validates on its own
      }
      this.validators.set(tool, validator);
    }
    if (!validator || validator(args)) return undefined;
    const e = validator.errors?.[0];
    if (!e) return 'arguments: invalid';
    const where = `arguments${e.instancePath.replace(/\//g, '.')}`;
    const extra =
      e.keyword === 'additionalProperties'
        ? ` (${String((e.params as { additionalProperty?: string }).additionalProperty)})`
        : '';
    return `${where}: ${e.message ?? 'invalid'}${extra}`;
  }

  /** Closes every connection (stdio servers are stopped). */
  async close(): Promise<void> {
    await Promise.all([...this.connections.values()].map((c) => c.close()));
  }
}

/**
 * An answer over the server's message cap, as the model reads it: the size as the server sent it (the JSON-RPC
 * message) and the limit, in the words of the worker's own result cap (../resultSizes.ts).
 */
function tooLarge(modelName: string, err: McpTooLargeError): ErrorInfo {
  const { bytes, limit, complete } = err.tooLarge;
  const size = complete
    ? `${formatBytes(bytes)} (${bytes} bytes as MCP server "${err.server}" sent it)`
    : `more than ${formatBytes(bytes)} (MCP server "${err.server}" sent ${bytes} bytes without ending it)`;
  return {
    code: ErrorCodes.ToolResultTooLarge,
    message: `the result of tool "${modelName}" is ${size}, over the limit of ${formatBytes(limit)} (${limit} bytes for one message from an MCP server, option maxMessageBytes): it was not read; ask for less`,
  };
}

/** An unreachable server as the retryable activity failure (Temporal retries the call; the next one reconnects). */
function unavailable(err: unknown): ApplicationFailure {
  if (err instanceof ApplicationFailure) return err;
  return ApplicationFailure.create({
    type: FailureTypes.McpServerUnavailable,
    message: err instanceof Error ? err.message : String(err),
  });
}
