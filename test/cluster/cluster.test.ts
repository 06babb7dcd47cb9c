/**
 * The cluster tier (issue 14, part 2): sessions on a real Temporal cluster — PostgreSQL 15 and the four Temporal
 * services as separate processes, started by `scripts/cluster.sh up` (the tier's global setup runs it when the
 * cluster is not up) — served by several worker processes that are the real CLI (`node bin/agent-sessions.js
 * worker`, compiled code from dist/) on one task queue.
 *
 * Faults, each in the middle of a turn (a scripted model call that takes 3 s): a worker SIGKILLed while the other
 * takes over; the history service SIGKILLed and started again (`scripts/cluster.sh up` restarts only what is
 * missing); PostgreSQL restarted with `pg_ctl restart -m immediate`; the frontend SIGKILLed and started again.
 * Messages are sent while each part is down (signals and `deliver` updates, some with a 1 s deadline): each one is
 * either acknowledged once the part is back, or refused to the caller with an error that names a gRPC status
 * meaning "not now" (UNAVAILABLE, DEADLINE_EXCEEDED) — never a verdict on the message — and a refused one, sent
 * again with its id, lands once. While the frontend is down, nothing can acknowledge: the messages with a deadline
 * are refused there, every time. At the end every session's log passes assertLogValid, holds each message exactly
 * once with the content sent, and no doubled answer or tool result, and every recorded history replays with the
 * current workflow code. The search attributes the cluster registers carry each session's status to visibility
 * (`SessionClient.list`).
 *
 * Waits are on queries, describe and list calls, never fixed sleeps. The measured figures (time to recover after
 * each kill, what happened to each message sent while a part was down) are printed as JSON at the end and written
 * to <cluster dir>/test-figures.json; nothing asserts on wall-clock time.
 *
 * Run: `npm run test:cluster` (builds dist/ first; brings the cluster up and down unless it was already up).
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  DeliveryRejectedError,
  InvalidInputError,
  SessionClient,
  SessionDisposedError,
  SessionNotFoundError,
} from '../../src/client';
import type { SessionEvent } from '../../src/domain/events';
import { assertLogValid, exportHistory, replayHistories } from '../../src/testing';
import {
  cluster,
  clusterEnv as readClusterEnv,
  describeError,
  eventually,
  grpcStatusOf,
  ROOT,
  startWorker as startWorkerProcess,
  type WorkerProcess,
} from './support';

const STARTED = temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED;
const taskQueue = `cluster-${randomUUID()}`;
/** The label every session of this run carries, so `list` finds exactly them. */
const runLabel = `tier-${randomUUID().slice(0, 8)}`;
/** gRPC statuses that tell a caller "not now, try again": the only refusals a part being down may cause. */
const TRANSIENT_STATUSES = ['UNAVAILABLE', 'DEADLINE_EXCEEDED'];

let clusterEnv: Record<string, string>;
let connection: Connection;
let sessions: SessionClient;
const workers = new Set<WorkerProcess>();
/** Every session the tier started, for the final log and replay checks. */
const sessionIds: string[] = [];
/** Every message id the tier sent (and was not refused for good), per session, with the text it carried. */
const sentIds = new Map<string, Map<string, string>>();
/** Every message sent while a part was down, over all faults. */
const allSentWhileDown: Sent[] = [];
const figures: Record<string, unknown> = { taskQueue };

/** Starts `agent-sessions worker` on the tier's task queue and resolves once it is polling. */
function startWorker(): Promise<WorkerProcess> {
  return startWorkerProcess(
    {
      TEMPORAL_ADDRESS: clusterEnv.TEMPORAL_ADDRESS!,
      TEMPORAL_NAMESPACE: clusterEnv.TEMPORAL_NAMESPACE!,
      TASK_QUEUE: taskQueue,
    },
    workers,
  );
}

async function kill(worker: WorkerProcess): Promise<void> {
  worker.child.kill('SIGKILL');
  await worker.exited;
}

/** The running activity of `type` of the session (not merely scheduled), once there is one. */
async function runningActivity(id: string, type: 'modelStep' | 'executeTool') {
  const d = await eventually(
    () => sessions.handle(id).describe(),
    (d) => (d.raw.pendingActivities ?? []).some((a) => a.activityType?.name === type && a.state === STARTED),
    `a running ${type} activity of ${id}`,
    60_000,
  );
  return (d.raw.pendingActivities ?? []).find((a) => a.activityType?.name === type && a.state === STARTED)!;
}

/** Waits until the session has closed `turns` turns and is idle, and returns its log, checked by assertLogValid. */
async function settle(id: string, turns: number, timeoutMs = 90_000): Promise<SessionEvent[]> {
  await eventually(
    () => sessions.state(id),
    (s) => s.status === 'idle' && s.turn >= turns,
    `${turns} turn(s) of ${id} to end`,
    timeoutMs,
  );
  const events = await sessions.allEvents(id);
  assertLogValid(events);
  return events;
}

/** Starts a session whose first model call takes `delayMs` (a turn to kill things in), and sends its first message. */
async function startSlowSession(prefix: string, text: string, delayMs = 3_000): Promise<string> {
  const id = `${prefix}-${randomUUID()}`;
  await sessions.start(id, {
    model: { provider: 'scripted', steps: [{ text, delayMs }] },
    labels: [runLabel],
  });
  sessionIds.push(id);
  await sessions.followup(id, { id: `${id}/first`, content: 'first' });
  remember(id, `${id}/first`, 'first');
  return id;
}

function remember(id: string, messageId: string, content: string): void {
  if (!sentIds.has(id)) sentIds.set(id, new Map());
  sentIds.get(id)!.set(messageId, content);
}

/** One message sent while a part of the cluster was down, and what the caller was told. */
interface Sent {
  id: string;
  via: 'signal' | 'update' | 'signal, 1 s deadline' | 'update, 1 s deadline';
  /** acked: the call returned; refused: it threw (sent again with the same id after recovery). */
  outcome?: 'acked' | 'refused';
  /** For a refusal: the error and its causes, and the gRPC status among them. */
  error?: string;
  status?: string;
  /** The error's class (kept out of the JSON figures). */
  errorClass?: unknown;
  /** ms from the fault to the caller's answer. */
  answeredAfterMs?: number;
  /** deliver's receipt (updates only). */
  duplicate?: boolean;
  /** For a refused message: the receipt of sending it again with its id once the part was back. */
  resent?: 'acked' | 'acked as duplicate';
}

/**
 * Sends messages to `id` without waiting (a followup signal, a `deliver` update, and each with a 1 s deadline);
 * returns their records and, per message, a promise that settles when its caller has had its answer.
 */
function sendWhileDown(
  id: string,
  label: string,
  faultAt: number,
): { sent: Sent[]; answers: Map<Sent, Promise<void>>; answered: Promise<void> } {
  const sent: Sent[] = [
    { id: `${id}/${label}-signal`, via: 'signal' },
    { id: `${id}/${label}-update`, via: 'update' },
    { id: `${id}/${label}-signal-deadline`, via: 'signal, 1 s deadline' },
    { id: `${id}/${label}-update-deadline`, via: 'update, 1 s deadline' },
  ];
  const send = async (s: Sent) => {
    const message = { id: s.id, content: s.id };
    const withDeadline = <T>(fn: () => Promise<T>) => sessions.client.withDeadline(Date.now() + 1_000, fn);
    try {
      if (s.via === 'update') s.duplicate = (await sessions.deliver(id, 'followup', message)).duplicate;
      else if (s.via === 'signal') await sessions.followup(id, message);
      else if (s.via === 'signal, 1 s deadline') await withDeadline(() => sessions.followup(id, message));
      else s.duplicate = (await withDeadline(() => sessions.deliver(id, 'followup', message))).duplicate;
      s.outcome = 'acked';
    } catch (err) {
      s.outcome = 'refused';
      s.error = describeError(err);
      s.status = grpcStatusOf(err);
      Object.defineProperty(s, 'errorClass', { value: err, enumerable: false });
    }
    s.answeredAfterMs = Date.now() - faultAt;
    remember(id, s.id, s.id);
  };
  allSentWhileDown.push(...sent);
  const answers = new Map(sent.map((s) => [s, send(s)] as const));
  return { sent, answers, answered: Promise.all(answers.values()).then(() => undefined) };
}

/**
 * A refusal is clear: the error names a gRPC status that means "not now" (the caller sends again with the id), and
 * it is none of the client's verdicts on the session or the message (not found, disposed, rejected, invalid).
 */
function expectClearRefusal(s: Sent): void {
  expect(s.error, `the error given for ${s.id}`).toMatch(/\w+: .{8,}/);
  expect(TRANSIENT_STATUSES, `the gRPC status of the refusal of ${s.id} (${s.error})`).toContain(s.status);
  for (const verdict of [
    SessionNotFoundError,
    SessionDisposedError,
    DeliveryRejectedError,
    InvalidInputError,
  ])
    expect(s.errorClass, `${s.id} refused with ${s.error}`).not.toBeInstanceOf(verdict);
}

/** Sends each refused message again with its id (what a caller does after an error) and records the receipt. */
async function resendRefused(id: string, sent: Sent[]): Promise<void> {
  for (const s of sent.filter((x) => x.outcome === 'refused')) {
    expectClearRefusal(s);
    const receipt = await sessions.deliver(id, 'followup', { id: s.id, content: s.id });
    s.resent = receipt.duplicate ? 'acked as duplicate' : 'acked';
  }
  // Every caller had an answer: acknowledged or refused, nothing left pending.
  for (const s of sent) expect(['acked', 'refused'], s.id).toContain(s.outcome);
}

/**
 * Resolves with the time when a TCP connect to 127.0.0.1:`port` is first refused (polled every 5 ms: the outage
 * lasts a fraction of a second), or with undefined once `gaveUp()` holds.
 */
async function portClosed(port: number, gaveUp: () => boolean): Promise<number | undefined> {
  while (!gaveUp()) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect({ host: '127.0.0.1', port });
      const done = (ok: boolean) => {
        socket.destroy();
        resolve(ok);
      };
      socket.once('connect', () => done(true));
      socket.once('error', () => done(false));
    });
    if (!open) return Date.now();
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return undefined;
}

/** Rule 32: nothing doubled — one user/message per message id, one assistant/message per step, one result per call. */
function expectNothingDoubled(events: readonly SessionEvent[]): void {
  const userIds = events.flatMap((e) => (e.type === 'user/message' ? [e.data.message.id] : []));
  const assistantSteps = events.flatMap((e) =>
    e.type === 'assistant/message' ? [`${e.data.turn}.${e.data.step}`] : [],
  );
  const resultIds = events.flatMap((e) => (e.type === 'tool/result' ? [e.data.callId] : []));
  const callIds = events.flatMap((e) => (e.type === 'tool/call' ? [e.data.callId] : []));
  for (const list of [userIds, assistantSteps, resultIds, callIds])
    expect(new Set(list).size).toBe(list.length);
}

/** ms from `since` (this host's clock) to the end of the session's first turn (workflow time: the same clock). */
function firstTurnEndAfter(events: readonly SessionEvent[], since: number): number {
  return events.find((e) => e.type === 'turn/end')!.time - since;
}

/** Never lost: every id sent to the session is one user/message of its log, with the text it was sent with. */
function expectEveryMessageOnce(id: string, events: readonly SessionEvent[]): void {
  const messages = events.flatMap((e) => (e.type === 'user/message' ? [e.data.message] : []));
  const sent = sentIds.get(id) ?? new Map<string, string>();
  expect(messages.map((m) => m.id).sort()).toEqual([...sent.keys()].sort());
  for (const m of messages) expect(m.content, m.id).toEqual([{ type: 'text', text: sent.get(m.id) }]);
}

const turnEnds = (events: readonly SessionEvent[]) =>
  events.flatMap((e) => (e.type === 'turn/end' ? [e.data.reason.kind] : []));

/** Identities of the workers that started the session's workflow and activity tasks (from its history). */
async function identitiesOf(id: string): Promise<Set<string>> {
  const history = await sessions.handle(id).fetchHistory();
  const out = new Set<string>();
  for (const e of history.events ?? []) {
    const identity =
      e.workflowTaskStartedEventAttributes?.identity ?? e.activityTaskStartedEventAttributes?.identity;
    if (identity) out.add(identity);
  }
  return out;
}

/** Attempt and identity with which the session's activities of `type` finally ran. */
async function activityStarts(id: string, type: string): Promise<{ attempt: number; identity: string }[]> {
  const history = await sessions.handle(id).fetchHistory();
  const scheduled = new Set<string>();
  const out: { attempt: number; identity: string }[] = [];
  for (const e of history.events ?? []) {
    if (e.activityTaskScheduledEventAttributes?.activityType?.name === type) scheduled.add(String(e.eventId));
    const started = e.activityTaskStartedEventAttributes;
    if (started && scheduled.has(String(started.scheduledEventId)))
      out.push({ attempt: started.attempt ?? 0, identity: started.identity ?? '' });
  }
  return out;
}

beforeAll(async () => {
  if (!existsSync(path.join(ROOT, 'dist/cli/main.js'))) {
    throw new Error('dist/ is missing: run `npm run build` first (npm run test:cluster does it)');
  }
  clusterEnv = await readClusterEnv();
  try {
    await cluster('status');
  } catch (err) {
    throw new Error(
      `the cluster is not up (npm run test:cluster brings it up; by hand: bash scripts/cluster.sh up)\n${(err as Error).message}`,
    );
  }
  connection = await Connection.connect({ address: clusterEnv.TEMPORAL_ADDRESS! });
  sessions = new SessionClient({
    client: new Client({ connection, namespace: clusterEnv.TEMPORAL_NAMESPACE! }),
    taskQueue,
  });
  // The cluster registers the project's search attributes: sessions start with them and show in visibility.
  expect(await sessions.searchAttributesRegistered()).toBe(true);
  process.once('exit', killAll);
  const started = Date.now();
  await Promise.all([startWorker(), startWorker()]);
  figures.twoWorkersStartMs = Date.now() - started;
}, 240_000);

function killAll(): void {
  for (const w of workers) w.child.kill('SIGKILL');
}

afterAll(async () => {
  killAll();
  await Promise.all([...workers].map((w) => w.exited));
  await connection?.close();
  process.removeListener('exit', killAll);
  const json = JSON.stringify(figures, null, 2);
  console.log(`cluster tier figures:\n${json}`);
  if (clusterEnv?.AGENT_SESSIONS_CLUSTER_DIR) {
    mkdirSync(clusterEnv.AGENT_SESSIONS_CLUSTER_DIR, { recursive: true });
    writeFileSync(path.join(clusterEnv.AGENT_SESSIONS_CLUSTER_DIR, 'test-figures.json'), `${json}\n`);
  }
});

describe.sequential('a Temporal cluster over PostgreSQL, two worker processes on one task queue', () => {
  it('serves sessions from both workers', { timeout: 180_000 }, async () => {
    const ids = Array.from({ length: 8 }, (_, i) => `cluster-two-${i}-${randomUUID()}`);
    await Promise.all(
      ids.map(async (id) => {
        await sessions.start(id, {
          tools: ['echo'],
          model: {
            provider: 'scripted',
            steps: [{ toolCalls: [{ name: 'echo', args: { text: id } }] }, { text: 'echoed' }],
          },
          labels: [runLabel],
        });
        sessionIds.push(id);
        await sessions.followup(id, { id: `${id}/a`, content: 'a' });
        remember(id, `${id}/a`, 'a');
        const receipt = await sessions.deliver(id, 'followup', { id: `${id}/b`, content: 'b' });
        expect(receipt.duplicate).toBe(false);
        remember(id, `${id}/b`, 'b');
      }),
    );
    const seen = new Set<string>();
    for (const id of ids) {
      const events = await settle(id, 2);
      expectNothingDoubled(events);
      expectEveryMessageOnce(id, events);
      expect(turnEnds(events)).toEqual(['completed', 'completed']);
      for (const identity of await identitiesOf(id)) seen.add(identity);
    }
    const ours = [...workers].map((w) => w.identity);
    expect([...seen].sort()).toEqual([...ours].sort());
    // Visibility over PostgreSQL: `list` (AgentSessionLabels, AgentSessionStatus) finds each session idle after
    // its two turns, with the attributes the workflow upserted at its last turn boundary.
    const listedAt = Date.now();
    const { sessions: rows } = await eventually(
      () => sessions.list({ label: runLabel, status: 'idle', limit: 100 }),
      (r) => ids.every((id) => r.sessions.some((row) => row.id === id && row.turn === 2)),
      'the sessions to be listed idle after 2 turns',
      60_000,
    );
    for (const id of ids)
      expect(rows.find((row) => row.id === id)).toMatchObject({
        status: 'idle',
        turn: 2,
        pending: 0,
        model: 'scripted',
        labels: [runLabel],
      });
    figures.twoWorkers = {
      sessions: ids.length,
      turns: ids.length * 2,
      workerIdentities: [...seen],
      listedIdleAfterMs: Date.now() - listedAt,
    };
  });

  it(
    'a worker SIGKILLed during a model call: the other worker completes the turn',
    { timeout: 180_000 },
    async () => {
      const id = await startSlowSession('cluster-worker-kill', 'answer after the worker crash');
      const activity = await runningActivity(id, 'modelStep');
      const victim = [...workers].find((w) => w.identity === activity.lastWorkerIdentity);
      expect(victim, `the worker running the model call (${activity.lastWorkerIdentity})`).toBeDefined();
      const survivor = [...workers].find((w) => w !== victim)!;
      await kill(victim!);
      const killedAt = Date.now();
      const { sent, answered } = sendWhileDown(id, 'worker-down', killedAt);
      // The turn is stuck until the call's heartbeat times out (10 s): visibility shows the session running.
      const running = await eventually(
        () => sessions.list({ label: runLabel, status: 'running' }),
        (r) => r.sessions.some((row) => row.id === id),
        `${id} to be listed running`,
        30_000,
      );
      expect(running.sessions.find((row) => row.id === id)).toMatchObject({ status: 'running', turn: 1 });
      await answered;
      await resendRefused(id, sent);
      const events = await settle(id, 1 + sent.length);
      const recoveredAfterMs = Date.now() - killedAt;
      expectNothingDoubled(events);
      expectEveryMessageOnce(id, events);
      expect(turnEnds(events).every((kind) => kind === 'completed')).toBe(true);
      const assistant = events.flatMap((e) =>
        e.type === 'assistant/message' ? [e.data.message.content] : [],
      );
      expect(assistant[0]).toEqual([{ type: 'text', text: 'answer after the worker crash' }]);
      // The kill hit the running call: it completed on a later attempt, on the surviving worker.
      const model = (await activityStarts(id, 'modelStep'))[0]!;
      expect(model.attempt).toBeGreaterThanOrEqual(2);
      expect(model.identity).toBe(survivor.identity);
      expect(survivor.child.exitCode).toBeNull();
      figures.workerKill = {
        modelAttempt: model.attempt,
        interruptedTurnEndedAfterKillMs: firstTurnEndAfter(events, killedAt),
        allTurnsDoneAfterKillMs: recoveredAfterMs,
        sentWhileDown: sent,
      };
      // Two workers again for what follows.
      await startWorker();
    },
  );

  it(
    'the history service SIGKILLed during a model call and started again: the turn completes',
    { timeout: 240_000 },
    async () => {
      const id = await startSlowSession('cluster-history-kill', 'answer after the history crash');
      await runningActivity(id, 'modelStep');
      await cluster('kill', 'history');
      const killedAt = Date.now();
      const { sent, answered } = sendWhileDown(id, 'history-down', killedAt);
      // `up` starts only what is missing (history) and returns once the cluster serves a workflow again.
      await cluster('up');
      const upAfterMs = Date.now() - killedAt;
      await answered;
      await resendRefused(id, sent);
      const events = await settle(id, 1 + sent.length, 150_000);
      const recoveredAfterMs = Date.now() - killedAt;
      expectNothingDoubled(events);
      expectEveryMessageOnce(id, events);
      expect(turnEnds(events).every((kind) => kind === 'completed')).toBe(true);
      const assistant = events.flatMap((e) =>
        e.type === 'assistant/message' ? [e.data.message.content] : [],
      );
      expect(assistant[0]).toEqual([{ type: 'text', text: 'answer after the history crash' }]);
      // The worker processes lived through the outage.
      expect([...workers].every((w) => w.child.exitCode === null)).toBe(true);
      figures.historyKill = {
        modelAttempts: (await activityStarts(id, 'modelStep')).map((s) => s.attempt),
        historyServingAgainAfterMs: upAfterMs,
        interruptedTurnEndedAfterKillMs: firstTurnEndAfter(events, killedAt),
        allTurnsDoneAfterKillMs: recoveredAfterMs,
        sentWhileDown: sent,
      };
    },
  );

  it(
    'PostgreSQL restarted with pg_ctl restart -m immediate during a model call: the turn completes',
    { timeout: 180_000 },
    async () => {
      const id = await startSlowSession('cluster-pg-restart', 'answer after the database restart');
      await runningActivity(id, 'modelStep');
      const restartAt = Date.now();
      let restartMs: number | undefined;
      const restarted = cluster('restart-postgres').then(() => {
        restartMs = Date.now() - restartAt;
      });
      // The messages go out once the database is seen down (its port refuses connections); it is back within
      // about a second (crash recovery after the immediate stop).
      const downAfterMs = await portClosed(Number(clusterEnv.POSTGRES_PORT), () => restartMs !== undefined);
      expect(downAfterMs, 'PostgreSQL seen down before the restart finished').toBeDefined();
      const { sent, answered } = sendWhileDown(id, 'postgres-down', restartAt);
      await restarted;
      await answered;
      await resendRefused(id, sent);
      const events = await settle(id, 1 + sent.length);
      const recoveredAfterMs = Date.now() - restartAt;
      expectNothingDoubled(events);
      expectEveryMessageOnce(id, events);
      expect(turnEnds(events).every((kind) => kind === 'completed')).toBe(true);
      const assistant = events.flatMap((e) =>
        e.type === 'assistant/message' ? [e.data.message.content] : [],
      );
      expect(assistant[0]).toEqual([{ type: 'text', text: 'answer after the database restart' }]);
      expect([...workers].every((w) => w.child.exitCode === null)).toBe(true);
      await cluster('status');
      figures.postgresRestart = {
        modelAttempts: (await activityStarts(id, 'modelStep')).map((s) => s.attempt),
        restartCommandMs: restartMs,
        seenDownAfterMs: downAfterMs! - restartAt,
        interruptedTurnEndedAfterRestartMs: firstTurnEndAfter(events, restartAt),
        allTurnsDoneAfterRestartMs: recoveredAfterMs,
        sentWhileDown: sent,
      };
    },
  );

  it(
    'the frontend SIGKILLed during a model call and started again: messages are refused while it is down, then land once',
    { timeout: 240_000 },
    async () => {
      const id = await startSlowSession('cluster-frontend-kill', 'answer after the frontend crash');
      await runningActivity(id, 'modelStep');
      await cluster('kill', 'frontend');
      const killedAt = Date.now();
      const { sent, answers } = sendWhileDown(id, 'frontend-down', killedAt);
      // Nothing can acknowledge while no frontend runs: the callers with a 1 s deadline are refused, every time.
      // Only then is the frontend started again; the others wait (the client retries UNAVAILABLE) or are refused.
      const withDeadline = sent.filter((s) => s.via.endsWith('deadline'));
      await Promise.all(withDeadline.map((s) => answers.get(s)));
      for (const s of withDeadline) {
        expect(s.outcome, s.id).toBe('refused');
        expectClearRefusal(s);
      }
      await cluster('up');
      const upAfterMs = Date.now() - killedAt;
      await Promise.all(answers.values());
      await resendRefused(id, sent);
      const events = await settle(id, 1 + sent.length, 150_000);
      const recoveredAfterMs = Date.now() - killedAt;
      expectNothingDoubled(events);
      expectEveryMessageOnce(id, events);
      expect(turnEnds(events).every((kind) => kind === 'completed')).toBe(true);
      const assistant = events.flatMap((e) =>
        e.type === 'assistant/message' ? [e.data.message.content] : [],
      );
      expect(assistant[0]).toEqual([{ type: 'text', text: 'answer after the frontend crash' }]);
      expect([...workers].every((w) => w.child.exitCode === null)).toBe(true);
      figures.frontendKill = {
        modelAttempts: (await activityStarts(id, 'modelStep')).map((s) => s.attempt),
        frontendServingAgainAfterMs: upAfterMs,
        interruptedTurnEndedAfterKillMs: firstTurnEndAfter(events, killedAt),
        allTurnsDoneAfterKillMs: recoveredAfterMs,
        sentWhileDown: sent,
      };
    },
  );

  it(
    'every log is valid, holds each message once, and every history replays',
    { timeout: 180_000 },
    async () => {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'agent-sessions-cluster-histories-'));
      try {
        let messages = 0;
        for (const id of sessionIds) {
          const events = await sessions.allEvents(id);
          assertLogValid(events);
          expectNothingDoubled(events);
          expectEveryMessageOnce(id, events);
          messages += sentIds.get(id)?.size ?? 0;
          await exportHistory(sessions.client, id, path.join(dir, `${id}.json`));
        }
        const summary = await replayHistories(dir, {
          workflowBundle: { codePath: inject('workflowBundlePath') },
        });
        expect(summary.replayed).toBe(sessionIds.length);
        const refused = allSentWhileDown.filter((s) => s.outcome === 'refused');
        figures.final = {
          sessions: sessionIds.length,
          messages,
          lost: 0,
          doubled: 0,
          sentWhileDown: allSentWhileDown.length,
          ackedWhileDownOrOnceBack: allSentWhileDown.length - refused.length,
          refusedThenResent: refused.length,
          refusedButHadLanded: refused.filter((s) => s.resent === 'acked as duplicate').length,
          refusalStatuses: [...new Set(refused.map((s) => s.status))],
          replayed: summary.replayed,
        };
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
