/**
 * A session test environment in one call (docs/testing.md): Temporal's time-skipping test server (or the
 * dev server), one worker on a fresh task queue with the scripted model (its requests recorded) and the testing
 * toolset plus your tools, and a SessionClient for it. Helpers wait on queries, never on fixed sleeps (STYLE.md 13).
 * Not deterministic (processes, network); never import from workflow code.
 *
 * ```ts
 * const t = await createTestSessionEnv();
 * await t.client.start('s1', { model: { provider: 'scripted', steps: [{ text: 'hi' }] } });
 * await t.client.followup('s1', 'hello');
 * const events = await t.settle('s1'); // the log, checked by assertLogValid
 * await t.teardown();
 * ```
 */
import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker, WorkerOptions, WorkflowBundleOption } from '@temporalio/worker';
import { ScriptedRecorder, type ModelProvider } from '../activities/model';
import type { ToolDefinition } from '../activities/tools';
import { SessionClient } from '../client';
import { createDevServerEnv, createTimeSkippingEnv } from '../devserver';
import type { SessionEvent } from '../domain/events';
import { assertLogValid } from '../domain/invariants';
import { createSessionWorker } from '../worker';
import { testingTools } from '../activities/testingTools';

export interface TestSessionEnvOptions {
  /** Your tools, registered beside the testing toolset (a tool of the same name replaces the testing one). */
  tools?: ToolDefinition[];
  /** Register the testing toolset (echo, sleep, fail, emit_context, inject_self, steer_self, conclude). Default true. */
  testingTools?: boolean;
  /**
   * Keep a copy of every scripted-model request in `recorder` (default true). Turn it off for long sessions: each
   * request holds the whole transcript, so the copies grow with the square of the session's length.
   */
  recordRequests?: boolean;
  /** Model providers besides `scripted` (e.g. a fake of your own). */
  providers?: Record<string, ModelProvider>;
  /** Your workflows module (one that wraps ours with pre-step listeners); bundled once per env. Default ours. */
  workflowsPath?: string;
  /** A prebuilt workflow bundle (`{codePath}`); wins over `workflowsPath` and skips bundling. */
  workflowBundle?: WorkflowBundleOption;
  /** Workflow type the client starts (default `agentSession`). */
  workflowType?: string;
  /** `time-skipping` (default): the test server; `dev`: the Temporal CLI dev server in memory. */
  server?: 'time-skipping' | 'dev';
  /** Use this environment instead of starting a server (it is not torn down by `teardown`). */
  env?: TestWorkflowEnvironment;
  /** Task queue (default a fresh `test-<uuid>`). */
  taskQueue?: string;
  /** Extra Temporal worker options. */
  worker?: Partial<WorkerOptions>;
}

export interface TestSessionEnv {
  /** A client for the env's task queue and workflow type. */
  client: SessionClient;
  /** A client for another workflow type of the same bundle (e.g. a variant with pre-step listeners). */
  sessions(workflowType?: string): SessionClient;
  /** Every request the scripted model received, per session: `recorder.requests(id)[i]` is R[i] (empty when
   * `recordRequests` is false). */
  recorder: ScriptedRecorder;
  env: TestWorkflowEnvironment;
  worker: Worker;
  taskQueue: string;
  /**
   * Waits until session `id` has closed at least `minTurns` turns and is not running, then returns its whole log
   * (across continue-as-new), checked with `assertLogValid` (throws LogInvariantError when it breaks a rule).
   */
  settle(id: string, minTurns?: number): Promise<SessionEvent[]>;
  /** Stops the worker and, unless `env` was given, the server. Safe to call twice. */
  teardown(): Promise<void>;
}

/**
 * Starts a server (unless `opts.env` is given) and a worker, and returns the env. Throws when the Temporal binary
 * is missing (the message says to run `npm run setup`) or the workflows module does not bundle.
 */
export async function createTestSessionEnv(opts: TestSessionEnvOptions = {}): Promise<TestSessionEnv> {
  const env =
    opts.env ?? (opts.server === 'dev' ? await createDevServerEnv() : await createTimeSkippingEnv());
  const ownsEnv = !opts.env;
  const recorder = new ScriptedRecorder();
  const taskQueue = opts.taskQueue ?? `test-${randomUUID()}`;
  const tools = new Map<string, ToolDefinition>();
  for (const tool of [...(opts.testingTools === false ? [] : testingTools), ...(opts.tools ?? [])])
    tools.set(tool.name, tool);
  let worker: Worker;
  try {
    worker = await createSessionWorker({
      connection: env.nativeConnection,
      ...(env.namespace ? { namespace: env.namespace } : {}),
      taskQueue,
      tools: [...tools.values()],
      ...(opts.recordRequests === false ? {} : { scriptedRecorder: recorder }),
      ...(opts.providers ? { providers: opts.providers } : {}),
      ...(opts.workflowBundle ? { workflowBundle: opts.workflowBundle } : {}),
      ...(opts.workflowsPath ? { workflowsPath: opts.workflowsPath } : {}),
      ...(opts.worker ? { worker: opts.worker } : {}),
      // Unversioned: a test's one worker runs every session (docs/upgrades.md).
      versioning: false,
    });
  } catch (err) {
    if (ownsEnv) await env.teardown();
    throw err;
  }
  const running = worker.run();
  running.catch(() => undefined); // a failed worker surfaces in teardown, not as an unhandled rejection
  const sessions = (workflowType = opts.workflowType) =>
    new SessionClient({
      client: env.client,
      taskQueue,
      ...(env.namespace ? { namespace: env.namespace } : {}),
      ...(workflowType ? { workflowType } : {}),
      // The time-skipping server has no visibility: its sessions start without search attributes, unasked.
      ...(env.supportsTimeSkipping ? { searchAttributes: 'off' as const } : {}),
    });
  const client = sessions();
  let torn: Promise<void> | undefined;
  return {
    client,
    sessions,
    recorder,
    env,
    worker,
    taskQueue,
    settle: (id, minTurns = 1) => settle(client, id, minTurns),
    teardown: () =>
      (torn ??= (async () => {
        if (worker.getState() === 'RUNNING') worker.shutdown();
        await running;
        if (ownsEnv) await env.teardown();
      })()),
  };
}

/**
 * Polls `read` until `done` holds and returns the value; throws after `attempts` polls (25 ms apart) with the last
 * value. For waiting on queries in tests, instead of sleeping.
 */
export async function waitUntil<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  what: string,
  attempts = 400,
): Promise<T> {
  let last: T | undefined;
  for (let i = 0; i < attempts; i++) {
    last = await read();
    if (done(last)) return last;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`timed out waiting for ${what}; last value: ${JSON.stringify(last)?.slice(0, 2000)}`);
}

/**
 * Waits until session `id` has closed at least `minTurns` turns and is idle (or disposed), then returns its whole
 * log, checked with `assertLogValid`. Reads through {@link patientQuery}.
 */
export async function settle(client: SessionClient, id: string, minTurns = 1): Promise<SessionEvent[]> {
  await waitUntil(
    () => patientQuery(client, () => client.state(id)),
    (s) => s.status !== 'running' && closedTurns(s) >= minTurns,
    `${minTurns} turn(s) of ${id} to end and the session to go idle`,
  );
  // Idle after its last turn, the session continues as new no more, so this read cannot meet a run that completes.
  const events = await patientQuery(client, () => client.allEvents(id), { deadlineMs: 60_000, attempts: 2 });
  assertLogValid(events);
  return events;
}

/**
 * Runs a read (queries) with a deadline of `deadlineMs` (default 2 s) per attempt and sends it again when the call
 * ends DEADLINE_EXCEEDED or CANCELLED, up to `attempts` times. Why: the time-skipping test server can lose a query
 * that reaches a run while that run completes with continue-as-new (its continue-as-new is not atomic); such a query
 * never answers or is cancelled, while the same query sent again reaches the new run at once. Other errors are
 * thrown as they are.
 */
export async function patientQuery<T>(
  client: SessionClient,
  read: () => Promise<T>,
  { deadlineMs = 2_000, attempts = 5 }: { deadlineMs?: number; attempts?: number } = {},
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await client.client.withDeadline(Date.now() + deadlineMs, read);
    } catch (err) {
      if (attempt >= attempts || !isLostCall(err)) throw err;
    }
  }
}

/** gRPC CANCELLED (1) or DEADLINE_EXCEEDED (4) anywhere in the error's cause chain. */
function isLostCall(err: unknown): boolean {
  for (
    let e = err as { code?: unknown; message?: unknown; cause?: unknown } | undefined;
    e;
    e = e.cause as typeof e
  ) {
    if (e.code === 1 || e.code === 4) return true;
    if (typeof e.message === 'string' && /deadline exceeded|call cancelled/i.test(e.message)) return true;
  }
  return false;
}

/** Turns closed so far: the state's turn number counts every opened turn; an idle session has closed them all. */
function closedTurns(state: { status: string; turn: number }): number {
  return state.status === 'running' ? state.turn - 1 : state.turn;
}
