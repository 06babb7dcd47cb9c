/**
 * Tenants and scoped tokens (issue 38, deliverable 1) on real servers: a dev server with a worker, the viewer and
 * MCP-over-HTTP started in-process with the tokens file the built CLI's `agent-sessions token` writes. A tenant-scoped
 * token sees only its tenant's sessions on every viewer route and every MCP tool and gets not-found (404, the tool's
 * SessionNotFoundError) for another tenant's session, exactly as for an id that does not exist; a read-only scoped
 * token cannot write; a prefix-scoped token sees only its prefix; a revoked token is refused; the file holds no
 * secret. The tenant is a search attribute `list --tenant` filters by, carried by forks and sub-sessions.
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { TokenStore } from '../../src/access/tokens';
import type { SessionClient } from '../../src/client';
import { planDelegate } from '../../src/domain/subsession';
import { SessionConfigSchema } from '../../src/domain/wire';
import { serveSessionsMcpHttp, type SessionsMcpHttpServer } from '../../src/mcp/http';
import { startViewer, type RunningViewer } from '../../src/viewer/server';
import { assertBuilt, cli, cliEnv } from '../cli/cliSupport';
import { startSessionTestEnv, waitUntil, type SessionTestEnv } from '../support/sessionEnv';

vi.setConfig({ testTimeout: 120_000 });

const FULL = 'full-access-token-0123456789';
let t: SessionTestEnv;
let sessions: SessionClient;
let tmp: string;
let file: string;
let env: NodeJS.ProcessEnv;
let viewer: RunningViewer;
let mcp: SessionsMcpHttpServer;
const secrets: Record<string, string> = {};
const run = `r${Date.now().toString(36)}`;
const id = {
  acme: `${run}-acme-1`,
  acmeTeam: `${run}-team-1`,
  globex: `${run}-globex-1`,
  plain: `${run}-plain-1`,
  unknown: `${run}-nobody`,
};

async function issue(name: string, extra: string[]): Promise<void> {
  const r = await cli(['token', 'issue', '--name', name, ...extra], env);
  expect(r.code, r.stderr).toBe(0);
  secrets[name] = r.stdout.trim();
}

beforeAll(async () => {
  assertBuilt();
  tmp = mkdtempSync(path.join(os.tmpdir(), 'agent-sessions-scoped-'));
  file = path.join(tmp, 'tokens.json');
  t = await startSessionTestEnv('dev');
  sessions = t.sessions();
  env = cliEnv({
    AGENT_SESSIONS_TOKENS_FILE: file,
    TEMPORAL_ADDRESS: t.env.address,
    TASK_QUEUE: t.taskQueue,
  });
  await issue('acme', ['--tenant', 'acme']);
  await issue('acme-ro', ['--tenant', 'acme', '--read-only']);
  await issue('acme-team', ['--tenant', 'acme', '--prefix', `${run}-team-`]);
  await issue('gone', ['--tenant', 'acme']);
  await sessions.start(id.acme, { tenant: 'acme' });
  await sessions.start(id.acmeTeam, { tenant: 'acme' });
  await sessions.start(id.globex, { tenant: 'globex' });
  await sessions.start(id.plain, {});
  const scopedTokens = new TokenStore(file);
  viewer = await startViewer({ sessions, token: FULL, port: 0, scopedTokens });
  mcp = await serveSessionsMcpHttp(sessions, { port: 0, token: FULL, scopedTokens, pollMs: 50 });
  // Visibility is eventually consistent: wait until the full token lists all four.
  await waitUntil(
    () => sessions.list({ idPrefix: run }),
    (page) => page.sessions.length === 4,
    'the four sessions listed',
  );
});

afterAll(async () => {
  await viewer?.close();
  await mcp?.close();
  await t?.teardown();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('the tenant field', () => {
  it('is validated, kept as a search attribute, filtered by list, carried by forks and sub-sessions', async () => {
    const bad = SessionConfigSchema.safeParse({ tenant: 'Acme Corp' });
    expect(bad.success).toBe(false);
    expect(bad.error?.issues[0]?.path).toEqual(['tenant']);
    expect(bad.error?.issues[0]?.message).toMatch(/1–64 of a-z 0-9 _ -/);
    expect((await sessions.row(id.acme)).tenant).toBe('acme');
    expect((await sessions.row(id.plain)).tenant).toBeUndefined();
    const acme = await sessions.list({ tenant: 'acme', idPrefix: run });
    expect(acme.sessions.map((s) => s.id).sort()).toEqual([id.acme, id.acmeTeam].sort());
    const none = await sessions.list({ tenant: null, idPrefix: run });
    expect(none.sessions.map((s) => s.id)).toEqual([id.plain]);
    const listed = await cli(['list', '--tenant', 'globex'], env);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/TENANT/);
    expect(listed.stdout).toContain(id.globex);
    expect(listed.stdout).not.toContain(id.acme);

    await sessions.ask(id.acme, 'hello');
    const fork = `${run}-acme-fork`;
    await sessions.fork(id.acme, { newId: fork });
    expect((await sessions.config(fork)).tenant).toBe('acme');
    await waitUntil(
      () => sessions.list({ tenant: 'acme', idPrefix: fork }),
      (page) => page.sessions.length === 1,
      'the fork listed in its tenant',
    );

    const plan = planDelegate({
      parentId: 'p',
      config: { tenant: 'acme' },
      allowed: new Map(),
      call: { callId: 'c1', name: 'delegate', arguments: { task: 't' } },
      startedInTurn: 0,
    });
    expect(plan.kind === 'start' && plan.start.config.tenant).toBe('acme');
  });
});

describe('scoped tokens on the viewer', () => {
  const get = (p: string, token: string) =>
    fetch(`${viewer.url}${p}`, { headers: { Authorization: `Bearer ${token}` } });
  const post = (p: string, token: string, body: unknown) =>
    fetch(`${viewer.url}${p}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
  const routes = (sid: string) => {
    const s = `api/sessions/${encodeURIComponent(sid)}`;
    return [
      ['read', (tok: string) => get(s, tok)],
      ['stream', (tok: string) => get(`${s}/live`, tok)],
      ['send', (tok: string) => post(`${s}/messages`, tok, { lane: 'inject', content: 'x' })],
      ['approve', (tok: string) => post(`${s}/approve`, tok, { callId: 'c9', decision: 'approve' })],
      ['cancel', (tok: string) => post(`${s}/cancel`, tok, {})],
    ] as const;
  };

  it("lists only the token's tenant; every route answers 404 for another tenant's session as for an unknown one", async () => {
    const me = (await (await get('api/me', secrets.acme!)).json()) as Record<string, unknown>;
    expect(me).toEqual({ role: 'full', name: 'acme', tenant: 'acme' });
    const listed = (await (await get('api/sessions', secrets.acme!)).json()) as {
      sessions: { id: string; tenant?: string }[];
    };
    const mine = listed.sessions.map((s) => s.id).filter((s) => s.startsWith(run));
    expect(mine.sort()).toEqual([id.acme, id.acmeTeam, `${run}-acme-fork`].sort());
    expect(listed.sessions.every((s) => s.tenant === 'acme')).toBe(true);

    for (const sid of [id.globex, id.plain]) {
      for (const [what, call] of routes(sid)) {
        const res = await call(secrets.acme!);
        expect(res.status, `${what} ${sid}`).toBe(404);
        expect(await res.json()).toEqual({ error: `session ${sid} not found` });
      }
    }
    // The full token still reaches them (an unscoped token).
    expect((await get(`api/sessions/${id.globex}`, FULL)).status).toBe(200);
  });

  it('lets the scoped token use its own sessions; a read-only one only watches; a prefix token sees its prefix', async () => {
    const [read, stream, send, approve, cancel] = routes(id.acme).map(([, f]) => f);
    expect((await read!(secrets.acme!)).status).toBe(200);
    const live = await stream!(secrets.acme!);
    expect(live.status).toBe(200);
    await live.body?.cancel();
    expect((await send!(secrets.acme!)).status).toBe(200);
    expect((await approve!(secrets.acme!)).status).toBe(409); // no such call waits: the session answered
    expect((await cancel!(secrets.acme!)).status).toBe(200);

    expect((await read!(secrets['acme-ro']!)).status).toBe(200);
    for (const write of [send!, approve!, cancel!])
      expect((await write(secrets['acme-ro']!)).status).toBe(403);
    expect((await send!(secrets['acme-ro']!)).status).toBe(403);

    const team = (await (await get('api/sessions', secrets['acme-team']!)).json()) as {
      sessions: { id: string }[];
    };
    expect(team.sessions.map((s) => s.id)).toEqual([id.acmeTeam]);
    expect((await read!(secrets['acme-team']!)).status).toBe(404);
    expect((await get(`api/sessions/${id.acmeTeam}`, secrets['acme-team']!)).status).toBe(200);
  });
});

describe('scoped tokens on MCP over HTTP', () => {
  async function connect(token: string): Promise<Client> {
    const client = new Client({ name: 'scoped-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(mcp.url), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      }),
    );
    return client;
  }
  const call = async (c: Client, name: string, args: Record<string, unknown>) =>
    (await c.callTool({ name, arguments: args })) as CallToolResult;
  const text = (r: CallToolResult) => (r.content[0] as { text: string }).text;
  const tools = (sid: string): [string, Record<string, unknown>][] => [
    ['state', { sessionId: sid }],
    ['events', { sessionId: sid }],
    ['transcript', { sessionId: sid }],
    ['wait_for_turn', { sessionId: sid, timeoutMs: 100 }],
    ['followup', { sessionId: sid, message: { content: 'x' } }],
    ['steer', { sessionId: sid, message: { content: 'x' } }],
    ['inject', { sessionId: sid, message: { content: 'x', source: { kind: 'plugin', plugin: 't' } } }],
    ['cancel', { sessionId: sid }],
    ['dispose', { sessionId: sid }],
  ];

  it("answers every tool for another tenant's session with the not-found error of an unknown id", async () => {
    const c = await connect(secrets.acme!);
    try {
      for (const sid of [id.globex, id.plain, id.unknown]) {
        for (const [name, args] of tools(sid)) {
          const r = await call(c, name, args);
          expect(r.isError, `${name} ${sid}`).toBe(true);
          expect(text(r)).toBe(`SessionNotFoundError: session ${sid} not found`);
        }
      }
      // A reference to another tenant's session is not found either.
      const ref = await call(c, 'followup', {
        sessionId: id.acme,
        message: { content: 'x', refs: [{ session: id.globex }] },
      });
      expect(text(ref)).toBe(`SessionNotFoundError: session ${id.globex} not found`);
      // Its own session works; a start goes into its tenant, never another.
      const state = await call(c, 'state', { sessionId: id.acme });
      expect(state.isError).toBeFalsy();
      const other = await call(c, 'start_session', { sessionId: `${run}-x`, config: { tenant: 'globex' } });
      expect(text(other)).toMatch(
        /InvalidInputError: .*tenant: this token starts sessions of tenant acme only/,
      );
      const started = await call(c, 'start_session', { sessionId: `${run}-acme-mcp` });
      expect(started.isError).toBeFalsy();
      expect((await sessions.config(`${run}-acme-mcp`)).tenant).toBe('acme');
    } finally {
      await c.close();
    }
  });

  it('refuses writes to a read-only scoped token and ids outside a prefix token', async () => {
    const ro = await connect(secrets['acme-ro']!);
    try {
      expect((await call(ro, 'state', { sessionId: id.acme })).isError).toBeFalsy();
      for (const [name, args] of tools(id.acme).slice(4)) {
        const r = await call(ro, name, args);
        expect(text(r), name).toMatch(/^ReadOnlyTokenError: this token can only watch/);
      }
      const start = await call(ro, 'start_session', { sessionId: `${run}-ro` });
      expect(text(start)).toMatch(/^ReadOnlyTokenError/);
    } finally {
      await ro.close();
    }
    const team = await connect(secrets['acme-team']!);
    try {
      expect((await call(team, 'state', { sessionId: id.acmeTeam })).isError).toBeFalsy();
      expect(text(await call(team, 'state', { sessionId: id.acme }))).toBe(
        `SessionNotFoundError: session ${id.acme} not found`,
      );
    } finally {
      await team.close();
    }
  });
});

describe('agent-sessions token', () => {
  it('lists, revokes (refused at once by both servers) and keeps only hashes in a 0600 file', async () => {
    const listed = await cli(['token', 'list', '--json'], env);
    expect(listed.code, listed.stderr).toBe(0);
    const rows = listed.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(rows.map((r) => r.name)).toEqual(['acme', 'acme-ro', 'acme-team', 'gone']);
    expect(rows[2]).toMatchObject({ tenant: 'acme', prefix: `${run}-team-`, readOnly: false });
    expect(rows[1]).toMatchObject({ readOnly: true });

    const stored = readFileSync(file, 'utf8');
    for (const secret of Object.values(secrets)) expect(stored).not.toContain(secret);
    expect(statSync(file).mode & 0o777).toBe(0o600);

    const res = () => fetch(`${viewer.url}api/me`, { headers: { Authorization: `Bearer ${secrets.gone}` } });
    expect((await res()).status).toBe(200);
    const revoked = await cli(['token', 'revoke', 'gone'], env);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect((await res()).status).toBe(401);
    const mcpRes = await fetch(mcp.url, {
      method: 'POST',
      headers: { Authorization: `Bearer ${secrets.gone}`, 'Content-Type': 'application/json' },
      body: '{}',
    });
    expect(mcpRes.status).toBe(401);
    const again = await cli(['token', 'revoke', 'gone'], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/no token named gone/);
    const bad = await cli(['token', 'issue', '--tenant', 'Bad Tenant'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--tenant: a tenant id/);
  });
});
