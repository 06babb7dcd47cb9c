/**
 * Tools from MCP servers through the whole stack (issue 18): a dev server, a worker built with
 * `createSessionWorker({ mcpServers })`, sessions whose scripted model calls the tools, and real MCP servers —
 * @modelcontextprotocol/server-filesystem over stdio on a temp folder, a streamable-HTTP server this test starts
 * with the SDK's McpServer on 127.0.0.1:0, and test/fixtures/mcp/fixture-server.mjs (stdio) that records what
 * happened to it in a state folder. Assertions are on the session's log (tool/result events, turn ends) and on
 * what the model was sent, and on what the servers saw (a cancellation, a restart, a header).
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { toModelMessages } from '../../src/activities/providers/messages';
import { exportHistory, replayHistories } from '../../src/testing';
import type { SessionEvent } from '../../src/domain/events';
import { eventually } from '../support/eventually';
import { settle, startSessionTestEnv, type SessionTestEnv } from '../support/sessionEnv';

const ROOT = path.resolve(__dirname, '../..');
const FS_SERVER = path.join(ROOT, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');
const FIXTURE = path.join(ROOT, 'test/fixtures/mcp/fixture-server.mjs');

let t: SessionTestEnv;
let tmp: string;
let allowed: string;
let http: Server;
const seenAuthorization: string[] = [];
/** How many more `tools/call` requests the HTTP server answers 503 (a server failing, then back or not). */
let failCalls = 0;
/** `initialize` requests by path: how many times a client connected to it. */
const initializes = new Map<string, number>();

/** The streamable-HTTP server (stateless: one McpServer per request); records the Authorization it gets. */
async function startHttpServer(): Promise<string> {
  http = createServer((req: IncomingMessage, res) => {
    seenAuthorization.push(String(req.headers.authorization));
    void readBody(req).then((body) => serveMcp(req, res, body));
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  let text = '';
  for await (const chunk of req) text += String(chunk);
  return text ? (JSON.parse(text) as unknown) : undefined;
}

/**
 * One request: a fresh McpServer with `whoami` and `big`, or 503 for a `tools/call` while `failCalls` says so. On
 * `/json` it answers a call as one JSON body, elsewhere as an SSE stream (the two ways a streamable-HTTP server may).
 */
function serveMcp(req: IncomingMessage, res: ServerResponse, body: unknown): void {
  const method = (body as { method?: string } | undefined)?.method;
  if (method === 'initialize') initializes.set(String(req.url), (initializes.get(String(req.url)) ?? 0) + 1);
  if (method === 'tools/call' && failCalls > 0) {
    failCalls -= 1;
    res.writeHead(503).end('unavailable for a moment');
    return;
  }
  const server = new McpServer({ name: 'web', version: '1.0.0' });
  server.registerTool(
    'whoami',
    { description: 'Says which Authorization header the request carried.', inputSchema: {} },
    () => ({ content: [{ type: 'text', text: `authorization: ${String(req.headers.authorization)}` }] }),
  );
  server.registerTool(
    'big',
    { description: 'Answers with `bytes` bytes of text.', inputSchema: { bytes: z.number().int() } },
    ({ bytes }) => ({ content: [{ type: 'text', text: 'x'.repeat(bytes) }] }),
  );
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: req.url === '/json',
  });
  res.on('close', () => {
    void transport.close();
    void server.close();
  });
  void server.connect(transport).then(() => transport.handleRequest(req, res, body));
}

const stateOf = (name: string) => path.join(tmp, `state-${name}`);
const fixture = (name: string, extraEnv: Record<string, string> = {}) => {
  mkdirSync(stateOf(name));
  return {
    command: process.execPath,
    args: [FIXTURE],
    env: { FIXTURE_STATE_DIR: stateOf(name), ...extraEnv },
  };
};

beforeAll(async () => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'mcp-test-'));
  allowed = path.join(tmp, 'allowed');
  mkdirSync(allowed);
  writeFileSync(path.join(allowed, 'notes.txt'), 'the notes say hello');
  writeFileSync(path.join(tmp, 'secret.txt'), 'outside the allowed folder');
  process.env.MCP_TEST_TOKEN = 'token-from-the-environment';
  const url = await startHttpServer();
  t = await startSessionTestEnv('dev', [], {
    mcpServers: {
      fs: { command: process.execPath, args: [FS_SERVER, allowed] },
      fix: fixture('fix'),
      crashy: fixture('crashy'),
      late: fixture('late', { FIXTURE_REQUIRE_FILE: path.join(tmp, 'late-ready') }),
      collide: fixture('collide', { FIXTURE_COLLIDE: '1' }),
      huge: fixture('huge'),
      web: { url, headers: { Authorization: 'Bearer ${MCP_TEST_TOKEN}' } },
      bigsse: { url: url.replace(/\/mcp$/, '/sse') },
      bigjson: { url: url.replace(/\/mcp$/, '/json') },
    },
  });
});

afterAll(async () => {
  await t?.teardown();
  http?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

type ToolResult = Extract<SessionEvent, { type: 'tool/result' }>['data'];
const results = (events: SessionEvent[]): ToolResult[] =>
  events.flatMap((e) => (e.type === 'tool/result' ? [e.data] : []));
const text = (r: ToolResult | undefined) =>
  (r?.content ?? []).map((b) => (b.type === 'text' ? b.text : '')).join('\n');
const turnEnds = (events: SessionEvent[]) =>
  events.flatMap((e) => (e.type === 'turn/end' ? [e.data.reason] : []));

/** Starts a session with `tools` whose model makes `calls` in one step, then answers; returns its settled log. */
async function runCalls(
  id: string,
  tools: string[],
  calls: { name: string; args?: Record<string, unknown> }[],
): Promise<SessionEvent[]> {
  const s = t.sessions();
  const toolCalls = calls.map((c) => ({ name: c.name, args: c.args ?? {} }));
  await s.start(id, {
    tools,
    model: { provider: 'scripted', steps: [{ toolCalls }, { text: 'done' }] },
  });
  await s.followup(id, 'go');
  return settle(s, id);
}

describe('MCP tools', () => {
  it('runs server-filesystem over stdio: lists, reads, and an outside read is an error the model reads', async () => {
    const events = await runCalls(
      'mcp-fs',
      ['mcp:fs'],
      [
        { name: 'fs__list_directory', args: { path: allowed } },
        { name: 'fs__read_text_file', args: { path: path.join(allowed, 'notes.txt') } },
        { name: 'fs__read_text_file', args: { path: path.join(tmp, 'secret.txt') } },
        { name: 'fs__read_text_file', args: { head: 2 } },
      ],
    );
    const [list, read, outside, invalid] = results(events);
    expect(text(list)).toContain('notes.txt');
    expect(list?.error).toBeUndefined();
    // The server sends the text and structuredContent {content}: both reach the model verbatim.
    expect(read?.content).toEqual([
      { type: 'text', text: 'the notes say hello' },
      { type: 'text', text: '{"content":"the notes say hello"}' },
    ]);
    expect(outside?.error?.code).toBe('TOOL_FAILED');
    expect(outside?.error?.message).toMatch(/access denied/i);
    expect(text(outside)).toMatch(/access denied/i);
    expect(invalid?.error?.code).toBe('TOOL_INVALID_ARGUMENTS');
    expect(invalid?.error?.message).toContain('path');
    expect(turnEnds(events)).toEqual([{ kind: 'completed' }]);
    // The model saw every tool of the server under its model-visible name, with the server's schema unchanged.
    const request = t.recorder.requests('mcp-fs')[0]!;
    const spec = request.toolSpecs.find((s) => s.name === 'fs__read_text_file');
    expect(request.toolSpecs).toHaveLength(14);
    expect(spec?.inputSchema).toMatchObject({ type: 'object', required: ['path'] });
    // …and the model's next request carries the results, in the model's call order.
    const second = t.recorder.requests('mcp-fs')[1]!;
    expect(second.messages.filter((m) => m.role === 'tool').map((m) => m.callId)).toEqual(
      results(events).map((r) => r.callId),
    );
  });

  it('selects one tool with mcp:<server>/<tool>; a streamable-HTTP server gets its header from the environment', async () => {
    const events = await runCalls(
      'mcp-http',
      ['mcp:web/whoami', 'mcp:fix/picture'],
      [
        { name: 'web__whoami' },
        { name: 'fix__picture' },
        { name: 'fix__echo', args: { text: 'not selected' } },
      ],
    );
    const [whoami, picture, notSelected] = results(events);
    expect(text(whoami)).toBe('authorization: Bearer token-from-the-environment');
    const blocks = [
      { type: 'text', text: 'a picture' },
      { type: 'image', mimeType: 'image/png', data: Buffer.from('not really a png').toString('base64') },
      { type: 'resource', uri: 'file:///notes.txt', mimeType: 'text/plain', text: 'the notes' },
      { type: 'resource', uri: 'file:///data.bin', mimeType: 'application/octet-stream', data: 'AQID' },
      { type: 'resource', uri: 'file:///big.log', name: 'big.log', mimeType: 'text/plain' },
      { type: 'text', text: '{"width":1,"height":2}' },
    ];
    expect(picture?.content).toEqual(blocks);
    // The next model request carries the blocks as logged, and a provider's prompt has them as data parts.
    const next = t.recorder.requests('mcp-http')[1]!;
    const entry = next.messages.find((m) => m.role === 'tool' && m.callId === picture?.callId);
    expect(entry?.content).toEqual(blocks);
    const prompt = toModelMessages(next.messages);
    const part = prompt
      .flatMap((m) => (m.role === 'tool' ? m.content : []))
      .find((p) => p.type === 'tool-result' && p.toolCallId === picture?.callId);
    expect(part?.type === 'tool-result' ? part.output : undefined).toMatchObject({
      type: 'content',
      value: [
        { type: 'text', text: 'a picture' },
        { type: 'image-data', mediaType: 'image/png', data: blocks[1]!.data },
        { type: 'text', text: '[resource file:///notes.txt text/plain]\nthe notes' },
        { type: 'file-data', mediaType: 'application/octet-stream', data: 'AQID', filename: 'data.bin' },
        { type: 'text', text: '[resource link file:///big.log "big.log" text/plain]' },
        { type: 'text', text: '{"width":1,"height":2}' },
      ],
    });
    expect(notSelected?.error?.code).toBe('TOOL_NOT_ALLOWED');
    expect(t.recorder.requests('mcp-http')[0]!.toolSpecs.map((s) => s.name)).toEqual([
      'web__whoami',
      'fix__picture',
    ]);
  });

  it('an isError result is a TOOL_FAILED result the model reads', async () => {
    const events = await runCalls('mcp-error', ['mcp:fix'], [{ name: 'fix__report_error' }]);
    const [r] = results(events);
    expect(r?.error).toEqual({
      code: 'TOOL_FAILED',
      message: 'fix__report_error reported an error: the fixture failed on purpose',
    });
    expect(text(r)).toBe('the fixture failed on purpose');
  });

  it('a stdio server that dies mid-call is restarted and the call retried: exactly one result', async () => {
    const events = await runCalls('mcp-crash', ['mcp:crashy'], [{ name: 'crashy__die_once' }]);
    const all = results(events);
    expect(all).toHaveLength(1);
    expect(all[0]?.error).toBeUndefined();
    expect(text(all[0])).toBe('answered after a restart');
    const files = readdirSync(stateOf('crashy'));
    expect(files.filter((f) => f.startsWith('started-'))).toHaveLength(2);
    expect(files.filter((f) => f.startsWith('answered-'))).toHaveLength(1);
  });

  it('an HTTP server failing a call is called again on a new connection; one that stays down is MCP_SERVER_UNAVAILABLE', async () => {
    failCalls = 1;
    let events = await runCalls('mcp-http-retry', ['mcp:web'], [{ name: 'web__whoami' }]);
    expect(results(events)).toHaveLength(1);
    expect(text(results(events)[0])).toBe('authorization: Bearer token-from-the-environment');
    failCalls = 100;
    events = await runCalls('mcp-http-down', ['mcp:web'], [{ name: 'web__whoami' }]);
    failCalls = 0;
    const [r] = results(events);
    expect(results(events)).toHaveLength(1);
    expect(r?.error?.code).toBe('MCP_SERVER_UNAVAILABLE');
    expect(r?.error?.message).toContain('MCP server "web" is unavailable');
  });

  // Issue 33: a 50 MB result ended as MCP_SERVER_UNAVAILABLE "Connection closed" over stdio (the SDK's reader refuses
  // a line over 10 MiB by killing the server; each retry started it again), and over HTTP was read whole. Now the
  // worker drops it past the server's message limit (default 10 MiB) as it arrives and the model reads its size.
  // `connects` counts how often the worker connected to each server (a stdio server started, an HTTP initialize).
  const connects: Record<string, () => number> = {
    huge: () => readdirSync(stateOf('huge')).filter((f) => f.startsWith('started-')).length,
    bigsse: () => initializes.get('/sse') ?? 0,
    bigjson: () => initializes.get('/json') ?? 0,
  };
  for (const [server, next, answer] of [
    ['huge', { name: 'huge__echo', args: { text: 'after' } }, 'echo: after'],
    ['bigsse', { name: 'bigsse__whoami', args: {} }, 'authorization: undefined'],
    ['bigjson', { name: 'bigjson__whoami', args: {} }, 'authorization: undefined'],
  ] as const)
    it(`a 50 MB result of ${server} is a TOOL_RESULT_TOO_LARGE error naming its size; the model answers and the next call works`, async () => {
      const s = t.sessions();
      const id = `mcp-big-${server}`;
      await s.start(id, {
        tools: [`mcp:${server}`],
        model: {
          provider: 'scripted',
          steps: [
            { toolCalls: [{ name: `${server}__big`, args: { bytes: 50_000_000 } }] },
            { toolCalls: [next] },
            { text: 'done' },
          ],
        },
      });
      await s.followup(id, 'go');
      const events = await settle(s, id);
      const [big, after] = results(events);
      expect(results(events)).toHaveLength(2);
      expect(big?.error?.code).toBe('TOOL_RESULT_TOO_LARGE');
      // The size the server sent (the text and its JSON-RPC envelope) and the limit that refused it.
      expect(big?.error?.message).toMatch(
        new RegExp(
          `^the result of tool "${server}__big" is 47\\.7 MB \\(50000\\d{3} bytes as MCP server "${server}" sent it\\), over the limit of 10\\.0 MB \\(10485760 bytes`,
        ),
      );
      expect(text(big)).toBe(`error: ${big?.error?.message}`);
      expect(after?.error).toBeUndefined();
      expect(text(after)).toBe(answer);
      expect(turnEnds(events)).toEqual([{ kind: 'completed' }]);
      // The model read the error, then made the next call, then answered.
      const requests = t.recorder.requests(id);
      expect(requests).toHaveLength(3);
      const seen = requests[1]!.messages.find((m) => m.role === 'tool' && m.callId === big?.callId);
      expect(seen?.content).toEqual(big?.content);
      // One connection served the session's tools/list and both calls: it was not reset (a stdio server restarted).
      expect(connects[server]!()).toBe(1);
    });

  it('a server down at worker start: its tools are refused with a clear error until it is back', async () => {
    const s = t.sessions();
    const id = 'mcp-late';
    await s.start(id, {
      tools: ['mcp:late'],
      model: { provider: 'scripted', steps: [{ toolCalls: [{ name: 'late__echo', args: { text: 'hi' } }] }] },
    });
    await s.followup(id, 'first');
    let events = await settle(s, id);
    const [first] = turnEnds(events);
    expect(first).toMatchObject({ kind: 'error', error: { code: 'MCP_SERVER_UNAVAILABLE' } });
    expect(JSON.stringify(first)).toContain('MCP server \\"late\\" is unavailable');
    expect(JSON.stringify(first)).toContain('does not exist yet'); // the server's own stderr says why
    writeFileSync(path.join(tmp, 'late-ready'), '');
    await s.followup(id, 'second');
    events = await settle(s, id, 2);
    expect(turnEnds(events)[1]).toEqual({ kind: 'completed' });
    expect(text(results(events)[0])).toBe('echo: hi');
  });

  it('a server listing two tools with one model-visible name is refused, naming both', async () => {
    const events = await runCalls(
      'mcp-collide',
      ['mcp:collide'],
      [{ name: 'collide__echo', args: { text: 'x' } }],
    );
    const [end] = turnEnds(events);
    expect(end).toMatchObject({ kind: 'error', error: { code: 'MCP_SERVER_UNAVAILABLE' } });
    expect(JSON.stringify(end)).toContain('collide/dot.name and collide/dot_name → collide__dot_name');
    expect(results(events)).toEqual([]);
  });

  it('tools/list is refreshed on list_changed: a later session sees a tool the server added', async () => {
    await runCalls(
      'mcp-add',
      ['mcp:fix/add_tool'],
      [{ name: 'fix__add_tool', args: { name: 'added_later' } }],
    );
    const events = await runCalls('mcp-added', ['mcp:fix'], [{ name: 'fix__added_later' }]);
    expect(t.recorder.requests('mcp-added')[0]!.toolSpecs.map((s) => s.name)).toContain('fix__added_later');
    // Each session's log says which definitions its model saw: the names, and a hash of the definitions.
    const offered = (id: string, log: SessionEvent[]) =>
      log.flatMap((e) => (e.type === 'assistant/message' ? [e.data.tools] : []))[0];
    const before = offered('mcp-add', await settle(t.sessions(), 'mcp-add'));
    const after = offered('mcp-added', events);
    expect(before?.names).toEqual(['fix__add_tool']);
    expect(after?.names).toContain('fix__added_later');
    expect(after?.hash).toMatch(/^[0-9a-f]{16}$/);
    expect(text(results(events)[0])).toBe('added_later ran');
  });

  it('a long MCP call heartbeats its progress; a cancel reaches the server as notifications/cancelled', async () => {
    const s = t.sessions();
    const id = 'mcp-cancel';
    await s.start(id, {
      tools: ['mcp:fix'],
      model: {
        provider: 'scripted',
        steps: [{ toolCalls: [{ name: 'fix__slow', args: { ms: 600_000, tag: 'c1' } }] }],
      },
    });
    await s.followup(id, 'go');
    await eventually(
      () => Promise.resolve(existsSync(path.join(stateOf('fix'), 'slow-started-c1'))),
      Boolean,
      'the slow call to start on the server',
    );
    // The server's progress notifications reach the activity's heartbeat details (the Temporal UI shows them).
    await eventually(
      async () => {
        const data = (await s.handle(id).describe()).raw.pendingActivities?.[0]?.heartbeatDetails
          ?.payloads?.[0]?.data;
        return data ? (JSON.parse(Buffer.from(data).toString('utf8')) as { progress?: number }) : {};
      },
      (details) => (details.progress ?? 0) >= 2,
      'a heartbeat with the progress the server reported',
      20_000,
    );
    await s.cancel(id);
    const events = await settle(s, id);
    expect(turnEnds(events)).toEqual([{ kind: 'aborted', reason: { kind: 'user' } }]);
    expect(results(events)).toHaveLength(1);
    expect(results(events)[0]?.error?.code).toBe('ABORTED');
    await eventually(
      () => Promise.resolve(existsSync(path.join(stateOf('fix'), 'cancelled-c1'))),
      Boolean,
      'the server to record the cancellation',
      20_000,
    );
  });

  it('the histories of these sessions replay with the current code, and replay calls no MCP server', async () => {
    const dir = path.join(tmp, 'histories');
    for (const id of ['mcp-fs', 'mcp-http', 'mcp-crash', 'mcp-late', 'mcp-cancel'])
      await exportHistory(t.env.client, id, path.join(dir, `${id}.json`));
    const answered = () => readdirSync(stateOf('crashy')).filter((f) => f.startsWith('answered-')).length;
    const before = answered();
    const summary = await replayHistories(dir, {
      workflowBundle: { codePath: inject('workflowBundlePath') },
    });
    expect(summary.replayed).toBe(5);
    expect(answered()).toBe(before);
  });
});
