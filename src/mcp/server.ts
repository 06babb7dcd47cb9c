/**
 * Sessions as an MCP server: `createSessionsMcpServer(sessions)` returns an McpServer (the official SDK's) whose
 * tools start sessions, deliver `followup` / `steer` / `inject` messages with ids, read `state`, `events` and the
 * `transcript`, wait for the end of a turn, `cancel` and `dispose` — so any MCP client can run durable sessions.
 * Tool inputs are the wire schemas the SessionClient validates with (src/domain), so `tools/list` shows their limits
 * and a bad argument is refused naming the field; every failure is a tool result with `isError: true` whose text
 * names what went wrong (the client's InvalidInputError names the field). Transport-agnostic: the caller connects
 * it (stdio, streamable HTTP: ./http.ts). Does I/O through the SessionClient only.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { z } from 'zod';
import { InvalidInputError, type SessionClient } from '../client';
import { MessageInputSchema } from '../domain/messages';
import {
  CancelInputSchema,
  EventsQuerySchema,
  LaneMessageInputSchema,
  SessionConfigSchema,
  SessionIdSchema as WireSessionIdSchema,
  type Lane,
  type SessionConfig,
} from '../domain/wire';
import { waitForTurn } from './turnWait';
import { assertInScope, ReadOnlyTokenError, scopedStart, type SessionScope } from '../access/scope';

/** Longest `wait_for_turn` may wait in one call (MCP clients time requests out; call it again to wait longer). */
export const MAX_TURN_WAIT_MS = 600_000;
/** `wait_for_turn`'s wait when the call names none: below the 60 s request timeout of common MCP clients. */
export const DEFAULT_TURN_WAIT_MS = 30_000;
/** Events per `events` page when the call names no limit (pages are read into a model's context). */
export const DEFAULT_MCP_EVENTS_LIMIT = 100;

/** A Temporal workflow id as sessions use it: printable ASCII without spaces, 1–255 characters. */
const SessionIdSchema = WireSessionIdSchema.describe('the session id (its Temporal workflow id)');

/** Tool inputs are strict, like the wire: an unknown argument is refused, not ignored. */
const sessionOnly = z.strictObject({ sessionId: SessionIdSchema });

const LANE_TEXT: Record<Lane, string> = {
  followup:
    'Queue a prompt that gets its own turn (it wakes an idle session). Returns the receipt {messageId, lane, duplicate, seq}; pass `seq` to wait_for_turn as afterSeq to wait for the answer.',
  steer:
    'Deliver a message at the next step boundary of the running turn (or start a turn when idle). Returns the receipt {messageId, lane, duplicate, seq}.',
  inject:
    'Add context for the next step without waking the session; `message.source` is required (e.g. {"kind":"plugin","plugin":"notes"}). Returns the receipt {messageId, lane, duplicate, seq}.',
};

export interface SessionsMcpServerOptions {
  /** The server name MCP clients see (default `agent-sessions`). */
  name?: string;
  /** How often `wait_for_turn` repeats its queries (default 250 ms). */
  pollMs?: number;
  /**
   * A scoped token's reach (src/access/scope.ts): a session outside it is SessionNotFoundError, as an unknown one;
   * `start_session` starts sessions of its tenant only; a read-only scope cannot start, send, cancel or dispose.
   */
  scope?: SessionScope;
}

/**
 * An McpServer whose tools drive the sessions of `sessions`. Connect it to one transport
 * (`await server.connect(new StdioServerTransport())`); for several clients create one server each.
 */
export function createSessionsMcpServer(
  sessions: SessionClient,
  opts: SessionsMcpServerOptions = {},
): McpServer {
  const { scope } = opts;
  /** The session is in the scope (else SessionNotFoundError); with `write`, the scope may write. */
  const reach = async (sessionId: string, write = false): Promise<void> => {
    if (write && scope?.readOnly) throw new ReadOnlyTokenError();
    await assertInScope(sessions, scope, sessionId);
  };
  /** Runs a tool on one session, once it is in reach. */
  const on = (sessionId: string, fn: () => Promise<object>, write = false) =>
    run(async () => {
      await reach(sessionId, write);
      return fn();
    });
  const server = new McpServer(
    { name: opts.name ?? 'agent-sessions', version: packageVersion() },
    {
      instructions:
        'Durable AI-agent sessions on Temporal. start_session, then followup (a prompt with its own turn), steer (into the running turn) or inject (context, no wake); wait_for_turn with the receipt seq as afterSeq returns the turn end and answer; state, events and transcript read the session; cancel aborts the running turn; dispose ends the session for good.',
    },
  );

  server.registerTool(
    'start_session',
    {
      title: 'Start a session',
      description:
        'Start a new durable session (no message yet). `config` is a SessionConfig: model ({provider:"scripted", steps} offline, {provider:"openai"|"anthropic"|"openai-compatible", model}, {provider:"local"}), system, tools and hooks the worker registers, labels, approvals, limits. Fails if a session with this id exists.',
      inputSchema: z.strictObject({ ...sessionOnly.shape, config: SessionConfigSchema.optional() }),
    },
    ({ sessionId, config }) =>
      run(async () => {
        try {
          await sessions.start(sessionId, scopedStart(scope, sessionId, (config ?? {}) as SessionConfig));
        } catch (err) {
          if (err instanceof WorkflowExecutionAlreadyStartedError)
            throw new Error(`session ${sessionId} already exists: send it messages, or dispose it first`);
          throw err;
        }
        return { sessionId, started: true };
      }),
  );

  for (const lane of ['followup', 'steer', 'inject'] as const) {
    server.registerTool(
      lane,
      {
        title: `Send a ${lane}`,
        description: `${LANE_TEXT[lane]} Give message.id (1–128 printable characters) to make a retry idempotent: a repeated id is reported duplicate, not delivered twice.${lane === 'inject' ? '' : ' message.refs [{session, throughSeq?}] (at most 4) quotes other sessions: the worker snapshots each one and it enters right before the message; a refused reference ends the turn blocked with the reason.'}`,
        inputSchema: z.strictObject({
          ...sessionOnly.shape,
          message: lane === 'inject' ? MessageInputSchema : LaneMessageInputSchema,
        }),
        annotations: { idempotentHint: true, destructiveHint: false },
      },
      ({ sessionId, message }) =>
        run(async () => {
          await reach(sessionId, true);
          // A reference reads another session: it must be in the scope too.
          for (const ref of (message as { refs?: { session: string }[] }).refs ?? [])
            await reach(ref.session);
          return sessions.deliver(sessionId, lane, message);
        }),
    );
  }

  server.registerTool(
    'state',
    {
      title: 'Session state',
      description:
        'The session now: status (idle, running, disposed), turn, step, pending message ids (nextTurn, nextStep), refused signals, token usage, tool calls awaiting approval.',
      inputSchema: sessionOnly,
      annotations: { readOnlyHint: true },
    },
    ({ sessionId }) => on(sessionId, () => sessions.state(sessionId)),
  );

  server.registerTool(
    'events',
    {
      title: 'Session events',
      description: `One page of the session's event log: events with seq > afterSeq (default -1, from the start), at most limit (default ${DEFAULT_MCP_EVENTS_LIMIT}). Returns {events, lastSeq, nextAfterSeq, more}: call again with afterSeq = nextAfterSeq while more is true. Follows the log across continue-as-new runs.`,
      inputSchema: z.strictObject({ ...sessionOnly.shape, ...EventsQuerySchema.shape }),
      annotations: { readOnlyHint: true },
    },
    ({ sessionId, afterSeq, limit }) =>
      on(sessionId, () => eventsPage(sessions, sessionId, afterSeq ?? -1, limit ?? DEFAULT_MCP_EVENTS_LIMIT)),
  );

  server.registerTool(
    'transcript',
    {
      title: 'Session transcript',
      description:
        'The model-visible messages of the session (system prompt, user, assistant and tool messages).',
      inputSchema: sessionOnly,
      annotations: { readOnlyHint: true },
    },
    ({ sessionId }) => on(sessionId, () => sessions.transcript(sessionId)),
  );

  server.registerTool(
    'wait_for_turn',
    {
      title: 'Wait for the end of a turn',
      description: `Wait until a turn of the session ends: the first turn/end after afterSeq (pass the seq of a followup or steer receipt), or without afterSeq the turn running now (or the one a queued followup starts). Returns {status:"ended", turn, reason, seq, answer?} (answer: the turn's last assistant text), {status:"idle"} at once when no turn runs or is queued, {status:"disposed"}, or {status:"timeout"} after timeoutMs (default ${DEFAULT_TURN_WAIT_MS}, at most ${MAX_TURN_WAIT_MS}; call again to keep waiting).`,
      inputSchema: z.strictObject({
        ...sessionOnly.shape,
        afterSeq: z.number().int().min(-1).optional().describe('wait for a turn that ends after this seq'),
        timeoutMs: z
          .number()
          .int()
          .min(1)
          .max(MAX_TURN_WAIT_MS)
          .optional()
          .describe(`how long to wait at most (ms; default ${DEFAULT_TURN_WAIT_MS})`),
      }),
      annotations: { readOnlyHint: true },
    },
    ({ sessionId, afterSeq, timeoutMs }, extra) =>
      on(sessionId, () => {
        const progressToken = extra._meta?.progressToken;
        return waitForTurn(sessions, sessionId, {
          ...(afterSeq !== undefined ? { afterSeq } : {}),
          timeoutMs: timeoutMs ?? DEFAULT_TURN_WAIT_MS,
          ...(opts.pollMs !== undefined ? { pollMs: opts.pollMs } : {}),
          signal: extra.signal,
          // Progress keeps the request alive in clients that reset their timeout on it.
          ...(progressToken !== undefined
            ? {
                onProgress: (waitedMs: number) =>
                  extra.sendNotification({
                    method: 'notifications/progress',
                    params: { progressToken, progress: waitedMs, message: 'waiting for the turn to end' },
                  }),
              }
            : {}),
        });
      }),
  );

  server.registerTool(
    'cancel',
    {
      title: 'Cancel the running turn',
      description:
        'Abort the running turn; pending messages are discarded unless keepInbox is true (then they run after the next waking message). The session stays open.',
      inputSchema: z.strictObject({ ...sessionOnly.shape, ...CancelInputSchema.shape }),
      annotations: { destructiveHint: true },
    },
    ({ sessionId, cause, keepInbox }) =>
      on(
        sessionId,
        async () => {
          await sessions.cancel(sessionId, {
            cause: cause ?? { kind: 'user' },
            ...(keepInbox !== undefined ? { keepInbox } : {}),
          });
          return { sessionId, cancelled: true, keepInbox: keepInbox ?? false };
        },
        true,
      ),
  );

  server.registerTool(
    'dispose',
    {
      title: 'Dispose of the session',
      description:
        'End the session for good: abort its turn, log session/disposed and complete its workflow. It accepts no more messages; state, events and transcript stay readable.',
      inputSchema: sessionOnly,
      annotations: { destructiveHint: true },
    },
    ({ sessionId }) =>
      on(
        sessionId,
        async () => {
          await sessions.dispose(sessionId);
          return { sessionId, disposed: true };
        },
        true,
      ),
  );

  return server;
}

/**
 * One page of events after `afterSeq`, from the run of the continue-as-new chain that holds them; `lastSeq` is the
 * session's (its latest run's), so `more` says whether later events exist in any run.
 */
async function eventsPage(sessions: SessionClient, sessionId: string, afterSeq: number, limit: number) {
  let page = await sessions.events(sessionId, afterSeq, limit);
  const lastSeq = page.lastSeq;
  while (afterSeq + 1 < page.firstSeq && page.previousRunId)
    page = await sessions.events(sessionId, afterSeq, limit, page.previousRunId);
  const events = page.events.filter((e) => e.seq > afterSeq).slice(0, limit);
  const nextAfterSeq = events.at(-1)?.seq ?? afterSeq;
  return { events, lastSeq, nextAfterSeq, more: nextAfterSeq < lastSeq };
}

/** Runs a tool: its value as JSON text and structured content, or a tool error naming what went wrong. */
async function run(fn: () => Promise<object>): Promise<CallToolResult> {
  try {
    const value = await fn();
    return {
      content: [{ type: 'text', text: JSON.stringify(value) }],
      structuredContent: value as Record<string, unknown>,
    };
  } catch (err) {
    return toolError(err);
  }
}

/**
 * A failure as an MCP tool error: `isError`, the message as text (the client's errors say what to fix; an
 * InvalidInputError starts with the field), and `{error: {name, message, field?}}` as structured content.
 */
export function toolError(err: unknown): CallToolResult {
  const name = err instanceof Error ? err.name : 'Error';
  const message = err instanceof Error ? err.message : String(err);
  const field = err instanceof InvalidInputError ? err.field : undefined;
  return {
    isError: true,
    content: [{ type: 'text', text: `${name}: ${message}` }],
    structuredContent: { error: { name, message, ...(field !== undefined ? { field } : {}) } },
  };
}

let version: string | undefined;

/** The package's version (package.json two folders up, from src/mcp and dist/mcp alike). */
function packageVersion(): string {
  if (version === undefined) {
    try {
      const pkg = JSON.parse(readFileSync(path.join(__dirname, '../../package.json'), 'utf8')) as {
        version?: unknown;
      };
      version = typeof pkg.version === 'string' ? pkg.version : '0.0.0';
    } catch {
      version = '0.0.0';
    }
  }
  return version;
}
