/**
 * Forking a session (`SessionClient.fork`, `agent-sessions fork`): a new session started with the source's config
 * (overridable) and the source's model-visible transcript up to a turn boundary, recorded in the new session's
 * history as a snapshot (`session/forked`), so later changes to the source never change it. Does I/O only through
 * the session reads and the start it is given.
 */
import { z } from 'zod';
import type { SessionEvent } from '../domain/events';
import { throughProblem, transcriptThrough, type TranscriptThrough } from '../domain/sessionRefs';
import { SessionConfigSchema, SessionIdSchema, type SessionConfig } from '../domain/wire';
import { InvalidInputError } from './errors';
import { validInput } from './inputs';

/** What `fork` takes: the new session's id, the source's turn boundary, and config it changes. */
export const ForkOptionsSchema = z.strictObject({
  newId: SessionIdSchema,
  /** Seq of a `turn/end` of the source (default: its last). */
  throughSeq: z.number().int().min(0).optional(),
  model: SessionConfigSchema.shape.model,
  tools: SessionConfigSchema.shape.tools,
  system: SessionConfigSchema.shape.system,
  labels: SessionConfigSchema.shape.labels,
});
export type ForkOptions = z.input<typeof ForkOptionsSchema>;

/** What `fork` did. */
export interface ForkReceipt {
  sessionId: string;
  from: string;
  throughSeq: number;
  /** Model-visible messages the fork starts with. */
  messages: number;
}

/**
 * The turn boundary of the source's log a fork starts at (`throughSeq`, default its last ended turn) and the
 * model-visible messages up to it. Throws InvalidInputError on `fork.throughSeq` when the source has no ended turn,
 * or `throughSeq` is not the end of a turn (naming the nearest ones).
 */
function forkPoint(
  sourceId: string,
  events: SessionEvent[],
  throughSeq: number | undefined,
): Extract<TranscriptThrough, { kind: 'ok' }> {
  const snapshot = transcriptThrough(events, throughSeq);
  if (snapshot.kind === 'no-ended-turn')
    throw new InvalidInputError(
      'fork.throughSeq',
      `invalid fork: session ${sourceId} has no ended turn to fork at`,
    );
  if (snapshot.kind === 'not-a-boundary')
    throw new InvalidInputError(
      'fork.throughSeq',
      `invalid fork: fork.throughSeq: ${throughProblem(sourceId, snapshot)}`,
    );
  return snapshot;
}

/** What a fork reads of the source and how it starts the new session (SessionClient's own verbs). */
export interface ForkVerbs {
  allEvents(sessionId: string): Promise<SessionEvent[]>;
  config(sessionId: string): Promise<SessionConfig>;
  start(sessionId: string, config: SessionConfig): Promise<void>;
}

/** Forks `sourceId` (see `SessionClient.fork`). Throws InvalidInputError naming the field, and what `sessions` throw. */
export async function forkSession(
  sessions: ForkVerbs,
  sourceId: string,
  options: ForkOptions,
): Promise<ForkReceipt> {
  const { newId, throughSeq, ...overrides } = validInput(ForkOptionsSchema, options, 'fork');
  const events = await sessions.allEvents(sourceId);
  const { throughSeq: through, messages } = forkPoint(sourceId, events, throughSeq);
  const { fork: _sourceFork, ...sourceConfig } = await sessions.config(sourceId);
  await sessions.start(newId, {
    ...sourceConfig,
    ...overrides,
    fork: { from: sourceId, throughSeq: through, messages },
  });
  return { sessionId: newId, from: sourceId, throughSeq: through, messages: messages.length };
}
