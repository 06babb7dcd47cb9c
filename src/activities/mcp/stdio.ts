/**
 * The stdio transport of the worker's MCP connections: the SDK's StdioClientTransport (the same process handling,
 * environment and shutdown) with a reader that caps each message (./framing.ts). The SDK's reader holds a whole
 * line and, past 10 MiB, closes the connection — killing the server, failing every pending call with "Connection
 * closed" — and it cannot be given another reader, hence this class. A line over `maxMessageBytes` is counted and
 * dropped as it arrives; the call it answers gets a `MESSAGE_TOO_LARGE` error response and the server keeps
 * running. A line that passes the drain limit without ending resets the connection (the server is stopped; the
 * next use starts it again). Not deterministic: runs in activities.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { PassThrough } from 'node:stream';
import { getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { deserializeMessage, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  ErrorCode,
  isJSONRPCErrorResponse,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCMessage,
} from '@modelcontextprotocol/sdk/types.js';
import { LineReader, tooLargeResponse, type TooLarge, type TopLevelKeys } from './framing';

export interface CappedStdioParams {
  command: string;
  args?: string[];
  /** Added to the SDK's default environment (PATH, HOME, …). */
  env?: Record<string, string>;
  cwd?: string;
  /** Most bytes of one message from the server. */
  maxMessageBytes: number;
}

/** How long close() waits for the server to exit after closing its stdin, and again after SIGTERM. */
const EXIT_WAIT_MS = 2000;

export class CappedStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private process: ChildProcess | undefined;
  private readonly reader: LineReader;
  /** The server's stderr, available before start() so nothing it writes early is lost. */
  readonly stderr = new PassThrough();
  /** Ids of the requests sent and not yet answered, to know which call an unattributed refusal answers. */
  private readonly pending = new Set<string | number>();
  private closed = false;

  constructor(private readonly params: CappedStdioParams) {
    this.reader = new LineReader(params.maxMessageBytes);
  }

  start(): Promise<void> {
    if (this.process) throw new Error('CappedStdioTransport already started');
    return new Promise((resolve, reject) => {
      const child = spawn(this.params.command, this.params.args ?? [], {
        env: { ...getDefaultEnvironment(), ...this.params.env },
        stdio: ['pipe', 'pipe', 'pipe'],
        shell: false,
        windowsHide: process.platform === 'win32',
        ...(this.params.cwd ? { cwd: this.params.cwd } : {}),
      });
      this.process = child;
      child.on('error', (error) => {
        reject(error);
        this.onerror?.(error);
      });
      child.on('spawn', () => resolve());
      child.on('close', () => {
        this.process = undefined;
        this.closing();
      });
      child.stdin?.on('error', (error) => this.onerror?.(error));
      child.stdout?.on('data', (chunk: Buffer) => this.read(chunk));
      child.stdout?.on('error', (error) => this.onerror?.(error));
      child.stderr?.pipe(this.stderr);
    });
  }

  private read(chunk: Buffer): void {
    for (const item of this.reader.push(chunk)) {
      if (item.kind === 'refused') {
        this.refused(item.tooLarge, item.keys);
        continue;
      }
      const line = item.bytes.toString('utf8').replace(/\r$/, '');
      if (!line.trim()) continue;
      let message: JSONRPCMessage;
      try {
        message = deserializeMessage(line);
      } catch (err) {
        this.onerror?.(err instanceof Error ? err : new Error(String(err)));
        continue;
      }
      if ((isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) && message.id !== undefined)
        this.pending.delete(message.id);
      this.onmessage?.(message);
    }
    if (this.reader.abandoned) void this.close();
  }

  /**
   * A line over the cap: the request it answers (its id, or the only one pending) fails with `MESSAGE_TOO_LARGE`; a
   * request of the server's own is answered with an error; anything else is reported and dropped.
   */
  private refused(tooLarge: TooLarge, keys: TopLevelKeys): void {
    const what = `${tooLarge.complete ? '' : 'more than '}${tooLarge.bytes} bytes, over the limit of ${tooLarge.limit}`;
    if (keys.hasMethod) {
      if (keys.id !== undefined)
        void this.send({
          jsonrpc: '2.0',
          id: keys.id,
          error: { code: ErrorCode.InvalidRequest, message: `request of ${what} bytes refused` },
        }).catch(() => undefined);
      this.onerror?.(new Error(`MCP server sent a message of ${what} bytes; dropped`));
      return;
    }
    const id = keys.id ?? (this.pending.size === 1 ? [...this.pending][0] : undefined);
    if (id === undefined || !this.pending.has(id)) {
      this.onerror?.(
        new Error(`MCP server sent a message of ${what} bytes answering no known request; dropped`),
      );
      return;
    }
    this.pending.delete(id);
    this.onmessage?.(tooLargeResponse(id, tooLarge));
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      const stdin = this.process?.stdin;
      if (!stdin) {
        reject(new Error('Not connected'));
        return;
      }
      if (isJSONRPCRequest(message)) this.pending.add(message.id);
      else if ('method' in message && message.method === 'notifications/cancelled')
        this.pending.delete((message.params as { requestId?: string | number } | undefined)?.requestId ?? '');
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once('drain', resolve);
    });
  }

  /** Reports the close once: when the server exits, or at once when the worker closes the connection. */
  private closing(): void {
    if (this.closed) return;
    this.closed = true;
    this.pending.clear();
    this.onclose?.();
  }

  /**
   * Stops the server: closes its stdin, then SIGTERM, then SIGKILL, waiting up to 2 s between. The close is reported
   * at once (pending requests fail, the connection's next use starts a new server) rather than when the server exits.
   */
  async close(): Promise<void> {
    const child = this.process;
    this.process = undefined;
    this.closing();
    if (!child) return;
    const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
    const wait = () =>
      Promise.race([exited, new Promise<void>((resolve) => setTimeout(resolve, EXIT_WAIT_MS).unref())]);
    try {
      child.stdin?.end();
    } catch {
      // already closed
    }
    await wait();
    for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      try {
        child.kill(signal);
      } catch {
        // already gone
      }
      if (signal === 'SIGTERM') await wait();
    }
  }
}
