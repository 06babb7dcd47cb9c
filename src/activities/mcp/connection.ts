/**
 * One worker's connection to one MCP server, through the official SDK's Client: opened lazily on first use, shared
 * by every activity of the worker process, and reopened after it fails (a stdio server that died is started again
 * on the next use). The server's `tools/list` is cached and dropped on `notifications/tools/list_changed` (and when
 * the connection closes), so the next use reads it again. No message from the server is held past the
 * connection's `maxMessageBytes` (./framing.ts): a call whose answer is larger fails with McpTooLargeError, and the
 * connection stays open for the next. Not deterministic: runs in activities.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  ErrorCode,
  McpError,
  ToolListChangedNotificationSchema,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { McpServerConfig } from './config';
import { DEFAULT_MAX_MESSAGE_BYTES, tooLargeOf, type TooLarge } from './framing';
import { cappedFetch } from './http';
import { CappedStdioTransport } from './stdio';

export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
export const DEFAULT_CALL_TIMEOUT_MS = 600_000;
/** Most characters of a stdio server's stderr kept for error messages. */
const STDERR_TAIL = 2000;

/** The connection failed or closed: the server is unreachable now (the next use reconnects). */
export class McpUnavailableError extends Error {
  override readonly name = 'McpUnavailableError';
}

/** The server's answer to a request was over the connection's `maxMessageBytes`; it was not read (dropped). */
export class McpTooLargeError extends Error {
  override readonly name = 'McpTooLargeError';
  constructor(
    readonly server: string,
    readonly tooLarge: TooLarge,
    options?: ErrorOptions,
  ) {
    super(
      `MCP server "${server}" answered with ${tooLarge.complete ? '' : 'more than '}${tooLarge.bytes} bytes, over the limit of ${tooLarge.limit} bytes for one message`,
      options,
    );
  }
}

/** Progress a server reported for a call (`notifications/progress`). */
export interface McpProgress {
  progress: number;
  total?: number;
  message?: string;
}

export class McpConnection {
  private client: Client | undefined;
  private opening: Promise<Client> | undefined;
  private tools: Promise<Tool[]> | undefined;
  private stderr = '';
  private closed = false;

  /** Most bytes of one message from the server (the server's `maxMessageBytes`, else the worker's default). */
  readonly maxMessageBytes: number;

  constructor(
    readonly name: string,
    private readonly config: McpServerConfig,
    defaults: { maxMessageBytes?: number } = {},
    private readonly clientInfo = { name: 'agent-sessions', version: '0.1.0' },
  ) {
    this.maxMessageBytes = config.maxMessageBytes ?? defaults.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
  }

  /** The open client, connecting first if needed. Throws McpUnavailableError when the server cannot be reached. */
  connect(): Promise<Client> {
    if (this.client) return Promise.resolve(this.client);
    this.opening ??= this.open().finally(() => {
      this.opening = undefined;
    });
    return this.opening;
  }

  private async open(): Promise<Client> {
    if (this.closed) throw new McpUnavailableError(`MCP server "${this.name}": the worker is shutting down`);
    const client = new Client(this.clientInfo, { capabilities: {} });
    const transport = this.transport();
    this.stderr = '';
    client.onclose = () => {
      if (this.client === client) this.forget();
    };
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      if (this.client === client) this.tools = undefined;
    });
    try {
      await client.connect(transport, {
        timeout: this.config.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
      });
    } catch (err) {
      await client.close().catch(() => undefined);
      throw new McpUnavailableError(
        `MCP server "${this.name}" is unavailable: ${describe(err)}${this.stderrNote()}`,
        { cause: err },
      );
    }
    this.client = client;
    this.tools = undefined;
    return client;
  }

  private transport(): Transport {
    const c = this.config;
    if ('command' in c) {
      const t = new CappedStdioTransport({
        command: c.command,
        ...(c.args ? { args: c.args } : {}),
        ...(c.env ? { env: c.env } : {}),
        ...(c.cwd ? { cwd: c.cwd } : {}),
        maxMessageBytes: this.maxMessageBytes,
      });
      // Kept for error messages (a server that fails to start usually says why there); also drains the pipe.
      t.stderr.on('data', (chunk: Buffer) => {
        this.stderr = (this.stderr + chunk.toString('utf8')).slice(-STDERR_TAIL);
      });
      return t;
    }
    return new StreamableHTTPClientTransport(new URL(c.url), {
      ...(c.headers ? { requestInit: { headers: c.headers } } : {}),
      fetch: cappedFetch(this.maxMessageBytes),
    });
  }

  private stderrNote(): string {
    const tail = this.stderr.trim();
    return tail ? ` (stderr: ${tail.slice(-500)})` : '';
  }

  /** Drops the client and its cached list: the next use reconnects. */
  private forget(): void {
    const client = this.client;
    this.client = undefined;
    this.tools = undefined;
    void client?.close().catch(() => undefined);
  }

  /** The server's tools (every page), cached until the list changes or the connection closes. */
  listTools(): Promise<Tool[]> {
    this.tools ??= this.loadTools().catch((err: unknown) => {
      this.tools = undefined;
      throw err;
    });
    return this.tools;
  }

  private async loadTools(): Promise<Tool[]> {
    const client = await this.connect();
    try {
      const tools: Tool[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor ? { cursor } : undefined, {
          timeout: this.config.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
        });
        tools.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor);
      return tools;
    } catch (err) {
      throw this.failure(err, client);
    }
  }

  /**
   * One `tools/call`. The signal cancels it (the SDK sends `notifications/cancelled`); progress notifications
   * reset its timeout and reach `onProgress`. Throws McpUnavailableError when the connection fails or closes
   * during the call (the connection is dropped, so a retry restarts a stdio server), McpTooLargeError when the
   * answer passed `maxMessageBytes` (the connection stays), an McpError for a protocol-level error the server
   * answered (unknown tool, invalid params, timeout), and the abort when cancelled.
   */
  async callTool(
    name: string,
    args: Record<string, unknown>,
    opts: { signal: AbortSignal; onProgress?: (p: McpProgress) => void },
  ): Promise<CallToolResult> {
    const client = await this.connect();
    try {
      return (await client.callTool({ name, arguments: args }, undefined, {
        signal: opts.signal,
        timeout: this.config.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS,
        resetTimeoutOnProgress: true,
        ...(opts.onProgress ? { onprogress: opts.onProgress } : {}),
      })) as CallToolResult;
    } catch (err) {
      if (opts.signal.aborted) throw err;
      throw this.failure(err, client);
    }
  }

  /**
   * A failed request as McpUnavailableError (dropping the connection) unless the server itself answered it, or its
   * answer was refused for its size (McpTooLargeError).
   */
  private failure(err: unknown, client: Client): Error {
    const tooLarge = tooLargeOf(err);
    if (tooLarge) return new McpTooLargeError(this.name, tooLarge, { cause: err });
    if (err instanceof McpError && err.code !== (ErrorCode.ConnectionClosed as number)) return err;
    if (this.client === client) this.forget();
    return new McpUnavailableError(
      `MCP server "${this.name}" is unavailable: ${describe(err)}${this.stderrNote()}`,
      { cause: err },
    );
  }

  /** Closes the connection (a stdio server is stopped); later uses fail. */
  async close(): Promise<void> {
    this.closed = true;
    const client = this.client;
    this.client = undefined;
    this.tools = undefined;
    await client?.close().catch(() => undefined);
  }
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as { cause?: unknown }).cause;
    return cause instanceof Error && cause.message && !err.message.includes(cause.message)
      ? `${err.message} (${cause.message})`
      : err.message;
  }
  return String(err);
}
