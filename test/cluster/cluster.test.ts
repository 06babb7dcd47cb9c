/**
 * The cluster tier (issue 14, part 2): sessions on a real Temporal cluster — PostgreSQL 15 and the four Temporal
 * services as separate processes, started by `scripts/cluster.sh up` before this runs — served by several worker
 * processes that are the real CLI (`node bin/agent-sessions.js worker`, compiled code from dist/) on one task queue.
 *
 * Faults, each in the middle of a turn (a scripted model call that takes 3 s): a worker SIGKILLed while the other
 * takes over; the history service SIGKILLed and started again (`scripts/cluster.sh up` restarts only what is
 * missing); PostgreSQL restarted with `pg_ctl restart -m immediate`. Messages are sent while each part is down
 * (signals and `deliver` updates, some with a short deadline): each one is either acknowledged once the part is
 * back, or refused to the caller with an error — and a refused one, sent again with its id, lands once. At the end
 * every session's log passes assertLogValid, holds each message exactly once and no doubled answer or tool result,
 * and every recorded history replays with the current workflow code.
 *
 * Waits are on queries and describe calls, never fixed sleeps. The measured figures (time to recover after each
 * kill, what happened to each message sent while a part was down) are printed as JSON at the end and written to
 * <cluster dir>/test-figures.json; nothing asserts on wall-clock time.
 *
 * Run: `bash scripts/cluster.sh up && npm run test:cluster` (builds dist/ first), then `bash scripts/cluster.sh down`.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SessionClient } from '../../src/client';
import type { SessionEvent } from '../../src/domain/events';
import { assertLogValid, exportHistory, replayHistories } from '../../src/testing';

const ROOT = path.resolve(__dirname, '../..');
const CLI = path.join(ROOT, 'bin/agent-sessions.js');
const SCRIPT = path.join(ROOT, 'scripts/cluster.sh');
const STARTED = temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED;
const taskQueue = `cluster-${randomUUID()}`;
const run = promisify(execFile);

let clusterEnv: Record<string, string>;
let connection: Connection;
let sessions: SessionClient;
const workers = new Set<WorkerProcess>();
/** Every session the tier started, for the final log and replay checks. */
const sessionIds: string[] = [];
/** Every message id the tier sent (and was not refused for good), per session. */
const sentIds = new Map<string, Set<string>>();
const figures: Record<string, unknown> = { taskQueue };

interface WorkerProcess {
  child: ChildProcess;
  /** The Temporal identity of the worker (the SDK default, pid@hostname). */
  identity: string;
  exited: Promise<void>;
  output(): string;
}

/** Runs scripts/cluster.sh; resolves with its stdout, rejects with its output. */
async function cluster(...args: string[]): Promise<string> {
  try {
    const { stdout } = await run('bash', [SCRIPT, ...args], { cwd: ROOT, maxBuffer: 4 << 20 });
    return stdout;
  } catch (err) {
    const e = err as Error & { stdout?: string; stderr?: string };
    throw new Error(
      `scripts/cluster.sh ${args.join(' ')} failed: ${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}`,
    );
  }
}

/** Starts `agent-sessions worker` against the cluster and resolves once it is polling. */
async function startWorker(): Promise<WorkerProcess> {
  const child = spawn(process.execPath, [CLI, 'worker'], {
    cwd: ROOT,
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: clusterEnv.TEMPORAL_ADDRESS,
      TEMPORAL_NAMESPACE: clusterEnv.TEMPORAL_NAMESPACE,
      TASK_QUEUE: taskQueue,
      AGENT_SESSIONS_TOOLSETS: 'testing',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let tail = '';
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString()).slice(-20_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const worker: WorkerProcess = {
    child,
    identity: `${child.pid}@${os.hostname()}`,
    exited,
    output: () => tail,
  };
  workers.add(worker);
  void exited.then(() => workers.delete(worker));
  // The worker prints its banner after the workflow bundle is built, right before it starts polling.
  await eventually(
    async () => {
      if (child.exitCode !== null) throw new Error(`worker exited early (code ${child.exitCode}):\n${tail}`);
      return tail.includes('agent-sessions worker:');
    },
    (ready) => ready,
    'a worker to start',
    120_000,
  );
  return worker;
}

async function kill(worker: WorkerProcess): Promise<void> {
  worker.child.kill('SIGKILL');
  await worker.exited;
}

/**
 * Polls `read` until `done` holds, for up to `timeoutMs`; a failing read (a part of the cluster restarting) counts
 * as not done. Throws with the last value or error.
 */
async function eventually<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  what: string,
  timeoutMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await read();
      if (done(value)) return value;
      last = value;
    } catch (err) {
      if (err instanceof Error && err.message.startsWith('worker exited early')) throw err;
      last = err;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const shown = last instanceof Error ? last.message : JSON.stringify(last)?.slice(0, 2000);
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last: ${shown}`);
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
  await sessions.start(id, { model: { provider: 'scripted', steps: [{ text, delayMs }] } });
  sessionIds.push(id);
  await sessions.followup(id, { id: `${id}/first`, content: 'first' });
  remember(id, `${id}/first`);
  return id;
}

function remember(id: string, messageId: string): void {
  if (!sentIds.has(id)) sentIds.set(id, new Set());
  sentIds.get(id)!.add(messageId);
}

/** One message sent while a part of the cluster was down, and what the caller was told. */
interface Sent {
  id: string;
  via: 'signal' | 'update' | 'signal, 1 s deadline';
  /** acked: the call returned; refused: it threw (sent again with the same id after recovery). */
  outcome?: 'acked' | 'refused';
  error?: string;
  /** ms from the fault to the caller's answer. */
  answeredAfterMs?: number;
  /** deliver's receipt (updates only). */
  duplicate?: boolean;
  /** For a refused message: the receipt of sending it again with its id once the part was back. */
  resent?: 'acked' | 'acked as duplicate';
}

/**
 * Sends messages to `id` without waiting (a followup signal, a `deliver` update, and a signal with a 1 s deadline);
 * returns their records and a promise that settles when every caller has had its answer.
 */
function sendWhileDown(
  id: string,
  label: string,
  faultAt: number,
): { sent: Sent[]; answered: Promise<void> } {
  const sent: Sent[] = [
    { id: `${id}/${label}-signal`, via: 'signal' },
    { id: `${id}/${label}-update`, via: 'update' },
    { id: `${id}/${label}-signal-deadline`, via: 'signal, 1 s deadline' },
  ];
  const send = async (s: Sent) => {
    const message = { id: s.id, content: s.id };
    try {
      if (s.via === 'update') s.duplicate = (await sessions.deliver(id, 'followup', message)).duplicate;
      else if (s.via === 'signal') await sessions.followup(id, message);
      else await sessions.client.withDeadline(Date.now() + 1_000, () => sessions.followup(id, message));
      s.outcome = 'acked';
    } catch (err) {
      s.outcome = 'refused';
      s.error = describeError(err);
    }
    s.answeredAfterMs = Date.now() - faultAt;
    remember(id, s.id);
  };
  return { sent, answered: Promise.all(sent.map(send)).then(() => undefined) };
}

/** An error and its causes, one `Name: message` each (the gRPC status is in the cause). */
function describeError(err: unknown): string {
  const parts: string[] = [];
  for (
    let e = err as Error | undefined;
    e instanceof Error && parts.length < 4;
    e = e.cause as Error | undefined
  )
    parts.push(`${e.name}: ${e.message}`);
  return parts.join(' <- ').slice(0, 400);
}

/** Sends each refused message again with its id (what a caller does after an error) and records the receipt. */
async function resendRefused(id: string, sent: Sent[]): Promise<void> {
  for (const s of sent.filter((x) => x.outcome === 'refused')) {
    expect(s.error, `the error given for ${s.id}`).toMatch(/\w+: .{8,}/);
    const receipt = await sessions.deliver(id, 'followup', { id: s.id, content: s.id });
    s.resent = receipt.duplicate ? 'acked as duplicate' : 'acked';
  }
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

/** Never lost: every id sent to the session is one user/message of its log. */
function expectEveryMessageOnce(id: string, events: readonly SessionEvent[]): void {
  const userIds = events.flatMap((e) => (e.type === 'user/message' ? [e.data.message.id] : []));
  expect([...userIds].sort()).toEqual([...(sentIds.get(id) ?? [])].sort());
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
  clusterEnv = Object.fromEntries(
    (await cluster('env'))
      .trim()
      .split('\n')
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
  try {
    await cluster('status');
  } catch (err) {
    throw new Error(
      `the cluster is not up: run \`bash scripts/cluster.sh up\` first\n${(err as Error).message}`,
    );
  }
  connection = await Connection.connect({ address: clusterEnv.TEMPORAL_ADDRESS! });
  sessions = new SessionClient({
    client: new Client({ connection, namespace: clusterEnv.TEMPORAL_NAMESPACE! }),
    taskQueue,
  });
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
        });
        sessionIds.push(id);
        await sessions.followup(id, { id: `${id}/a`, content: 'a' });
        remember(id, `${id}/a`);
        const receipt = await sessions.deliver(id, 'followup', { id: `${id}/b`, content: 'b' });
        expect(receipt.duplicate).toBe(false);
        remember(id, `${id}/b`);
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
    figures.twoWorkers = { sessions: ids.length, turns: ids.length * 2, workerIdentities: [...seen] };
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
        figures.final = {
          sessions: sessionIds.length,
          messages,
          lost: 0,
          doubled: 0,
          replayed: summary.replayed,
        };
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
