/**
 * The web session viewer's server (`agent-sessions ui`): the page (src/viewer/page, Preact + htm served from our
 * own node_modules, nothing from a CDN) and a small JSON + Server-Sent Events API over SessionClient, on 127.0.0.1.
 *
 * Access (./access.ts): the access token, a read-only token and scoped tokens (one tenant, optionally an id prefix
 * and read-only; a session outside the scope is not found, and lists hold only in-scope sessions).
 * A request body over `maxBodyBytes` is refused (413) before it is read: at once when its Content-Length says so,
 * as soon as a chunked body passes it otherwise. docs/decisions/2026-12-04-viewer.md.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { serve, type ServerType } from '@hono/node-server';
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { streamSSE } from 'hono/streaming';
import { z } from 'zod';
import {
  ApprovalRefusedError,
  DeliveryRejectedError,
  InvalidInputError,
  SessionDisposedError,
  SessionNotFoundError,
  type SessionClient,
  type SessionListFilters,
} from '../client';
import { ApproveInputSchema, CancelInputSchema } from '../domain';
import { bodyTooLargeMessage } from '../http/bodyLimit';
import { servedHosts } from '../http/hosts';
import { authenticate, scopeGuard, type ViewerEnv } from './access';
import { pageItem } from './pageItem';
import { scopedFilters, type ScopedTokens } from '../access/scope';

export type { ViewerRole } from './access';

export interface ViewerOptions {
  sessions: SessionClient;
  /** The access token: watch, send, approve, cancel. At least 16 characters. */
  token: string;
  /** A token that can only watch. At least 16 characters, different from `token`. */
  readToken?: string;
  /** Scoped tokens (one tenant, an id prefix, read-only): `new TokenStore(file)` from `agent-sessions token`. */
  scopedTokens?: ScopedTokens;
  /** Default 127.0.0.1. The viewer has no TLS: keep it on a loopback address. */
  host?: string;
  /** Default 4280; 0 picks a free port. */
  port?: number;
  /** Largest request body in bytes (default `DEFAULT_VIEWER_MAX_BODY_BYTES`, 2 MiB); a larger one gets 413. */
  maxBodyBytes?: number;
}

export interface RunningViewer {
  /** The page's address, without a token. */
  url: string;
  port: number;
  close(): Promise<void>;
}

export const DEFAULT_VIEWER_PORT = 4280;
const MIN_TOKEN = 16;
/**
 * 2 MiB: the largest message the session limits allow (`LIMITS.contentChars` UTF-16 code units) fits even when a
 * client writes every character as a six-byte `\uXXXX` escape, with room for the other fields; approvals and
 * cancels are far smaller.
 */
export const DEFAULT_VIEWER_MAX_BODY_BYTES = 2 * 1024 * 1024;
/** How long a silent live stream waits before an SSE comment, so proxies and browsers keep it open. */
const KEEPALIVE_MS = 15_000;

const PAGE_DIR = path.join(__dirname, 'page');
/** The page's modules, from our own dependencies (an import map in index.html names them). */
const VENDOR: Record<string, string> = {
  'preact.mjs': path.join(path.dirname(require.resolve('preact')), 'preact.module.js'),
  'preact-hooks.mjs': path.join(path.dirname(require.resolve('preact/hooks')), 'hooks.module.js'),
  'htm.mjs': path.join(path.dirname(require.resolve('htm')), 'htm.module.js'),
};
const PAGE_FILES: Record<string, string> = {
  'app.js': path.join(PAGE_DIR, 'app.js'),
  'log.js': path.join(PAGE_DIR, 'log.js'),
  'style.css': path.join(PAGE_DIR, 'style.css'),
};
const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
};

/** The source of a message the page injects: context from the viewer (an inject must name its producer). */
const VIEWER_SOURCE = { kind: 'plugin', plugin: 'viewer' } as const;

const ListQuerySchema = z.strictObject({
  status: z.enum(['idle', 'running', 'disposed']).optional(),
  label: z.string().max(256).optional(),
  pageToken: z.string().max(4096).optional(),
  limit: z.coerce.number().int().min(1).max(200).optional(),
});
const SendBodySchema = z.strictObject({
  lane: z.enum(['followup', 'steer', 'inject']),
  content: z.string(),
  id: z.string().optional(),
});

/** Checks the options; throws an Error naming the option and the limit. */
export function validateViewerOptions(
  opts: Pick<ViewerOptions, 'token' | 'readToken' | 'port' | 'maxBodyBytes'>,
): void {
  if (opts.token.length < MIN_TOKEN) throw new Error(`token: at least ${MIN_TOKEN} characters`);
  if (opts.readToken !== undefined && opts.readToken.length < MIN_TOKEN)
    throw new Error(`readToken: at least ${MIN_TOKEN} characters`);
  if (opts.readToken !== undefined && opts.readToken === opts.token)
    throw new Error('readToken: must differ from the access token');
  if (opts.port !== undefined && (!Number.isInteger(opts.port) || opts.port < 0 || opts.port > 65535))
    throw new Error('port: an integer from 0 to 65535');
  if (opts.maxBodyBytes !== undefined && (!Number.isSafeInteger(opts.maxBodyBytes) || opts.maxBodyBytes < 1))
    throw new Error('maxBodyBytes: a whole number of bytes from 1');
}

/** The HTTP status and message for an error of the client. */
function failure(err: unknown): { status: 400 | 403 | 404 | 409 | 502; error: string; field?: string } {
  if (err instanceof InvalidInputError) return { status: 400, error: err.message, field: err.field };
  if (err instanceof SessionNotFoundError) return { status: 404, error: err.message };
  if (err instanceof SessionDisposedError || err instanceof ApprovalRefusedError)
    return { status: 409, error: err.message };
  if (err instanceof DeliveryRejectedError) return { status: 409, error: err.message };
  return { status: 502, error: err instanceof Error ? err.message.split('\n')[0]! : String(err) };
}

function zodFailure(error: z.ZodError, what: string): { status: 400; error: string; field: string } {
  const issue = error.issues[0]!;
  const field = issue.path.length ? issue.path.join('.') : what;
  return { status: 400, error: `${field}: ${issue.message}`, field };
}

/** The viewer's routes (exported for tests that call them without a socket). */
export function viewerApp(opts: ViewerOptions, allowedHosts: () => string[]): Hono<ViewerEnv> {
  validateViewerOptions(opts);
  const { sessions } = opts;
  const page = loadPage();
  const app = new Hono<ViewerEnv>();

  app.use('*', authenticate(opts, allowedHosts));
  app.use('/api/sessions/*', scopeGuard(sessions));

  // Every route: a body's Content-Length over the cap is refused unread; a chunked body is cut once it passes it.
  const maxBodyBytes = opts.maxBodyBytes ?? DEFAULT_VIEWER_MAX_BODY_BYTES;
  app.use(
    '*',
    bodyLimit({
      maxSize: maxBodyBytes,
      onError: (c) => c.json({ error: bodyTooLargeMessage(maxBodyBytes), field: 'body' }, 413),
    }),
  );

  app.get('/', (c) => c.html(page.html, 200, { 'Content-Security-Policy': page.csp }));
  for (const name of Object.keys(PAGE_FILES)) app.get(`/${name}`, (c) => servePageFile(c, page.files, name));
  // The page names an empty icon; a browser that asks for one anyway gets no content rather than a 404.
  app.get('/favicon.ico', (c) => c.body(null, 204));
  app.get('/vendor/:file', (c) => servePageFile(c, page.vendor, c.req.param('file')));

  app.get('/api/me', (c) => {
    const scope = c.get('scope');
    return c.json({ role: c.get('role'), ...(scope ? { name: scope.name, tenant: scope.tenant } : {}) });
  });

  app.get('/api/sessions', async (c) => {
    const q = ListQuerySchema.safeParse(c.req.query());
    if (!q.success) {
      const { status, ...body } = zodFailure(q.error, 'query');
      return c.json(body, status);
    }
    const filters: SessionListFilters = { limit: q.data.limit ?? 50 };
    if (q.data.status) filters.status = q.data.status;
    if (q.data.label) filters.label = q.data.label;
    if (q.data.pageToken) filters.pageToken = q.data.pageToken;
    try {
      return c.json(await sessions.list(scopedFilters(c.get('scope'), filters)));
    } catch (err) {
      const { status, ...body } = failure(err);
      return c.json(body, status);
    }
  });

  app.get('/api/sessions/:id', async (c) => {
    const id = c.req.param('id');
    try {
      return c.json({ id, state: await sessions.state(id) });
    } catch (err) {
      const { status, ...body } = failure(err);
      return c.json(body, status);
    }
  });

  // The log so far, then every new event and the running step's text as it is written (SessionClient.stream), as
  // Server-Sent Events: `item` (an event, inbox notification or delta; events carry their seq as the SSE id, so a
  // reconnecting browser resumes after the last one), `end` (disposed), `failure` (the session cannot be read).
  app.get('/api/sessions/:id/live', (c) => {
    const id = c.req.param('id');
    const resume = Number(c.req.header('last-event-id') ?? c.req.query('after') ?? -1);
    const afterSeq = Number.isInteger(resume) && resume >= -1 ? resume : -1;
    return streamSSE(c, async (stream) => {
      const abort = new AbortController();
      stream.onAbort(() => abort.abort());
      const keepalive = setInterval(() => void stream.write(': keepalive\n\n'), KEEPALIVE_MS);
      try {
        await sessions.state(id);
        for await (const item of sessions.stream(id, { afterSeq, signal: abort.signal })) {
          await stream.writeSSE({
            event: 'item',
            data: JSON.stringify(pageItem(item)),
            ...(item.kind === 'event' ? { id: String(item.event.seq) } : {}),
          });
        }
        if (!abort.signal.aborted) await stream.writeSSE({ event: 'end', data: '{}' });
      } catch (err) {
        if (!abort.signal.aborted)
          await stream.writeSSE({ event: 'failure', data: JSON.stringify(failure(err)) });
      } finally {
        clearInterval(keepalive);
      }
    });
  });

  app.post('/api/sessions/:id/messages', async (c) => {
    const body = SendBodySchema.safeParse(await c.req.json().catch(() => undefined));
    if (!body.success) {
      const { status, ...rest } = zodFailure(body.error, 'body');
      return c.json(rest, status);
    }
    const { lane, content, id: messageId } = body.data;
    try {
      const receipt = await sessions.deliver(c.req.param('id'), lane, {
        content,
        ...(messageId ? { id: messageId } : {}),
        ...(lane === 'inject' ? { source: VIEWER_SOURCE } : {}),
      });
      return c.json(receipt);
    } catch (err) {
      const { status, ...rest } = failure(err);
      return c.json(rest, status);
    }
  });

  app.post('/api/sessions/:id/approve', async (c) => {
    const body = ApproveInputSchema.safeParse(await c.req.json().catch(() => undefined));
    if (!body.success) {
      const { status, ...rest } = zodFailure(body.error, 'body');
      return c.json(rest, status);
    }
    try {
      const { callId, decision, reason } = body.data;
      return c.json(await sessions.approve(c.req.param('id'), callId, decision, reason));
    } catch (err) {
      const { status, ...rest } = failure(err);
      return c.json(rest, status);
    }
  });

  app.post('/api/sessions/:id/cancel', async (c) => {
    const body = CancelInputSchema.safeParse((await c.req.json().catch(() => undefined)) ?? {});
    if (!body.success) {
      const { status, ...rest } = zodFailure(body.error, 'body');
      return c.json(rest, status);
    }
    try {
      await sessions.cancel(c.req.param('id'), body.data);
      return c.json({ cancelled: true });
    } catch (err) {
      const { status, ...rest } = failure(err);
      return c.json(rest, status);
    }
  });

  app.notFound((c) => c.json({ error: `no route ${c.req.method} ${c.req.path}` }, 404));
  return app;
}

interface PageFile {
  body: string;
  type: string;
}

interface Page {
  html: string;
  csp: string;
  files: Record<string, PageFile>;
  vendor: Record<string, PageFile>;
}

/** Reads the page and its modules once. Throws naming a missing file (a build without src/viewer/page). */
function loadPage(): Page {
  const read = (file: string): PageFile => ({
    body: readFileSync(file, 'utf8'),
    type: TYPES[path.extname(file)] ?? 'application/octet-stream',
  });
  const html = readFileSync(path.join(PAGE_DIR, 'index.html'), 'utf8');
  // The import map is the page's only inline script: the Content-Security-Policy allows exactly it.
  const importMap = /<script type="importmap">([\s\S]*?)<\/script>/.exec(html)?.[1];
  if (importMap === undefined) throw new Error(`${PAGE_DIR}/index.html has no import map`);
  const hash = createHash('sha256').update(importMap).digest('base64');
  return {
    html,
    csp: [
      "default-src 'self'",
      `script-src 'self' 'sha256-${hash}'`,
      "style-src 'self'",
      "img-src 'self' data:",
      "connect-src 'self'",
      "frame-ancestors 'none'",
    ].join('; '),
    files: Object.fromEntries(Object.entries(PAGE_FILES).map(([name, file]) => [name, read(file)])),
    vendor: Object.fromEntries(Object.entries(VENDOR).map(([name, file]) => [name, read(file)])),
  };
}

function servePageFile(c: Context, files: Record<string, PageFile>, name: string): Response {
  const file = Object.hasOwn(files, name) ? files[name] : undefined;
  if (!file) return c.text('not found', 404);
  return c.body(file.body, 200, { 'Content-Type': file.type, 'Cache-Control': 'no-cache' });
}

/** Starts the viewer; resolves once it listens. */
export async function startViewer(opts: ViewerOptions): Promise<RunningViewer> {
  validateViewerOptions(opts);
  const host = opts.host ?? '127.0.0.1';
  let port = opts.port ?? DEFAULT_VIEWER_PORT;
  const hosts = () => servedHosts(host, port);
  const app = viewerApp(opts, hosts);
  const server: ServerType = await new Promise((resolve, reject) => {
    const s = serve({ fetch: app.fetch, hostname: host, port }, () => resolve(s));
    s.once('error', reject);
  });
  port = (server.address() as AddressInfo).port;
  return {
    url: `http://${host}:${port}/`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Live streams stay open until their browser goes: end them.
        (server as { closeAllConnections?: () => void }).closeAllConnections?.();
      }),
  };
}
