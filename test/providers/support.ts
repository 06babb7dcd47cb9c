/**
 * Test support for providers and hooks: a time-skipping Temporal server with one worker built by
 * `createSessionWorker` from the given options (providers, hooks, tools, default model) on a fresh task queue,
 * plus helpers that wait on the log (never on sleeps).
 */
import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { inject } from 'vitest';
import { ScriptedRecorder } from '../../src/activities/model';
import { SessionClient } from '../../src/client';
import { createDevServerEnv, createTimeSkippingEnv } from '../../src/devserver';
import type { SessionEvent } from '../../src/domain/events';
import { testingTools } from '../../src/activities/testingTools';
import { createSessionWorker, type SessionWorkerOptions } from '../../src/worker';
import { waitUntil } from '../support/sessionEnv';

export interface WorkerEnv {
  env: TestWorkflowEnvironment;
  client: SessionClient;
  recorder: ScriptedRecorder;
  taskQueue: string;
  /** Starts another worker (other options, or the same on a queue prepared earlier); stopped by teardown. */
  addWorker(opts: Omit<SessionWorkerOptions, 'connection'>, taskQueue?: string): Promise<SessionClient>;
  /**
   * A client on a task queue no worker polls yet: whatever is started and signalled before `startWorker()` reaches
   * the workflow in its first workflow task, in arrival order.
   */
  withoutWorkerYet(opts?: Omit<SessionWorkerOptions, 'connection'>): {
    client: SessionClient;
    startWorker(): Promise<void>;
  };
  teardown(): Promise<void>;
}

type Options = Omit<SessionWorkerOptions, 'connection'>;

/**
 * `server: 'dev'` runs a dev server instead of the time-skipping one: the real server's limits (the 2 MiB payload
 * limit, which the time-skipping server does not enforce).
 */
export async function startWorkerEnv(
  opts: Options = {},
  server: 'time-skipping' | 'dev' = 'time-skipping',
): Promise<WorkerEnv> {
  const env = server === 'dev' ? await createDevServerEnv() : await createTimeSkippingEnv();
  const recorder = new ScriptedRecorder();
  const stops: (() => Promise<void>)[] = [];
  const addWorker = async (o: Options, taskQueue = `test-${randomUUID()}`) => {
    const worker = await createSessionWorker({
      tools: testingTools,
      scriptedRecorder: recorder,
      workflowBundle: { codePath: inject('workflowBundlePath') },
      ...o,
      connection: env.nativeConnection,
      taskQueue,
    });
    const running = worker.run();
    stops.push(async () => {
      worker.shutdown();
      await running;
    });
    return new SessionClient({ client: env.client, taskQueue });
  };
  const client = await addWorker(opts);
  return {
    env,
    client,
    recorder,
    taskQueue: client.taskQueue,
    addWorker: (o, taskQueue) => addWorker(o, taskQueue),
    withoutWorkerYet(o = opts) {
      const taskQueue = `late-${randomUUID()}`;
      return {
        client: new SessionClient({ client: env.client, taskQueue }),
        startWorker: async () => void (await addWorker(o, taskQueue)),
      };
    },
    async teardown() {
      for (const stop of stops) await stop();
      await env.teardown();
    },
  };
}

/** Waits until the log of `id` satisfies `done`, and returns it. */
export function logUntil(
  client: SessionClient,
  id: string,
  done: (events: SessionEvent[]) => boolean,
  what: string,
): Promise<SessionEvent[]> {
  return waitUntil(() => client.allEvents(id), done, what);
}

/** Polls a plain condition (a server-side flag) with the same bounded attempts. */
export async function until(check: () => boolean, what: string): Promise<void> {
  await waitUntil(
    async () => check(),
    (v) => v,
    what,
  );
}

export function turnEnds(events: readonly SessionEvent[]) {
  return events.flatMap((e) => (e.type === 'turn/end' ? [e.data.reason] : []));
}

export function ofType<T extends SessionEvent['type']>(events: readonly SessionEvent[], type: T) {
  return events.filter((e): e is Extract<SessionEvent, { type: T }> => e.type === type);
}
