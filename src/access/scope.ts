/**
 * What a scoped token may reach (docs/security.md): the sessions of one tenant, optionally only those whose id starts
 * with a prefix, optionally read-only. The viewer and MCP-over-HTTP check every session id against the scope before
 * they touch the session, and answer a session outside it exactly as one that does not exist (SessionNotFoundError),
 * so a scoped caller learns nothing of other tenants' ids; a list is filtered by the visibility query itself. Does
 * I/O through the SessionClient (describe, and the `config` query for a session started without search attributes).
 */
import {
  InvalidInputError,
  SessionNotFoundError,
  type SessionClient,
  type SessionListFilters,
} from '../client';
import type { SessionConfig } from '../domain/wire';

export interface SessionScope {
  /** The token's name (who acts, for messages and logs). */
  name: string;
  /** The only tenant whose sessions the token sees (`SessionConfig.tenant`). */
  tenant: string;
  /** When set, only sessions whose id starts with this. */
  prefix?: string;
  /** Watch only: no send, approve, cancel, dispose, start or fork. */
  readOnly: boolean;
}

/** Scoped tokens, looked up by secret on every request (a TokenStore re-reads its file when it changes). */
export interface ScopedTokens {
  lookup(secret: string): SessionScope | undefined;
}

/** The message a read-only scoped token gets for a write. */
export const READ_ONLY_MESSAGE =
  'this token can only watch: it cannot send, approve, cancel, dispose or start';

/** A write refused to a read-only token. */
export class ReadOnlyTokenError extends Error {
  override readonly name = 'ReadOnlyTokenError';
  constructor() {
    super(READ_ONLY_MESSAGE);
  }
}

/** The list filters with the scope's tenant and prefix imposed (a caller's own tenant filter cannot widen it). */
export function scopedFilters<F extends SessionListFilters>(scope: SessionScope | undefined, filters: F): F {
  if (!scope) return filters;
  return { ...filters, tenant: scope.tenant, ...(scope.prefix ? { idPrefix: scope.prefix } : {}) };
}

/**
 * Whether session `id` is inside the scope. The tenant comes from the session's `AgentSessionTenant` search attribute;
 * a session started without the session search attributes (a sub-session, a namespace without them) is asked its
 * config. A session that does not exist or cannot be read is outside.
 */
export async function inScope(sessions: SessionClient, scope: SessionScope, id: string): Promise<boolean> {
  if (scope.prefix !== undefined && !id.startsWith(scope.prefix)) return false;
  try {
    const row = await sessions.row(id);
    // `turn` is set at start with the other attributes: when it is there, the tenant attribute is authoritative.
    if (row.turn !== undefined) return row.tenant === scope.tenant;
    return (await sessions.config(id)).tenant === scope.tenant;
  } catch {
    return false;
  }
}

/** Throws SessionNotFoundError (as for an unknown id) when `id` is outside the scope; no scope: everything is in. */
export async function assertInScope(
  sessions: SessionClient,
  scope: SessionScope | undefined,
  id: string,
): Promise<void> {
  if (scope && !(await inScope(sessions, scope, id))) throw new SessionNotFoundError(id);
}

/**
 * The config a scoped token starts a session with: its tenant imposed. Throws InvalidInputError naming `tenant` for
 * another tenant, `sessionId` for an id outside the prefix, and ReadOnlyTokenError for a read-only token.
 */
export function scopedStart(
  scope: SessionScope | undefined,
  sessionId: string,
  config: SessionConfig,
): SessionConfig {
  if (!scope) return config;
  if (scope.readOnly) throw new ReadOnlyTokenError();
  if (config.tenant !== undefined && config.tenant !== scope.tenant)
    throw new InvalidInputError(
      'tenant',
      `invalid config: tenant: this token starts sessions of tenant ${scope.tenant} only`,
    );
  if (scope.prefix !== undefined && !sessionId.startsWith(scope.prefix))
    throw new InvalidInputError(
      'sessionId',
      `invalid session id: this token starts sessions whose id starts with "${scope.prefix}" only`,
    );
  return { ...config, tenant: scope.tenant };
}
