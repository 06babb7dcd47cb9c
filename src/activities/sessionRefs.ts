/**
 * The snapshot of a cross-session reference (docs/protocol.md "Cross-session references"), taken on the worker: the
 * worker's policy decides whether the reading session may read the referenced one, then the referenced session's
 * log is read through the worker's Temporal client (every run of it, as `fork` reads it; a disposed one too), its
 * model-visible transcript up to a turn boundary is framed as quoted, untrusted text, and the result — recorded in
 * the reading session's history as this activity's result — is what enters, so later changes to the referenced
 * session never change replay. Expected refusals (policy, unknown session, no such turn boundary, too large) are
 * returned as data with their reason; anything else throws and is retried.
 */
import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { configQuery, eventsQuery } from '../contract';
import { LIMITS } from '../domain/messages';
import { readEventsOfRun } from '../domain/pages';
import {
  DEFAULT_MAX_SESSION_REF_BYTES,
  renderSnapshot,
  sameTenantPolicy,
  throughProblem,
  transcriptThrough,
  type SessionRefPolicy,
} from '../domain/sessionRefs';

/** What the workflow asks: who reads (with its labels, from its config), and which session, through which seq. */
export interface SessionRefInput {
  reader: string;
  readerLabels: string[];
  session: string;
  throughSeq?: number;
}

/** The snapshot, framed as text, or why the reference is refused. */
export type SessionRefResult =
  | { kind: 'ok'; text: string; throughSeq: number; messages: number; bytes: number }
  | { kind: 'refused'; reason: string };

export interface SessionRefOptions {
  /** Who may read whom (default: sessions with the same `tenant=<name>` label). */
  policy?: SessionRefPolicy;
  /** Most UTF-8 bytes of one snapshot's text (default 64 KiB); a larger one is refused. */
  maxBytes?: number;
  /** The client that reads the referenced session (default: the activity's own). */
  client?: () => Client;
}

/** Builds the `snapshotSessionRef` activity. Throws at once on a `maxBytes` a message could not carry. */
export function sessionRefActivity(opts: SessionRefOptions = {}) {
  const policy = opts.policy ?? sameTenantPolicy;
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_SESSION_REF_BYTES;
  if (!Number.isInteger(maxBytes) || maxBytes < 1 || maxBytes > LIMITS.contentChars)
    throw new Error(`maxSessionRefBytes: an integer from 1 to ${LIMITS.contentChars}, got ${maxBytes}`);
  const client = opts.client ?? (() => Context.current().client);

  return async function snapshotSessionRef(input: SessionRefInput): Promise<SessionRefResult> {
    const workflows = client().workflow;
    const refused = (reason: string): SessionRefResult => ({ kind: 'refused', reason });
    let sourceLabels: string[];
    try {
      sourceLabels = (await workflows.getHandle(input.session).query(configQuery)).labels ?? [];
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return refused(`session ${input.session} not found`);
      throw err;
    }
    const allowed = await policy(
      { sessionId: input.reader, labels: input.readerLabels },
      { sessionId: input.session, labels: sourceLabels },
    );
    if (allowed !== true) return refused(`refused by the worker's policy: ${allowed}`);
    const events = await readEventsOfRun(
      (afterSeq, limit, runId) =>
        workflows.getHandle(input.session, runId).query(eventsQuery, { afterSeq, limit }),
      -1,
      undefined,
      Infinity,
    );
    const snapshot = transcriptThrough(events, input.throughSeq);
    if (snapshot.kind !== 'ok') return refused(`throughSeq: ${throughProblem(input.session, snapshot)}`);
    const text = renderSnapshot(input.session, snapshot.throughSeq, snapshot.messages);
    const bytes = Buffer.byteLength(text, 'utf8');
    if (bytes > maxBytes || text.length > LIMITS.contentChars)
      return refused(
        `the snapshot through seq ${snapshot.throughSeq} is ${bytes} bytes, over the limit of ${maxBytes}; reference an earlier turn (throughSeq)`,
      );
    return { kind: 'ok', text, throughSeq: snapshot.throughSeq, messages: snapshot.messages.length, bytes };
  };
}
