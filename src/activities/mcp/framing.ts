/**
 * The size cap of one message from an MCP server, counted as its bytes arrive (issue 33). The SDK's transports read
 * a whole message before anything can look at it: over stdio its reader refuses more than 10 MiB by closing the
 * connection (the server is killed and every pending call fails "Connection closed"), over HTTP it reads any size.
 * Here a message (a stdio line, an SSE event, a JSON body) is kept only while it is within `limit`; past it the rest
 * is counted and dropped, so the worker holds at most `limit` bytes of it, knows its size when it ends, and the
 * connection stays usable. The request it answered then gets a JSON-RPC error {@link MESSAGE_TOO_LARGE} made here,
 * which the connection turns into a `TOOL_RESULT_TOO_LARGE` result. A message that passes `drainLimit` without
 * ending is abandoned (the transport resets the connection). Pure: no I/O.
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';

/** Default cap of one message from an MCP server: the SDK's own stdio limit, so no result that fit there is refused. */
export const DEFAULT_MAX_MESSAGE_BYTES = 10 * 1024 * 1024;

/** A message is read (and dropped) up to this many times its cap before the connection is reset instead. */
export const DRAIN_FACTOR = 16;

/** The JSON-RPC error code of a response the worker made for a message it refused (implementation-defined range). */
export const MESSAGE_TOO_LARGE = -32_090;

/** A refused message: its size (or how far it was read, when `complete` is false) and the cap it passed. */
export interface TooLarge {
  bytes: number;
  limit: number;
  /** False when the message passed the drain limit without ending: `bytes` is where reading stopped. */
  complete: boolean;
}

/** The error response the worker makes for request `id` in place of a message it refused. */
export function tooLargeResponse(id: string | number, t: TooLarge): JSONRPCMessage {
  return {
    jsonrpc: '2.0',
    id,
    error: {
      code: MESSAGE_TOO_LARGE,
      message: `the answer is ${t.complete ? '' : 'more than '}${t.bytes} bytes, over the limit of ${t.limit} bytes for one MCP message`,
      data: { messageTooLarge: t },
    },
  };
}

/** The refusal a request failed with (the SDK's McpError of a {@link tooLargeResponse}), or undefined. */
export function tooLargeOf(err: unknown): TooLarge | undefined {
  if (!(err instanceof McpError) || err.code !== MESSAGE_TOO_LARGE) return undefined;
  const t = (err.data as { messageTooLarge?: Partial<TooLarge> } | undefined)?.messageTooLarge;
  if (typeof t?.bytes !== 'number' || typeof t.limit !== 'number') return undefined;
  return { bytes: t.bytes, limit: t.limit, complete: t.complete !== false };
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const NEWLINE = 0x0a;
const CR = 0x0d;
/** Longest top-level key or value kept while scanning (`"method"`, an id). */
const TOKEN_MAX = 128;

/**
 * The top-level `id` of a JSON-RPC message and whether it has a `method` (a request or notification from the
 * server, not a response), read from its bytes piece by piece while they are dropped: only short top-level tokens
 * are kept. The SDK writes `id` after `result`, others before: either way it is found once the message has passed.
 */
export class TopLevelKeys {
  id: string | number | undefined;
  hasMethod = false;
  private depth = 0;
  private inString = false;
  private escaped = false;
  private expectKey = false;
  private key = '';
  /** Bytes of the top-level token being read (a key, a string or a scalar value); undefined when none. */
  private token: number[] | undefined;
  private tokenIsKey = false;

  push(bytes: Uint8Array): void {
    for (let i = 0; i < bytes.length; i++) {
      const b = bytes[i]!;
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (b === BACKSLASH) this.escaped = true;
        else if (b === QUOTE) this.inString = false;
        if (this.depth === 1) {
          this.keep(b);
          if (!this.inString) this.endToken();
        }
        continue;
      }
      switch (b) {
        case QUOTE:
          this.inString = true;
          if (this.depth === 1) this.startToken(b);
          break;
        case 0x7b: // {
        case 0x5b: // [
          this.endToken();
          this.depth++;
          if (this.depth === 1) this.expectKey = b === 0x7b;
          break;
        case 0x7d: // }
        case 0x5d: // ]
          this.endToken();
          this.depth--;
          break;
        case COLON:
          this.endToken();
          if (this.depth === 1) this.expectKey = false;
          break;
        case COMMA:
          this.endToken();
          if (this.depth === 1) this.expectKey = true;
          break;
        case 0x20:
        case 0x09:
        case NEWLINE:
        case CR:
          this.endToken();
          break;
        default: // a number, true, false or null
          if (this.depth === 1 && !this.token) this.startToken(b);
          else if (this.depth === 1) this.keep(b);
      }
    }
  }

  private startToken(b: number): void {
    this.token = [b];
    this.tokenIsKey = this.expectKey;
  }

  private keep(b: number): void {
    if (this.token && this.token.length <= TOKEN_MAX) this.token.push(b);
  }

  private endToken(): void {
    const token = this.token;
    if (!token) return;
    this.token = undefined;
    if (token.length > TOKEN_MAX) {
      if (this.tokenIsKey) this.key = '';
      return;
    }
    const text = Buffer.from(token).toString('utf8');
    if (this.tokenIsKey) {
      this.key = text;
      if (text === '"method"') this.hasMethod = true;
      return;
    }
    if (this.key !== '"id"') return;
    try {
      const value: unknown = JSON.parse(text);
      if (typeof value === 'number' || typeof value === 'string') this.id = value;
    } catch {
      // not a valid id: the message stays unattributed
    }
  }
}

/** What a reader made of the bytes it was given. */
export type Framed =
  /** A message within the cap, whole (a stdio line without its newline; an SSE event with its blank line). */
  | { kind: 'message'; bytes: Buffer }
  /** A message over the cap, dropped; `keys` says what it was, as far as it could be read. */
  | { kind: 'refused'; tooLarge: TooLarge; keys: TopLevelKeys };

/** The bytes of one message at a time, within a cap: what the stdio and HTTP readers share. */
abstract class CappedReader {
  private parts: Buffer[] = [];
  private bytes = 0;
  private keys: TopLevelKeys | undefined;
  /** Set once a message passed the drain limit: nothing more is read. */
  abandoned = false;

  constructor(
    readonly limit: number,
    readonly drainLimit = limit * DRAIN_FACTOR,
  ) {}

  /**
   * Where the message under way ends in `chunk`, looking from `start`: the index after its last byte, or -1 when it
   * goes on past the chunk.
   */
  protected abstract end(chunk: Buffer, start: number): number;

  /** Bytes after a message that separate it from the next and belong to neither (a stdio line's newline). */
  protected readonly separator: number = 0;

  /**
   * The messages `chunk` completes, in order. After a message passes the drain limit the last item is its refusal
   * with `complete: false`, `abandoned` is set and later chunks are ignored.
   */
  push(chunk: Buffer): Framed[] {
    const out: Framed[] = [];
    let start = 0;
    while (!this.abandoned && start < chunk.length) {
      const end = this.end(chunk, start);
      this.add(chunk.subarray(start, end === -1 ? chunk.length : end));
      if (end === -1) break;
      out.push(this.finish(true));
      start = end + this.separator;
    }
    if (!this.abandoned && this.keys && this.bytes > this.drainLimit) {
      this.abandoned = true;
      out.push(this.finish(false));
    }
    return out;
  }

  /** The message the stream ended in the middle of, if any of it was read. */
  flush(): Framed | undefined {
    if (this.abandoned || this.bytes === 0) return undefined;
    return this.finish(true);
  }

  private add(piece: Buffer): void {
    this.bytes += piece.length;
    if (this.keys) {
      this.keys.push(piece);
      return;
    }
    if (piece.length) this.parts.push(piece);
    if (this.bytes <= this.limit) return;
    // Over the cap: what was kept is scanned for the id and dropped, and so is the rest as it comes.
    this.keys = new TopLevelKeys();
    for (const part of this.parts) this.keys.push(part);
    this.parts = [];
  }

  private finish(complete: boolean): Framed {
    const { keys, parts, bytes } = this;
    this.parts = [];
    this.bytes = 0;
    this.keys = undefined;
    if (!keys) return { kind: 'message', bytes: parts.length === 1 ? parts[0]! : Buffer.concat(parts) };
    return { kind: 'refused', tooLarge: { bytes, limit: this.limit, complete }, keys };
  }
}

/** Newline-delimited JSON-RPC messages (the stdio transport): a message is a line, without its newline. */
export class LineReader extends CappedReader {
  protected override readonly separator = 1;

  protected end(chunk: Buffer, start: number): number {
    return chunk.indexOf(NEWLINE, start);
  }
}

/**
 * Server-sent events (a streamable-HTTP response): a message is an event, up to and with the blank line that ends it
 * (`\n\n`, `\r\n\r\n` or `\r\r`); its size is its bytes as sent, field names and blank line included.
 */
export class SseReader extends CappedReader {
  private atLineStart = true;
  private afterCR = false;

  protected end(chunk: Buffer, start: number): number {
    for (let i = start; i < chunk.length; i++) {
      const b = chunk[i]!;
      if (b === NEWLINE && this.afterCR) {
        this.afterCR = false; // the second half of \r\n
        continue;
      }
      this.afterCR = b === CR;
      if (b !== NEWLINE && b !== CR) {
        this.atLineStart = false;
        continue;
      }
      if (!this.atLineStart) {
        this.atLineStart = true;
        continue;
      }
      // An empty line ends the event (after \r\r a \n would begin the next event as an empty line: harmless).
      return i + 1;
    }
    return -1;
  }
}

/** A whole body (a JSON response): one message, ended by the end of the stream. */
export class BodyReader extends CappedReader {
  protected end(): number {
    return -1;
  }
}
