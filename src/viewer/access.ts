/**
 * Who may use the viewer and what they reach (docs/security.md): the access token (everything), the read-only token
 * (watch) and scoped tokens (`agent-sessions token issue`: one tenant, optionally an id prefix, optionally read-only).
 * A browser presents a token once, in the page's URL; the server keeps it in an HttpOnly, SameSite=Strict cookie and
 * redirects to the address without it. Scripts may send `Authorization: Bearer <token>`. Requests whose Host is not
 * the viewer's address are refused (DNS rebinding), and so are writes from another Origin. A scoped token's request
 * for a session outside its scope is answered exactly as one for a session that does not exist (404).
 */
import { timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import { assertInScope, type ScopedTokens, type SessionScope } from '../access/scope';
import type { SessionClient } from '../client';
import { isServedOrigin } from '../http/hosts';

export type ViewerRole = 'full' | 'read';

export type ViewerEnv = { Variables: { role: ViewerRole; scope: SessionScope | undefined } };

export interface ViewerTokens {
  token: string;
  readToken?: string;
  scopedTokens?: ScopedTokens;
}

const COOKIE = 'agent_sessions_ui';

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The role and scope of a presented token, or undefined when it is none of ours. */
function accessOf(
  opts: ViewerTokens,
  token: string | undefined,
): { role: ViewerRole; scope?: SessionScope } | undefined {
  if (!token) return undefined;
  if (sameSecret(token, opts.token)) return { role: 'full' };
  if (opts.readToken !== undefined && sameSecret(token, opts.readToken)) return { role: 'read' };
  const scope = opts.scopedTokens?.lookup(token);
  return scope ? { role: scope.readOnly ? 'read' : 'full', scope } : undefined;
}

export function deniedPage(why: string): string {
  const head = '<meta charset="utf-8"><link rel="icon" href="data:,"><title>agent-sessions viewer</title>';
  return `<!doctype html>${head}<p>${why}</p>`;
}

/** Host check, security headers, the token (query once → cookie; bearer; cookie), Origin and role for writes. */
export function authenticate(opts: ViewerTokens, allowedHosts: () => string[]): MiddlewareHandler<ViewerEnv> {
  return async (c, next) => {
    const host = c.req.header('host') ?? '';
    if (!allowedHosts().includes(host)) return c.text(`host ${host || '(none)'} is not this viewer`, 403);
    c.header('X-Content-Type-Options', 'nosniff');
    c.header('Referrer-Policy', 'no-referrer');
    c.header('X-Frame-Options', 'DENY');
    // The token arrives once in the page's URL: keep it as a cookie and take it out of the address bar.
    const fromQuery = c.req.query('token');
    if (fromQuery !== undefined && c.req.method === 'GET' && !c.req.path.startsWith('/api/')) {
      if (!accessOf(opts, fromQuery))
        return c.html(deniedPage('This token is not valid for this viewer.'), 401);
      setCookie(c, COOKIE, fromQuery, { httpOnly: true, sameSite: 'Strict', path: '/' });
      return c.redirect(c.req.path, 303);
    }
    const bearer = /^Bearer (.+)$/.exec(c.req.header('authorization') ?? '')?.[1];
    const access = accessOf(opts, bearer ?? getCookie(c, COOKIE));
    if (!access) {
      if (c.req.path.startsWith('/api/'))
        return c.json({ error: 'no valid token: open the URL `agent-sessions ui` printed' }, 401);
      return c.html(
        deniedPage('Open the address that `agent-sessions ui` printed (it carries a token).'),
        401,
      );
    }
    if (c.req.method !== 'GET') {
      const origin = c.req.header('origin');
      if (origin !== undefined && !isServedOrigin(origin, allowedHosts()))
        return c.json({ error: `origin ${origin} may not write here` }, 403);
      if (access.role !== 'full')
        return c.json({ error: 'this token can only watch: it cannot send, approve or cancel' }, 403);
    }
    c.set('role', access.role);
    c.set('scope', access.scope);
    await next();
  };
}

/** `/api/sessions/<id>[/…]`: a session outside a scoped token's scope is not found (404), like an unknown one. */
export function scopeGuard(sessions: SessionClient): MiddlewareHandler<ViewerEnv> {
  return async (c, next) => {
    const scope = c.get('scope');
    const raw = /^\/api\/sessions\/([^/]+)/.exec(c.req.path)?.[1];
    if (scope && raw !== undefined) {
      let id: string;
      try {
        id = decodeURIComponent(raw);
      } catch {
        id = raw;
      }
      try {
        await assertInScope(sessions, scope, id);
      } catch (err) {
        return c.json({ error: (err as Error).message }, 404);
      }
    }
    await next();
  };
}
