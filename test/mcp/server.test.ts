/**
 * `agent-sessions mcp` as MCP clients see it: the built CLI in a child process against a dev server with a worker,
 * driven by the SDK's Client over stdio (tools, a session run through them, tool errors naming the field, cancel,
 * dispose), over streamable HTTP with its token and Host/Origin checks, and by the MCP inspector's CLI as an outside
 * client.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { SessionEvent } from '../../src/domain/events';
import { assertBuilt, BIN, cli, cliEnv, ROOT, spawnCli, until, type LiveCli } from '../cli/cliSupport';
import { newId, startSessionTestEnv, summarize, type SessionTestEnv } from '../support/sessionEnv';

// Each test spawns Node processes (the CLI, the inspector) on a shared two-core machine.
vi.setConfig({ testTimeout: 180_000 });

let t: SessionTestEnv;
let tmp: string;
let vars: NodeJS.ProcessEnv;
let client: Client;
let transport: StdioClientTransport;
const transportErrors: Error[] = [];

beforeAll(async () => {
  assertBuilt();
  tmp = mkdtempSync(path.join(os.tmpdir(), 'agent-sessions-mcp-'));
  t = await startSessionTestEnv('dev');
  vars = cliEnv({
    TEMPORAL_ADDRESS: t.env.address,
    TASK_QUEUE: t.taskQueue,
    AGENT_SESSIONS_DATA_DIR: path.join(tmp, 'data'),
  });
  transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'mcp'],
    cwd: ROOT,
    env: vars as Record<string, string>,
    stderr: 'pipe',
  });
  client = new Client({ name: 'agent-sessions-test', version: '1.0.0' });
  // A line on stdout that is not protocol would surface here.
  client.onerror = (err) => transportErrors.push(err);
  await client.connect(transport);
});

afterAll(async () => {
  await client?.close();
  await t?.teardown();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

async function call(name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

/** A successful tool result's structured content (fails the test with the error text otherwise). */
async function ok<T = Record<string, unknown>>(name: string, args: Record<string, unknown>): Promise<T> {
  const result = await call(name, args);
  expect(result.isError, `${name}: ${JSON.stringify(result.content)}`).toBeFalsy();
  // The same value as text, for clients that read only text.
  const text = (result.content[0] as { text: string }).text;
  expect(JSON.parse(text)).toEqual(result.structuredContent);
  return result.structuredContent as T;
}

/** A tool error's text. */
async function toolError(name: string, args: Record<string, unknown>): Promise<string> {
  const result = await call(name, args);
  expect(result.isError, `${name} should fail: ${JSON.stringify(result)}`).toBe(true);
  return (result.content[0] as { text: string }).text;
}

interface Receipt {
  messageId: string;
  lane: string;
  duplicate: boolean;
  seq: number;
}

describe('agent-sessions mcp over stdio', () => {
  it('lists the session tools with the wire schemas as their inputs', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(
      [
        'cancel',
        'dispose',
        'events',
        'followup',
        'inject',
        'start_session',
        'state',
        'steer',
        'transcript',
        'wait_for_turn',
      ].sort(),
    );
    const followup = tools.find((tool) => tool.name === 'followup')!;
    expect(followup.inputSchema.required).toEqual(['sessionId', 'message']);
    const message = followup.inputSchema.properties!.message as {
      properties: Record<string, unknown>;
      additionalProperties: boolean;
    };
    expect(Object.keys(message.properties).sort()).toEqual(['content', 'id', 'refs', 'source']);
    expect(message.additionalProperties).toBe(false);
    const inject = tools.find((tool) => tool.name === 'inject')!;
    expect(Object.keys((inject.inputSchema.properties!.message as typeof message).properties).sort()).toEqual(
      ['content', 'id', 'source'],
    );
    const wait = tools.find((tool) => tool.name === 'wait_for_turn')!;
    expect(wait.inputSchema.properties!.timeoutMs).toMatchObject({ minimum: 1, maximum: 600_000 });
  });

  it('runs a session: start, followup, wait for the turn, inject and steer with ids, state, events, transcript', async () => {
    const id = newId('mcp');
    expect(
      await ok('start_session', {
        sessionId: id,
        config: {
          model: { provider: 'scripted', steps: [{ text: 'first answer' }, { text: 'second answer' }] },
        },
      }),
    ).toEqual({ sessionId: id, started: true });

    const first = await ok<Receipt>('followup', { sessionId: id, message: { content: 'hello' } });
    expect(first).toMatchObject({ lane: 'followup', duplicate: false });
    expect(first.seq).toBeGreaterThanOrEqual(0);
    const ended = await ok('wait_for_turn', { sessionId: id, afterSeq: first.seq, timeoutMs: 60_000 });
    expect(ended).toMatchObject({
      status: 'ended',
      turn: 1,
      reason: { kind: 'completed' },
      answer: 'first answer',
    });

    // Context without a wake, then a follow-up with our own id, sent twice: delivered once.
    const context = await ok<Receipt>('inject', {
      sessionId: id,
      message: { content: 'the user is on mobile', source: { kind: 'plugin', plugin: 'device' } },
    });
    expect(context.lane).toBe('inject');
    expect(await ok('state', { sessionId: id })).toMatchObject({ status: 'idle', turn: 1 });
    const second = await ok<Receipt>('followup', {
      sessionId: id,
      message: { id: 'mcp-q2', content: 'and now?' },
    });
    expect(second).toMatchObject({ messageId: 'mcp-q2', duplicate: false });
    const again = await ok<Receipt>('followup', {
      sessionId: id,
      message: { id: 'mcp-q2', content: 'and now?' },
    });
    expect(again).toMatchObject({ messageId: 'mcp-q2', duplicate: true, seq: second.seq });
    expect(await ok('wait_for_turn', { sessionId: id, afterSeq: second.seq })).toMatchObject({
      status: 'ended',
      turn: 2,
      answer: 'second answer',
    });
    // Nothing runs or waits: the wait answers at once.
    expect(await ok('wait_for_turn', { sessionId: id })).toMatchObject({ status: 'idle', turn: 2 });

    // A steer on an idle session wakes it (past the script, the model echoes).
    const steer = await ok<Receipt>('steer', { sessionId: id, message: { content: 'steered' } });
    expect(await ok('wait_for_turn', { sessionId: id, afterSeq: steer.seq })).toMatchObject({
      status: 'ended',
      turn: 3,
      answer: 'echo: steered',
    });

    const state = await ok('state', { sessionId: id });
    expect(state).toMatchObject({
      status: 'idle',
      turn: 3,
      pending: { nextTurn: [], nextStep: [] },
      refused: 0,
    });

    // Pages of events: small pages chain to the whole log.
    const all: SessionEvent[] = [];
    let afterSeq = -1;
    for (let pages = 0; ; pages++) {
      expect(pages).toBeLessThan(100);
      const page = await ok<{ events: SessionEvent[]; lastSeq: number; nextAfterSeq: number; more: boolean }>(
        'events',
        { sessionId: id, afterSeq, limit: 5 },
      );
      expect(page.events.length).toBeLessThanOrEqual(5);
      all.push(...page.events);
      afterSeq = page.nextAfterSeq;
      if (!page.more) {
        expect(afterSeq).toBe(page.lastSeq);
        break;
      }
    }
    expect(all.map((e) => e.seq)).toEqual(all.map((_, i) => i));
    const lines = summarize(all);
    expect(lines).toContain('user/message hello');
    expect(lines).toContain('assistant/message first answer');
    expect(lines).toContain('user/message the user is on mobile');
    expect(lines.filter((l) => l === 'user/message and now?')).toHaveLength(1);
    expect(lines.filter((l) => l.startsWith('turn/end'))).toEqual([
      'turn/end 1 completed',
      'turn/end 2 completed',
      'turn/end 3 completed',
    ]);

    const transcript = await ok<{ messages: { role: string }[] }>('transcript', { sessionId: id });
    expect(transcript.messages.filter((m) => m.role === 'assistant')).toHaveLength(3);
    expect(transportErrors).toEqual([]);
  });

  it('answers bad input with tool errors that name the field', async () => {
    const id = newId('mcp-bad');
    await ok('start_session', { sessionId: id, config: { model: { provider: 'scripted' } } });
    expect(await toolError('followup', { sessionId: id, message: { content: '' } })).toMatch(
      /message\.content/,
    );
    // The client's own check (InvalidInputError): inject needs a source.
    expect(await toolError('inject', { sessionId: id, message: { content: 'context' } })).toMatch(
      /InvalidInputError: .*message\.source/,
    );
    // Refs go with followup and steer (not inject), and never to the session itself.
    expect(
      await toolError('steer', { sessionId: id, message: { content: 'see', refs: [{ session: id }] } }),
    ).toMatch(/InvalidInputError: .*message\.refs\[0\]\.session: a session cannot reference itself/);
    expect(
      await toolError('inject', {
        sessionId: id,
        message: { content: 'ctx', source: { kind: 'plugin', plugin: 'p' }, refs: [{ session: 'x' }] },
      }),
    ).toMatch(/refs/);
    expect(
      await toolError('start_session', { sessionId: newId('mcp-bad'), config: { tools: ['no spaces'] } }),
    ).toMatch(/config\.tools\[0\]/);
    expect(
      await toolError('start_session', {
        sessionId: newId('mcp-bad'),
        config: { model: { provider: 'nope' } },
      }),
    ).toMatch(/config\.model\.provider/);
    expect(await toolError('wait_for_turn', { sessionId: id, timeoutMs: 600_001 })).toMatch(/timeoutMs/);
    expect(await toolError('events', { sessionId: id, limit: 0 })).toMatch(/limit/);
    expect(await toolError('state', { sessionId: id, extra: true })).toMatch(/extra/);
    expect(await toolError('state', { sessionId: 'has spaces' })).toMatch(/sessionId/);
    expect(await toolError('start_session', { sessionId: id })).toMatch(
      new RegExp(`session ${id} already exists`),
    );
    expect(await toolError('state', { sessionId: newId('mcp-none') })).toMatch(/not found/);
    // Nothing reached the session: no message was accepted, no signal refused.
    expect(await ok('state', { sessionId: id })).toMatchObject({
      turn: 0,
      pending: { nextTurn: [], nextStep: [] },
    });
  });

  it('waits for the turn running now, and answers with its last assistant text even when that came before the wait', async () => {
    const id = newId('mcp-current');
    await ok('start_session', {
      sessionId: id,
      config: {
        tools: ['sleep'],
        model: {
          provider: 'scripted',
          steps: [
            { text: 'looking it up', toolCalls: [{ name: 'sleep', args: { ms: 600_000, graceful: true } }] },
          ],
        },
      },
    });
    await ok('followup', { sessionId: id, message: { content: 'look it up' } });
    const call = await until(
      async () =>
        (await ok<{ events: SessionEvent[] }>('events', { sessionId: id, limit: 1000 })).events.find(
          (e) => e.type === 'tool/call',
        ),
      (e) => e !== undefined,
      'the tool call',
    );
    // Without afterSeq: the turn running now, which does not end by itself.
    expect(await ok('wait_for_turn', { sessionId: id, timeoutMs: 50 })).toMatchObject({
      status: 'timeout',
      turn: 1,
      sessionStatus: 'running',
    });
    await ok('cancel', { sessionId: id });
    expect(await ok('wait_for_turn', { sessionId: id, afterSeq: call!.seq })).toMatchObject({
      status: 'ended',
      turn: 1,
      reason: { kind: 'aborted' },
      answer: 'looking it up',
    });
  });

  it('cancels a running turn, disposes the session, and refuses messages after', async () => {
    const id = newId('mcp-cancel');
    await ok('start_session', {
      sessionId: id,
      config: { model: { provider: 'scripted', steps: [{ text: 'slow', delayMs: 600_000 }] } },
    });
    const sent = await ok<Receipt>('followup', { sessionId: id, message: { content: 'take your time' } });
    await until(
      () => ok('state', { sessionId: id }),
      (s) => s.status === 'running',
      'the turn to run',
    );
    // A bounded wait on a turn that does not end answers `timeout`, not an error.
    expect(await ok('wait_for_turn', { sessionId: id, afterSeq: sent.seq, timeoutMs: 50 })).toMatchObject({
      status: 'timeout',
      turn: 1,
      sessionStatus: 'running',
    });
    expect(await ok('cancel', { sessionId: id })).toEqual({
      sessionId: id,
      cancelled: true,
      keepInbox: false,
    });
    const aborted = await ok<{ seq: number }>('wait_for_turn', { sessionId: id, afterSeq: sent.seq });
    expect(aborted).toMatchObject({ status: 'ended', turn: 1, reason: { kind: 'aborted' } });

    expect(await ok('dispose', { sessionId: id })).toEqual({ sessionId: id, disposed: true });
    expect(await ok('wait_for_turn', { sessionId: id, afterSeq: aborted.seq })).toMatchObject({
      status: 'disposed',
    });
    expect(await ok('state', { sessionId: id })).toMatchObject({ status: 'disposed' });
    expect(await toolError('followup', { sessionId: id, message: { content: 'still there?' } })).toMatch(
      /SessionDisposedError: session .* is disposed/,
    );
    const page = await ok<{ events: SessionEvent[] }>('events', { sessionId: id, afterSeq: -1, limit: 1000 });
    expect(summarize(page.events).at(-1)).toBe('session/disposed');
  });
});

describe('agent-sessions mcp --http', () => {
  let server: LiveCli;
  let url: string;
  let token: string;

  beforeAll(async () => {
    // No token given: the server makes one and prints it to stderr.
    server = spawnCli(['mcp', '--http', '--port', '0'], vars);
    const stderr = await until(
      () => server.stderr(),
      (s) => /token \(random, for this run\): \S+/.test(s),
      'the server to print its URL and token',
    );
    url = /(http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(stderr)![1]!;
    token = /token \(random, for this run\): (\S+)/.exec(stderr)![1]!;
    expect(server.stdout()).toBe('');
  });

  afterAll(async () => {
    server?.child.kill('SIGINT');
    expect(await server?.exited).toBe(0);
  });

  /** A raw POST (node:http, so Host and Origin can be set as a rebinding page would). */
  function post(headers: Record<string, string>): Promise<number> {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
    return new Promise((resolve, reject) => {
      const req = http.request(
        url,
        {
          method: 'POST',
          headers: {
            'Content-Type': 'application/json',
            Accept: 'application/json, text/event-stream',
            ...headers,
          },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  it('refuses requests without the token (401), from another Host or Origin (403)', async () => {
    expect(await post({})).toBe(401);
    expect(await post({ Authorization: 'Bearer wrong-token-of-some-length' })).toBe(401);
    const port = new URL(url).port;
    expect(await post({ Authorization: `Bearer ${token}`, Host: `evil.example:${port}` })).toBe(403);
    expect(await post({ Authorization: `Bearer ${token}`, Origin: 'http://evil.example' })).toBe(403);
    expect(await post({ Authorization: `Bearer ${token}`, Origin: `http://localhost:${port}` })).toBe(200);
  });

  it('serves the tools to a client that sends the token', async () => {
    const http = new Client({ name: 'agent-sessions-http-test', version: '1.0.0' });
    await http.connect(
      new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      }),
    );
    try {
      const { tools } = await http.listTools();
      expect(tools.map((tool) => tool.name)).toContain('wait_for_turn');
      const id = newId('mcp-http');
      await http.callTool({
        name: 'start_session',
        arguments: {
          sessionId: id,
          config: { model: { provider: 'scripted', steps: [{ text: 'over http' }] } },
        },
      });
      const receipt = (await http.callTool({
        name: 'followup',
        arguments: { sessionId: id, message: { content: 'hi' } },
      })) as CallToolResult;
      const { seq } = receipt.structuredContent as { seq: number };
      const waited = (await http.callTool({
        name: 'wait_for_turn',
        arguments: { sessionId: id, afterSeq: seq },
      })) as CallToolResult;
      expect(waited.structuredContent).toMatchObject({ status: 'ended', answer: 'over http' });
    } finally {
      await http.close();
    }
  });
});

describe('the MCP inspector CLI as an outside client', () => {
  const inspectorCli = path.join(ROOT, 'node_modules/@modelcontextprotocol/inspector-cli/build/cli.js');

  /**
   * `mcp-inspector-cli --cli` with an MCP client configuration as docs/mcp-server.md shows it. It runs from its own
   * build folder: it finds its package.json relative to the working directory.
   */
  function inspect(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    const config = path.join(tmp, 'mcp.json');
    writeFileSync(
      config,
      JSON.stringify({
        mcpServers: {
          'agent-sessions': {
            command: process.execPath,
            args: [BIN, 'mcp'],
            env: { TEMPORAL_ADDRESS: vars.TEMPORAL_ADDRESS, TASK_QUEUE: vars.TASK_QUEUE },
          },
        },
      }),
    );
    return new Promise((resolve) => {
      execFile(
        process.execPath,
        [inspectorCli, '--cli', '--config', config, '--server', 'agent-sessions', ...args],
        { cwd: path.dirname(inspectorCli), env: vars, timeout: 120_000 },
        (err, stdout, stderr) =>
          resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      );
    });
  }

  it('lists the tools and starts a session through one', async () => {
    const listed = await inspect(['--method', 'tools/list']);
    expect(listed.code, listed.stderr).toBe(0);
    const { tools } = JSON.parse(listed.stdout) as { tools: { name: string }[] };
    expect(tools.map((tool) => tool.name)).toContain('start_session');

    const id = newId('mcp-inspector');
    const started = await inspect([
      '--method',
      'tools/call',
      '--tool-name',
      'start_session',
      '--tool-arg',
      `sessionId=${id}`,
      `config={"model":{"provider":"scripted","steps":[{"text":"inspected"}]}}`,
    ]);
    expect(started.code, started.stderr).toBe(0);
    expect(JSON.parse(started.stdout)).toMatchObject({ structuredContent: { sessionId: id, started: true } });
    // The session exists for every other client too.
    expect(await t.sessions().state(id)).toMatchObject({ status: 'idle', turn: 0 });
  });
});

describe('agent-sessions mcp arguments', () => {
  it('refuses bad options with a one-line usage error, and says when Temporal cannot be reached', async () => {
    const usage = async (args: string[], env: NodeJS.ProcessEnv, pattern: RegExp) => {
      const r = await cli(args, env);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(pattern);
    };
    await usage(['mcp', '--port', '9000'], vars, /--port needs --http/);
    await usage(['mcp', '--http', '--token', 'short'], vars, /invalid --token: at least 16 characters/);
    await usage(
      ['mcp', '--http'],
      { ...vars, AGENT_SESSIONS_MCP_TOKEN: 'short' },
      /invalid AGENT_SESSIONS_MCP_TOKEN/,
    );
    const down = await cli(['mcp'], { ...vars, TEMPORAL_ADDRESS: '127.0.0.1:1' });
    expect(down.code).toBe(1);
    expect(down.stdout).toBe('');
    expect(down.stderr).toMatch(/cannot reach Temporal at 127\.0\.0\.1:1/);
  });
});
