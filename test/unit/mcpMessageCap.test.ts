/**
 * The cap on one message from an MCP server (issue 33; src/activities/mcp/framing.ts, stdio.ts, http.ts): the
 * readers that count a message as it arrives and drop it past the cap, and the worker's connection over both
 * transports against real servers — the stdio fixture server (test/fixtures/mcp/fixture-server.mjs) and a
 * streamable-HTTP server started here — with a small cap, so a call's oversized answer fails with its size while
 * the connection serves the next call. No Temporal: the session-level behaviour is in test/integration/mcp.test.ts.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { resolveMcpServers } from '../../src/activities/mcp/config';
import { McpConnection, McpTooLargeError } from '../../src/activities/mcp/connection';
import {
  BodyReader,
  LineReader,
  SseReader,
  TopLevelKeys,
  type Framed,
} from '../../src/activities/mcp/framing';
import { McpTools } from '../../src/activities/mcp/tools';

const FIXTURE = path.resolve(__dirname, '../fixtures/mcp/fixture-server.mjs');

/** `data` given to `reader` in pieces of `size` bytes; every item it made. */
function feed(reader: LineReader | SseReader | BodyReader, data: string | Buffer, size: number): Framed[] {
  const bytes = Buffer.from(data);
  const out: Framed[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(...reader.push(bytes.subarray(i, i + size)));
  const last = reader.flush();
  return last ? [...out, last] : out;
}

const describeItems = (items: Framed[]) =>
  items.map((i) =>
    i.kind === 'message'
      ? i.bytes.toString('utf8')
      : { ...i.tooLarge, id: i.keys.id, hasMethod: i.keys.hasMethod },
  );

describe('the top-level keys of a message read piece by piece', () => {
  const keysOf = (json: string, size: number) => {
    const keys = new TopLevelKeys();
    const bytes = Buffer.from(json);
    for (let i = 0; i < bytes.length; i += size) keys.push(bytes.subarray(i, i + size));
    return { id: keys.id, hasMethod: keys.hasMethod };
  };

  it('finds the id before or after the result, never one nested in it or inside a string', () => {
    const result = { content: [{ type: 'text', text: 'a "quoted" {"id":9} \\ and ] [ } {' }], id: 8 };
    for (const size of [1, 3, 1000]) {
      expect(keysOf(JSON.stringify({ result, jsonrpc: '2.0', id: 7 }), size)).toEqual({
        id: 7,
        hasMethod: false,
      });
      expect(keysOf(JSON.stringify({ jsonrpc: '2.0', id: 'req-1', result }), size)).toEqual({
        id: 'req-1',
        hasMethod: false,
      });
      expect(keysOf(JSON.stringify({ jsonrpc: '2.0', result }), size)).toEqual({
        id: undefined,
        hasMethod: false,
      });
      expect(
        keysOf(` { "method" : "sampling/createMessage", "params": {"id": 3}, "id" : 12 }`, size),
      ).toEqual({
        id: 12,
        hasMethod: true,
      });
    }
  });
});

describe('LineReader (stdio)', () => {
  it('passes lines within the cap whole, however the bytes are split', () => {
    const lines = ['{"a":1}', '', `{"b":"${'é'.repeat(30)}"}`, '{"c":3}'];
    for (const size of [1, 2, 7, 1000])
      expect(describeItems(feed(new LineReader(100), `${lines.join('\n')}\n`, size))).toEqual(lines);
  });

  it('refuses a line over the cap with its size and id, and the next line passes', () => {
    const big = JSON.stringify({
      result: { content: [{ type: 'text', text: 'x'.repeat(5000) }] },
      jsonrpc: '2.0',
      id: 4,
    });
    for (const size of [1, 100, 64 * 1024])
      expect(describeItems(feed(new LineReader(1000), `{"ok":1}\n${big}\n{"ok":2}\n`, size))).toEqual([
        '{"ok":1}',
        { bytes: Buffer.byteLength(big), limit: 1000, complete: true, id: 4, hasMethod: false },
        '{"ok":2}',
      ]);
    // Exactly at the cap is within it.
    expect(describeItems(feed(new LineReader(8), '{"ok":1}\n', 3))).toEqual(['{"ok":1}']);
  });

  it('abandons a line that passes the drain limit without ending, and reads nothing after', () => {
    const reader = new LineReader(100, 1000);
    const items = feed(reader, `{"id":5,"result":"${'x'.repeat(2000)}`, 64);
    expect(describeItems(items)).toEqual([
      { bytes: 1024, limit: 100, complete: false, id: 5, hasMethod: false },
    ]);
    expect(reader.abandoned).toBe(true);
    expect(reader.push(Buffer.from('"}\n{"ok":1}\n'))).toEqual([]);
  });
});

describe('SseReader (streamable HTTP)', () => {
  it('passes events within the cap as sent, with any line ending', () => {
    for (const eol of ['\n', '\r\n', '\r']) {
      const events = [
        `event: message${eol}data: {"a":1}${eol}${eol}`,
        `: keep-alive${eol}${eol}`,
        `data: {"b":2}${eol}${eol}`,
      ];
      for (const size of [1, 5, 1000]) {
        const items = describeItems(feed(new SseReader(100), events.join(''), size));
        expect(items.join('')).toBe(events.join(''));
        expect(items.length).toBeGreaterThanOrEqual(3);
      }
    }
  });

  it('refuses an event over the cap with its size as sent; the next event passes', () => {
    const big = `event: message\ndata: ${JSON.stringify({ result: 'x'.repeat(3000), jsonrpc: '2.0', id: 2 })}\n\n`;
    const next = 'data: {"after":true}\n\n';
    expect(describeItems(feed(new SseReader(1000), `${big}${next}`, 256))).toEqual([
      { bytes: Buffer.byteLength(big), limit: 1000, complete: true, id: 2, hasMethod: false },
      next,
    ]);
  });
});

describe('BodyReader (a JSON body)', () => {
  it('passes a body within the cap whole at its end and refuses a larger one with its size', () => {
    expect(describeItems(feed(new BodyReader(20), '{"id":1,"result":{}}', 3))).toEqual([
      '{"id":1,"result":{}}',
    ]);
    expect(describeItems(feed(new BodyReader(20), '{"id":1,"result":{"a":"xxxxx"}}', 3))).toEqual([
      { bytes: 31, limit: 20, complete: true, id: 1, hasMethod: false },
    ]);
  });
});

describe('option maxMessageBytes', () => {
  it('is checked per server in the configuration, naming the field', () => {
    expect(() => resolveMcpServers({ fs: { command: 'x', maxMessageBytes: 100 } })).toThrow(
      /^invalid mcpServers\.fs\.maxMessageBytes: /,
    );
    expect(resolveMcpServers({ web: { url: 'http://a.example/mcp', maxMessageBytes: 65536 } })).toEqual({
      web: { url: 'http://a.example/mcp', maxMessageBytes: 65536 },
    });
  });

  it('is checked for all servers when the tools are built', () => {
    expect(() => new McpTools({}, [], { maxMessageBytes: 100 })).toThrow(
      'maxMessageBytes: must be an integer from 65536 to 1073741824 (bytes), got 100',
    );
  });
});

describe('a connection with a 64 KiB message cap', () => {
  const CAP = 64 * 1024;
  let tmp: string;
  let http: Server;
  let url: string;

  beforeAll(async () => {
    tmp = mkdtempSync(path.join(os.tmpdir(), 'mcp-cap-'));
    http = createServer((req, res) => {
      let text = '';
      req.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      req.on('end', () => {
        if (req.url === '/fail') {
          res.writeHead(500, { 'content-type': 'text/plain' }).end(`refused ${'x'.repeat(1_000_000)}`);
          return;
        }
        const server = new McpServer({ name: 'web', version: '1.0.0' });
        server.registerTool('big', { inputSchema: { bytes: z.number().int() } }, ({ bytes }) => ({
          content: [{ type: 'text', text: 'x'.repeat(bytes) }],
        }));
        server.registerTool('ping', { inputSchema: {} }, () => ({
          content: [{ type: 'text', text: 'pong' }],
        }));
        const transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: undefined,
          enableJsonResponse: req.url === '/json',
        });
        res.on('close', () => void Promise.all([transport.close(), server.close()]));
        void server
          .connect(transport)
          .then(() => transport.handleRequest(req, res, text ? (JSON.parse(text) as unknown) : undefined));
      });
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  });

  afterAll(() => {
    http?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  const signal = new AbortController().signal;
  const textOf = (r: { content: unknown }) => (r.content as { text: string }[])[0]!.text;
  const refusal = (p: Promise<unknown>) =>
    p.then(
      () => undefined,
      (err: unknown) => (err instanceof McpTooLargeError ? err.tooLarge : err),
    );

  it('stdio: an answer over the cap fails that call with its size; a concurrent call and the next one are answered by the same server', async () => {
    const state = mkdtempSync(path.join(tmp, 'stdio-'));
    const conn = new McpConnection('fix', {
      command: process.execPath,
      args: [FIXTURE],
      env: { FIXTURE_STATE_DIR: state },
      maxMessageBytes: CAP,
    });
    try {
      const [big, slow] = await Promise.all([
        refusal(conn.callTool('big', { bytes: 200_000 }, { signal })),
        conn.callTool('slow', { ms: 300, tag: 's' }, { signal }),
      ]);
      // The SDK server writes {"result":{"content":[{"type":"text","text":"…"}]},"jsonrpc":"2.0","id":N}.
      expect(big).toEqual({ bytes: 200_000 + 73, limit: CAP, complete: true });
      expect(textOf(slow)).toBe('slept 300 ms');
      expect(textOf(await conn.callTool('echo', { text: 'after' }, { signal }))).toBe('echo: after');
      expect(readdirSync(state).filter((f) => f.startsWith('started-'))).toHaveLength(1);
    } finally {
      await conn.close();
    }
  });

  it('stdio: an answer past the drain limit (16 × the cap) is abandoned, the server restarted for the next call', async () => {
    const state = mkdtempSync(path.join(tmp, 'stdio-'));
    const conn = new McpConnection('fix', {
      command: process.execPath,
      args: [FIXTURE],
      env: { FIXTURE_STATE_DIR: state },
      maxMessageBytes: CAP,
    });
    try {
      const big = await refusal(conn.callTool('big', { bytes: 5_000_000 }, { signal }));
      expect(big).toMatchObject({ limit: CAP, complete: false });
      expect((big as { bytes: number }).bytes).toBeGreaterThan(16 * CAP);
      expect(textOf(await conn.callTool('echo', { text: 'after' }, { signal }))).toBe('echo: after');
      expect(readdirSync(state).filter((f) => f.startsWith('started-'))).toHaveLength(2);
    } finally {
      await conn.close();
    }
  });

  for (const [mode, pathname] of [
    ['an SSE stream', '/sse'],
    ['a JSON body', '/json'],
  ] as const)
    it(`HTTP, ${mode}: an answer over the cap fails the call with its size; the next call is answered`, async () => {
      const conn = new McpConnection('web', { url: `${url}${pathname}`, maxMessageBytes: CAP });
      try {
        const big = await refusal(conn.callTool('big', { bytes: 200_000 }, { signal }));
        expect(big).toMatchObject({ limit: CAP, complete: true });
        expect((big as { bytes: number }).bytes).toBeGreaterThan(200_000);
        expect((big as { bytes: number }).bytes).toBeLessThan(200_200);
        expect(textOf(await conn.callTool('ping', {}, { signal }))).toBe('pong');
        // Within the cap, an answer is read as before.
        expect(textOf(await conn.callTool('big', { bytes: 60_000 }, { signal }))).toHaveLength(60_000);
        // Past the drain limit the body is cancelled: the size is where reading stopped.
        const endless = await refusal(conn.callTool('big', { bytes: 5_000_000 }, { signal }));
        expect(endless).toMatchObject({ limit: CAP, complete: false });
        expect((endless as { bytes: number }).bytes).toBeGreaterThan(16 * CAP);
        expect(textOf(await conn.callTool('ping', {}, { signal }))).toBe('pong');
      } finally {
        await conn.close();
      }
    });

  it("HTTP: a refusal's body goes into the error cut at 4 KiB", async () => {
    const conn = new McpConnection('web', { url: `${url}/fail`, maxMessageBytes: CAP });
    const err = await conn.connect().then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err?.message).toContain(
      'MCP server "web" is unavailable: Streamable HTTP error: Error POSTing to endpoint: refused xxx',
    );
    expect(err?.message.length).toBeLessThan(4096 + 200);
    await conn.close();
  });
});
