/**
 * The sessions MCP server over streamable HTTP (the SDK's StreamableHTTPServerTransport, stateless: a fresh server
 * and transport per POST), on a loopback address only, behind a bearer token. Against DNS rebinding, requests whose
 * Host is not the loopback name and port we listen on, or whose Origin (when sent) is not that same origin, are
 * refused (403) before the token is looked at; a missing or wrong token answers 401. A body over MCP_MAX_BODY_BYTES
 * answers 413 before it is read (the SDK's transport checks Content-Length first and stops reading a chunked body at
 * the cap). Does I/O (an HTTP listener).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { SessionClient } from '../client';
import { isServedOrigin, servedHosts } from '../http/hosts';
import { createSessionsMcpServer, type SessionsMcpServerOptions } from './server';
import type { ScopedTokens } from '../access/scope';

/** The path the MCP endpoint answers on. */
export const MCP_HTTP_PATH = '/mcp';
/** Largest request body in bytes (4 MiB, the SDK's own default, stated here so the docs have one place to quote). */
export const MCP_MAX_BODY_BYTES = 4 * 1024 * 1024;

export interface SessionsMcpHttpOptions extends SessionsMcpServerOptions {
  /** The bearer token every request must carry (`Authorization: Bearer <token>`); at least 16 characters. */
  token: string;
  /** Port on 127.0.0.1 (0: any free port). */
  port: number;
  /** Scoped tokens (`agent-sessions token issue`), accepted besides `token`, each limited to its scope. */
  scopedTokens?: ScopedTokens;
  /** Loopback address to listen on: 127.0.0.1 (default) or ::1. */
  host?: '127.0.0.1' | '::1';
}

export interface SessionsMcpHttpServer {
  /** The endpoint, e.g. `http://127.0.0.1:8765/mcp`. */
  url: string;
  port: number;
  close(): Promise<void>;
}

/** A random token for a server started without one (32 bytes, base64url). */
export function randomToken(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * Serves `createSessionsMcpServer(sessions)` over streamable HTTP until `close()`. Throws when the token is too short
 * or the port cannot be bound.
 */
export async function serveSessionsMcpHttp(
  sessions: SessionClient,
  opts: SessionsMcpHttpOptions,
): Promise<SessionsMcpHttpServer> {
  if (opts.token.length < 16) throw new Error('the MCP token must be at least 16 characters');
  const host = opts.host ?? '127.0.0.1';
  const expected = digest(`Bearer ${opts.token}`);
  let port = opts.port;
  const server = http.createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent)
        reply(res, 500, `internal error: ${err instanceof Error ? err.message : String(err)}`);
      else res.end();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const hostHeader = req.headers.host ?? '';
    const hosts = servedHosts(host, port);
    if (!hosts.includes(hostHeader))
      return reply(res, 403, `forbidden: Host "${hostHeader}" is not this server`);
    const origin = req.headers.origin;
    if (origin !== undefined && !isServedOrigin(origin, hosts))
      return reply(res, 403, `forbidden: Origin "${origin}" is not allowed`);
    const url = new URL(req.url ?? '/', `http://${hostHeader}`);
    if (url.pathname !== MCP_HTTP_PATH)
      return reply(res, 404, `not found: the MCP endpoint is ${MCP_HTTP_PATH}`);
    const auth = req.headers.authorization ?? '';
    const full = timingSafeEqual(digest(auth), expected);
    const bearer = /^Bearer (.+)$/.exec(auth)?.[1];
    const scope = full || bearer === undefined ? undefined : opts.scopedTokens?.lookup(bearer);
    if (!full && !scope) {
      res.setHeader('WWW-Authenticate', 'Bearer realm="agent-sessions"');
      return reply(res, 401, 'unauthorized: send Authorization: Bearer <token>');
    }
    if (req.method !== 'POST') {
      // Stateless: no server-initiated stream (GET) and no session to delete (DELETE).
      res.setHeader('Allow', 'POST');
      return reply(res, 405, 'method not allowed: POST JSON-RPC messages');
    }
    const mcp = createSessionsMcpServer(sessions, { ...opts, ...(scope ? { scope } : {}) });
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      maxRequestBodySize: MCP_MAX_BODY_BYTES,
    });
    res.on('close', () => {
      void transport.close();
      void mcp.close();
    });
    await mcp.connect(transport);
    await transport.handleRequest(req, res);
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  port = (server.address() as AddressInfo).port;
  const shown = host === '::1' ? '[::1]' : host;
  return {
    url: `http://${shown}:${port}${MCP_HTTP_PATH}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A fixed-length digest, so the comparison takes the same time whatever the header's length. */
function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

function reply(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}
