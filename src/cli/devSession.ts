/**
 * The session of `agent-sessions dev`: which task queue its worker polls, and starting or resuming the session. The
 * dev chat has a queue of its own (`agent-sessions-dev`, or TASK_QUEUE when set), so a user's worker with other
 * tools on the default queue never takes the demo's tasks, nor the demo's worker theirs. A session that runs keeps
 * the queue it was started on (one started by an older `dev` on `agent-sessions`): the worker polls that queue.
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { SessionClient } from '../client';
import type { ModelSpec, SessionConfig } from '../domain/wire';

/** The task queue of the dev chat's worker and sessions when TASK_QUEUE is not set. */
export const DEV_TASK_QUEUE = 'agent-sessions-dev';

/** What runs under the session id now: its task queue when it runs, else how the last run ended. */
export type FoundSession = { running: true; taskQueue: string } | { running: false; previous?: string };

/** Looks the session up by workflow id. Throws what the server throws, except not-found. */
export async function findSession(client: Client, sessionId: string): Promise<FoundSession> {
  try {
    const description = await client.workflow.getHandle(sessionId).describe();
    if (description.status.name === 'RUNNING') return { running: true, taskQueue: description.taskQueue };
    const previous =
      description.status.name === 'COMPLETED' ? 'disposed' : description.status.name.toLowerCase();
    return { running: false, previous };
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return { running: false };
    throw err;
  }
}

/** The queue of the dev worker: a running session's own, else TASK_QUEUE when set, else DEV_TASK_QUEUE. */
export function devTaskQueue(found: FoundSession, env: NodeJS.ProcessEnv): string {
  if (found.running) return found.taskQueue;
  return env.TASK_QUEUE?.trim() || DEV_TASK_QUEUE;
}

/**
 * Resumes the running session (its model read from its own config: a resumed session keeps the model it was started
 * with, whatever the demo would pick now) or starts it with `config`. A disposed (or otherwise ended) id starts
 * afresh.
 */
export async function ensureSession(
  sessions: SessionClient,
  sessionId: string,
  found: FoundSession,
  config: SessionConfig,
): Promise<{ note: string; model: ModelSpec | undefined }> {
  if (found.running) {
    const [state, own] = await Promise.all([sessions.state(sessionId), sessions.config(sessionId)]);
    return {
      note: `resumed: ${state.turn} turn${state.turn === 1 ? '' : 's'} so far, ${state.status}`,
      model: own.model,
    };
  }
  await sessions.start(sessionId, config);
  return {
    note: found.previous ? `new; the previous session ${sessionId} was ${found.previous}` : 'new',
    model: config.model,
  };
}
