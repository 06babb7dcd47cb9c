/**
 * The bench groups where the design matters (issue 19 part 3), each on a dev server of its own:
 * - `longSessions`: many concurrent sessions of many steps with 4 KB tool results, ours beside the naive pattern
 *   (the whole transcript as each model activity's input) — steps/s, history per session, step latency late ÷ early,
 *   and the step at which the naive pattern crosses each of Temporal's default limits;
 * - `manySessions`: thousands of idle sessions on one worker (in a child process, so its RSS is the worker's) —
 *   start rate, RSS per cached idle session by workflow and bundle, eviction with a small `maxCachedWorkflows`, and
 *   the wake latency of an evicted session beside a cached one;
 * - `marathon`: one session of thousands of turns — continue-as-new count and where it triggered, replay time of the
 *   largest run beside a trivial history of the same length, and wake latency after the last continue-as-new beside
 *   a fresh session.
 * Scale knobs are environment variables (see docs/performance.md, "Reproduce").
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { bundleWorkflowCode, NativeConnection, Worker } from '@temporalio/worker';
import { SessionClient } from '../src/client';
import { spawnDevServer, type DevServerProcess } from '../src/devserver';
import { STREAM_THROTTLE, transcriptRefSinks } from '../src/worker';
import type { EntryStore } from '../src/activities/entryStore';
import { SIZES, requestStarts, text } from './activities';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const EventType = temporal.api.enums.v1.EventType;
type Bundle = Awaited<ReturnType<typeof bundleWorkflowCode>>;
type Report = Record<string, unknown>;

export interface ScaleContext {
  root: string;
  bundle: Bundle;
  activities: object;
  entries: EntryStore;
  quick: boolean;
  report: Report;
  raw: Report;
}

const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);

function eventBytes(e: HistoryEvent): number {
  return temporal.api.history.v1.HistoryEvent.encode(e).finish().length;
}

function percentile(values: number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

const summary = (v: number[]) => ({ n: v.length, p50: percentile(v, 50), p95: percentile(v, 95) });
const ratio = (a: number | null | undefined, b: number | null | undefined) =>
  typeof a === 'number' && typeof b === 'number' && b > 0 ? a / b : null;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 900_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  const attempt = () => check().catch(() => false);
  while (!(await attempt())) {
    if (Date.now() > until) throw new Error(`bench: timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** Runs `fn` over `items` with at most `limit` at a time. */
async function pool<T>(items: T[], limit: number, fn: (item: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i]!, i);
      }
    }),
  );
}

/** The runs of a workflow from `runId` on, following continue-as-new. */
export async function historyChain(
  client: Client,
  workflowId: string,
  runId: string,
): Promise<HistoryEvent[][]> {
  const runs: HistoryEvent[][] = [];
  for (let next: string | null | undefined = runId; next;) {
    const events: HistoryEvent[] =
      (await client.workflow.getHandle(workflowId, next).fetchHistory()).events ?? [];
    runs.push(events);
    next = events[events.length - 1]?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId;
  }
  return runs;
}

/** A dev server of the group's own, a client that accepts large history pages, and a worker in this process. */
async function serverAndWorker(
  ctx: ScaleContext,
  dynamicConfig: string[],
  taskQueue: string,
  maxCachedWorkflows = 2000,
): Promise<{
  server: DevServerProcess;
  client: Client;
  sessions: SessionClient;
  close: () => Promise<void>;
}> {
  const server = await spawnDevServer({ inMemory: true, dynamicConfig });
  const connection = await Connection.connect({
    address: server.address,
    channelArgs: { 'grpc.max_receive_message_length': 512 * 1024 * 1024 },
  });
  const client = new Client({ connection });
  const native = await NativeConnection.connect({ address: server.address });
  const worker = await Worker.create({
    connection: native,
    taskQueue,
    workflowBundle: ctx.bundle,
    activities: ctx.activities,
    maxCachedWorkflows,
    maxHeartbeatThrottleInterval: STREAM_THROTTLE,
    sinks: transcriptRefSinks(ctx.entries),
  });
  const running = worker.run();
  return {
    server,
    client,
    sessions: new SessionClient({ client, taskQueue }),
    close: async () => {
      worker.shutdown();
      await running;
      await native.close();
      await connection.close();
      await server.stop({ signal: 'SIGKILL' });
    },
  };
}

/**
 * CPU seconds a process has used (user + system), from /proc; null where /proc is not there. The clock tick is
 * 100 Hz on Linux (`getconf CLK_TCK`).
 */
function processCpuSeconds(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return null;
  }
}

/** CPU used since it was made by the dev server and by this process (worker, client and bench), in seconds. */
function cpuMeter(serverPid: number): () => { server: number | null; workerAndClient: number } {
  const server0 = processCpuSeconds(serverPid);
  const self0 = process.cpuUsage();
  return () => {
    const server1 = processCpuSeconds(serverPid);
    const self = process.cpuUsage(self0);
    return {
      server: server0 === null || server1 === null ? null : server1 - server0,
      workerAndClient: (self.user + self.system) / 1e6,
    };
  };
}

/** Temporal's default limits (server 1.32 dynamic config; the SDK's payload warning), as the peer group uses them. */
const DEFAULT_LIMITS = {
  historySizeSuggestContinueAsNew: { bytes: 4 * 1024 * 1024 },
  historySizeWarn: { bytes: 10 * 1024 * 1024 },
  historySizeError: { bytes: 50 * 1024 * 1024 },
  historyCountSuggestContinueAsNew: { events: 4 * 1024 },
  historyCountWarn: { events: 10 * 1024 },
  historyCountError: { events: 50 * 1024 },
  payloadSizeWarn: { payload: 512 * 1024 },
  payloadSizeError: { payload: 2 * 1024 * 1024 },
} as const;

/**
 * For one run's history: the model step (1-based count of `modelActivity` schedulings) at which the run's history
 * bytes or events, or one activity input/result, first reached each default limit; and the largest payload.
 */
function limitsCrossed(events: HistoryEvent[], modelActivity: string) {
  const crossed: Record<string, number> = {};
  let bytes = 0;
  let step = 0;
  let largest = 0;
  for (const [i, e] of events.entries()) {
    bytes += eventBytes(e);
    if (
      e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED &&
      e.activityTaskScheduledEventAttributes?.activityType?.name === modelActivity
    )
      step++;
    const payloads =
      e.activityTaskScheduledEventAttributes?.input?.payloads ??
      e.activityTaskCompletedEventAttributes?.result?.payloads ??
      [];
    largest = Math.max(
      largest,
      payloads.reduce((s, p) => s + (p.data?.length ?? 0), 0),
    );
    for (const [name, limit] of Object.entries(DEFAULT_LIMITS)) {
      if (crossed[name] !== undefined) continue;
      const reached =
        'bytes' in limit
          ? bytes >= limit.bytes
          : 'events' in limit
            ? i + 1 >= limit.events
            : largest >= limit.payload;
      if (reached) crossed[name] = step;
    }
  }
  return { crossedAtStep: crossed, largestPayloadBytes: largest, bytes, events: events.length, steps: step };
}

// ---------------------------------------------------------------------------------------------------------------
// longSessions
// ---------------------------------------------------------------------------------------------------------------

/**
 * Limits of the longSessions server: history size and count errors raised so that the naive pattern can finish
 * (it passes the default 50 MB long before step 200); the continue-as-new suggestions stay at their defaults, so our
 * sessions continue as new where they would in production.
 */
const LONG_LIMITS = [
  'limit.historySize.error=2147483648',
  'limit.historySize.warn=1073741824',
  'limit.historyCount.error=204800',
  'limit.historyCount.warn=102400',
];

export async function longSessionsGroup(ctx: ScaleContext): Promise<void> {
  const { report, raw, quick } = ctx;
  const sessionsN = num('BENCH_LONG_SESSIONS', quick ? 10 : 50);
  const stepsN = num('BENCH_LONG_STEPS', quick ? 60 : 200);
  const naiveSessionsN = num('BENCH_LONG_NAIVE_SESSIONS', sessionsN);
  // Each side stops starting turns after this; a side that stops early is reported as such (its steps/s then
  // covers only its early, cheaper steps: a ratio against it understates ours).
  const deadlineSeconds = num('BENCH_LONG_DEADLINE_SECONDS', 900);
  const turns = Math.ceil(stepsN / 2); // each turn: a tool step (one 4 KB blob) and a text step
  const taskQueue = 'bench-long';
  // Ours, then ours without search attributes (`searchAttributes: 'off'`): the naive workflow keeps none, and on the
  // dev server each upsert (two per turn: turn start and end) is a visibility write that costs more server CPU than
  // the turn's other events; that variant shows the loop's own cost beside the naive one.
  const noVisibilitySessionsN = num('BENCH_LONG_NO_VISIBILITY_SESSIONS', sessionsN);
  // The engine's floor for this turn shape (bench/workflows.ts naiveSession with `floor`): the same activities and
  // results with no transcript at all — the most any design could gain over the naive one on this server.
  const floorSessionsN = num('BENCH_LONG_FLOOR_SESSIONS', sessionsN);
  // The window of turns whose latency stands for "at step 10" and "at step N": the turn ending at that step and the
  // one before it (sessions × 2 samples each).
  const early = [4, 5];
  const late = [turns - 1, turns];
  // Each side on a server of its own, started fresh: the naive sessions leave gigabytes of history behind.
  const run = async (kind: 'ours' | 'oursNoVisibility' | 'naive' | 'floor', n: number) => {
    const bare = kind === 'naive' || kind === 'floor';
    const env = await serverAndWorker(ctx, LONG_LIMITS, taskQueue, Math.max(2000, n * 2));
    const { client } = env;
    const ourSessions = new SessionClient({
      client,
      taskQueue,
      ...(kind === 'oursNoVisibility' ? { searchAttributes: 'off' as const } : {}),
    });
    try {
      const stamp = Date.now();
      const ids = Array.from({ length: n }, (_, i) => `bench-long-${kind}-${stamp}-${i}`);
      const latencies: number[][] = Array.from({ length: turns + 1 }, () => []);
      const firstRunIds = new Map<string, string>();
      const cpu = cpuMeter(env.server.pid);
      const started = performance.now();
      const deadline = started + deadlineSeconds * 1000;
      let stoppedByDeadline = false;
      await Promise.all(
        ids.map(async (id) => {
          if (!bare) {
            await ourSessions.start(id, {
              model: { provider: 'openai-compatible', model: 'bench:k=1' },
              tools: ['blob'],
            });
            firstRunIds.set(id, (await ourSessions.handle(id).describe()).runId);
          } else
            await client.workflow.start('naiveSession', {
              taskQueue,
              workflowId: id,
              args: [{ model: 'bench:k=1', ...(kind === 'floor' ? { floor: true } : {}) }],
            });
          for (let t = 1; t <= turns; t++) {
            if (performance.now() > deadline) {
              stoppedByDeadline = true;
              break;
            }
            const content = text(SIZES.user, t);
            const t0 = performance.now();
            if (!bare) {
              const r = await ourSessions.ask(id, content);
              if (r.outcome.status !== 'ended')
                throw new Error(`bench: ${id} turn ${t}: ${JSON.stringify(r.outcome)}`);
            } else await client.workflow.getHandle(id).executeUpdate('ask', { args: [{ content }] });
            latencies[t]!.push(performance.now() - t0);
            if (id === ids[0] && t % 20 === 0)
              process.stderr.write(`bench: longSessions: ${kind} turn ${t}\n`);
          }
        }),
      );
      const seconds = (performance.now() - started) / 1000;
      const cpuSeconds = cpu();
      const steps = 2 * latencies.reduce((s, v) => s + v.length, 0);
      // History per session: every session's runs (describe: the current run's size; ours may have continued as
      // new, so its earlier runs are added from one session's chain).
      const sizes: number[] = [];
      for (const id of ids) {
        const d = await client.workflow.getHandle(id).describe();
        sizes.push(Number(d.raw.workflowExecutionInfo?.historySizeBytes ?? 0));
      }
      const sample = ids[0]!;
      const chain = !bare
        ? await historyChain(client, sample, firstRunIds.get(sample)!)
        : [(await client.workflow.getHandle(sample).fetchHistory()).events ?? []];
      const runs = chain.map((events) => limitsCrossed(events, !bare ? 'modelStep' : 'naiveModel'));
      const chainBytes = runs.reduce((s, r) => s + r.bytes, 0);
      const lat = (window: number[]) => summary(window.flatMap((t) => latencies[t] ?? []));
      for (const id of ids)
        await client.workflow
          .getHandle(id)
          .terminate('bench done')
          .catch(() => undefined);
      return {
        sessions: n,
        stepsPerSession: turns * 2,
        seconds,
        stepsCompleted: steps,
        stoppedByDeadline,
        stepsPerSec: steps / seconds,
        // Where the time went: CPU milliseconds per step of the server and of this process (worker and client).
        cpuMsPerStep: {
          server: cpuSeconds.server === null ? null : (cpuSeconds.server * 1000) / steps,
          workerAndClient: (cpuSeconds.workerAndClient * 1000) / steps,
        },
        historyBytesPerSession: {
          sampleChainBytes: chainBytes,
          lastRunMedian: percentile(sizes, 50),
        },
        runsOfSampleSession: chain.length,
        sampleRuns: runs,
        turnLatencyMs: { early: lat(early), late: lat(late), earlyTurns: early, lateTurns: late },
        turnLatencyP50ByTurn: latencies.slice(1).map((v) => Math.round(percentile(v, 50) ?? 0)),
      };
    } catch (err) {
      // A server that died says why in its last output.
      const exit = await Promise.race([
        env.server.exited,
        new Promise((r) => setTimeout(() => r('running'), 100)),
      ]);
      process.stderr.write(
        `bench: longSessions ${kind} failed; server ${JSON.stringify(exit)}; its last output:\n${env.server.output()}\n`,
      );
      throw err;
    } finally {
      await env.close();
    }
  };
  // Which sides run (`BENCH_LONG_SIDES`, a comma list; all four by default): the ratios need ours and naive.
  const allSides = ['naive', 'floor', 'ours', 'oursNoVisibility'];
  const sides = new Set((process.env.BENCH_LONG_SIDES ?? allSides.join(',')).split(',').map((v) => v.trim()));
  const unknown = [...sides].filter((v) => !allSides.includes(v));
  if (unknown.length)
    throw new Error(`BENCH_LONG_SIDES: unknown side ${unknown.join(', ')} (known: ${allSides.join(', ')})`);
  const side = async (kind: Parameters<typeof run>[0], n: number, label: string) => {
    if (!sides.has(kind) || n <= 0) return null;
    process.stderr.write(`bench: longSessions: ${label}, ${n} sessions × ${turns * 2} steps\n`);
    const result = await run(kind, n);
    (globalThis as { gc?: () => void }).gc?.();
    return result;
  };
  // The naive side first, while this process is fresh: its server and this process together reach ~20 GB near
  // step 200 (the server holds every session's whole history several times over), and what an earlier side left
  // in this process's heap has made the server run out of memory on a 24 GiB machine.
  const naive = await side('naive', naiveSessionsN, 'naive');
  const floor = await side('floor', floorSessionsN, 'engine floor');
  const ours = await side('ours', sessionsN, 'ours');
  const oursNoVisibility = await side(
    'oursNoVisibility',
    noVisibilitySessionsN,
    'ours without search attributes',
  );
  raw.longSessions = {
    server: {
      dynamicConfig: LONG_LIMITS,
      about: 'history size/count errors raised so the naive pattern finishes',
    },
    turnShape: 'user 2 KB → tool step (one 4 KB blob result, 1 KB text) → text step (1 KB)',
    ours,
    oursNoVisibility,
    naive,
    floor,
  };
  report.longSessionCpuMsPerStep = {
    ...(ours ? { ours: ours.cpuMsPerStep } : {}),
    ...(oursNoVisibility ? { oursWithoutSearchAttributes: oursNoVisibility.cpuMsPerStep } : {}),
    ...(naive ? { naive: naive.cpuMsPerStep } : {}),
    ...(floor ? { engineFloor: floor.cpuMsPerStep } : {}),
  };
  if (naive) {
    report.naiveLongSessionLatencyP50Ratio200to10 = ratio(
      naive.turnLatencyMs.late.p50,
      naive.turnLatencyMs.early.p50,
    );
    report.naiveLimitCrossedAtStep = naive.sampleRuns[0]?.crossedAtStep ?? null;
    if (oursNoVisibility)
      report.longSessionThroughputRatioVsNaiveWithoutSearchAttributes = ratio(
        oursNoVisibility.stepsPerSec,
        naive.stepsPerSec,
      );
    // The ceiling of the ratio below on this server.
    if (floor)
      report.longSessionThroughputRatioVsNaiveAtEngineFloor = ratio(floor.stepsPerSec, naive.stepsPerSec);
  }
  if (ours) {
    report.longSessionLatencyP50Ratio200to10 = ratio(
      ours.turnLatencyMs.late.p50,
      ours.turnLatencyMs.early.p50,
    );
    report.longSessionLatencyP95Ratio200to10 = ratio(
      ours.turnLatencyMs.late.p95,
      ours.turnLatencyMs.early.p95,
    );
    // How much of the engine's floor ours reaches.
    if (floor) report.longSessionThroughputShareOfEngineFloor = ratio(ours.stepsPerSec, floor.stepsPerSec);
  }
  if (ours && naive) {
    report.longSessionThroughputRatioVsNaive = ratio(ours.stepsPerSec, naive.stepsPerSec);
    report.longSessionHistoryBytesPerSession = {
      ours: ours.historyBytesPerSession.sampleChainBytes,
      naive: naive.historyBytesPerSession.sampleChainBytes,
    };
  }
  const stopped = { ours, oursNoVisibility, naive, floor };
  if (Object.values(stopped).some((r) => r?.stoppedByDeadline))
    report.longSessionStoppedByDeadline = Object.fromEntries(
      Object.entries(stopped).map(([k, r]) => [k, r ? r.stoppedByDeadline && r.stepsCompleted : null]),
    );
  if (stepsN !== 200)
    report.longSessionScale = { sessions: sessionsN, naiveSessions: naiveSessionsN, steps: turns * 2 };
}

// ---------------------------------------------------------------------------------------------------------------
// manySessions
// ---------------------------------------------------------------------------------------------------------------

/** The bench worker in a child process (bench/scaleWorker.ts). */
class ChildWorker {
  private readonly waiting: ((line: string) => void)[] = [];
  private constructor(private readonly child: ChildProcessByStdio<Writable, Readable, null>) {
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line.startsWith('{')) this.waiting.shift()?.(line);
    });
    child.once('exit', () => {
      for (const w of this.waiting.splice(0)) w(JSON.stringify({ error: 'the bench worker exited' }));
    });
  }

  static async start(root: string, env: Record<string, string>): Promise<ChildWorker> {
    const child = spawn(
      process.execPath,
      ['--expose-gc', path.join(root, '.cache/bench/bench/scaleWorker.js')],
      {
        stdio: ['pipe', 'pipe', 'inherit'],
        env: { ...process.env, ...env },
      },
    );
    const w = new ChildWorker(child);
    const ready = JSON.parse(await w.next()) as { ready?: boolean; error?: string };
    if (!ready.ready) throw new Error(`bench: the bench worker did not start: ${ready.error}`);
    return w;
  }

  private next(): Promise<string> {
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  async ask<T>(cmd: Record<string, unknown>): Promise<T> {
    const answer = this.next();
    this.child.stdin.write(`${JSON.stringify(cmd)}\n`);
    return JSON.parse(await answer) as T;
  }

  async memory(): Promise<{ rss: number; heapUsed: number; external: number; cached: number }> {
    return this.ask({ cmd: 'rss' });
  }

  async close(): Promise<void> {
    const gone = new Promise((r) => this.child.once('exit', r));
    this.child.stdin.write(`${JSON.stringify({ cmd: 'exit' })}\n`);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 30_000);
    await gone;
    clearTimeout(timer);
  }
}

/** Writes a bundle's code to a file a child worker loads (`workflowBundle: {codePath}`). */
function writeBundle(root: string, name: string, bundle: Bundle): string {
  const dir = path.join(root, '.cache/bench/bundles');
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${name}.js`);
  writeFileSync(file, bundle.code);
  return file;
}

const quietLogger = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };

export async function manySessionsGroup(ctx: ScaleContext): Promise<void> {
  const { root, report, raw, quick } = ctx;
  const memoryN = num('BENCH_MANY_MEMORY_SESSIONS', quick ? 200 : 1000);
  const totalN = num('BENCH_MANY_SESSIONS', quick ? 2000 : 10_000);
  const cache = num('BENCH_MANY_CACHE', quick ? 200 : 1000);
  const wakeSamples = num('BENCH_MANY_WAKE_SAMPLES', quick ? 10 : 40);
  const concurrency = num('BENCH_MANY_CONCURRENCY', 50);

  // The bundles compared: ours as the worker builds it (src/domain preloaded into the shared V8 context, so one
  // instance serves every workflow: src/worker/bundle.ts SHARED_WORKFLOW_MODULES), ours without that preload (every
  // workflow evaluates src/domain itself, its schemas built lazily: only those it uses), and the floor (one bare
  // workflow, nothing of ours).
  const bundles = {
    plain: writeBundle(root, 'plain', ctx.bundle),
    unshared: writeBundle(
      root,
      'unshared',
      await bundleWorkflowCode({
        workflowsPath: path.join(root, 'bench/workflows.ts'),
        payloadConverterPath: path.join(root, 'src/contract/payloadConverter.ts'),
        logger: quietLogger,
      }),
    ),
    floor: writeBundle(
      root,
      'floor',
      await bundleWorkflowCode({
        workflowsPath: path.join(root, 'bench/floorWorkflows.ts'),
        payloadConverterPath: path.join(root, 'src/contract/payloadConverter.ts'),
        logger: quietLogger,
      }),
    ),
  };

  const server = await spawnDevServer({ inMemory: true });
  const connection = await Connection.connect({ address: server.address });
  const client = new Client({ connection });
  try {
    /** One idle workflow: ours gets one (tool-less) turn, the bare one one signal → one activity. */
    const makeIdle = async (
      kind: 'ours' | 'bare',
      taskQueue: string,
      id: string,
      sessions: SessionClient,
    ) => {
      if (kind === 'ours') {
        await sessions.start(id, { model: { provider: 'openai-compatible', model: 'bench:k=0' } });
        await sessions.ask(id, text(SIZES.user, 1));
      } else {
        const h = await client.workflow.start('bareSignalActivity', { taskQueue, workflowId: id });
        await h.signal('followup', { message: { content: 'x' } });
      }
    };
    const waitBareDone = async (ids: string[]) => {
      // A bare workflow has run its activity when its history holds the completion (11 events after one signal).
      await pool(ids, concurrency, async (id) => {
        await waitFor(
          async () => (await client.workflow.getHandle(id).describe()).historyLength >= 11,
          'bare idle',
        );
      });
    };

    // ---- 1. RSS per cached idle workflow, by workflow and bundle; every cached (cache > sessions) ----
    const variants: { name: string; kind: 'ours' | 'bare'; bundle: keyof typeof bundles }[] = [
      { name: 'ours', kind: 'ours', bundle: 'plain' },
      { name: 'oursUnshared', kind: 'ours', bundle: 'unshared' },
      { name: 'bareSameBundle', kind: 'bare', bundle: 'plain' },
      { name: 'bareFloorBundle', kind: 'bare', bundle: 'floor' },
    ];
    const memory: Record<string, unknown> = {};
    for (const v of variants) {
      process.stderr.write(`bench: manySessions: memory of ${memoryN} cached idle ${v.name}\n`);
      const taskQueue = `bench-many-mem-${v.name}-${Date.now()}`;
      const w = await ChildWorker.start(root, {
        BENCH_ADDRESS: server.address,
        BENCH_TASK_QUEUE: taskQueue,
        BENCH_BUNDLE: bundles[v.bundle],
        BENCH_MAX_CACHED: String(memoryN + 100),
      });
      const sessions = new SessionClient({ client, taskQueue, searchAttributes: 'off' });
      try {
        // Warm up: the V8 context and the first workflow's code, so the baseline is the worker serving.
        const warm = Array.from({ length: 5 }, (_, i) => `bench-many-warm-${v.name}-${Date.now()}-${i}`);
        for (const id of warm) await makeIdle(v.kind, taskQueue, id, sessions);
        if (v.kind === 'bare') await waitBareDone(warm);
        await sleep(1000);
        const before = await w.memory();
        const ids = Array.from({ length: memoryN }, (_, i) => `bench-many-mem-${v.name}-${Date.now()}-${i}`);
        await pool(ids, concurrency, (id) => makeIdle(v.kind, taskQueue, id, sessions));
        if (v.kind === 'bare') await waitBareDone(ids);
        await sleep(2000);
        const after = await w.memory();
        memory[v.name] = {
          rssPerWorkflowBytes: Math.round((after.rss - before.rss) / memoryN),
          mainHeapPerWorkflowBytes: Math.round((after.heapUsed - before.heapUsed) / memoryN),
          before,
          after,
        };
        // The workflows stay idle on their task queue, which no worker polls any more.
      } finally {
        await w.close();
      }
    }
    const per = (name: string) => (memory[name] as { rssPerWorkflowBytes: number }).rssPerWorkflowBytes;

    // ---- 2. totalN idle sessions on one worker with maxCachedWorkflows = cache: start rate, RSS, wake latency ----
    process.stderr.write(`bench: manySessions: ${totalN} sessions, cache ${cache}\n`);
    const taskQueue = `bench-many-${Date.now()}`;
    const w = await ChildWorker.start(root, {
      BENCH_ADDRESS: server.address,
      BENCH_TASK_QUEUE: taskQueue,
      BENCH_BUNDLE: bundles.plain,
      BENCH_MAX_CACHED: String(cache),
    });
    const sessions = new SessionClient({ client, taskQueue, searchAttributes: 'off' });
    try {
      const warm = `bench-many-warm-${Date.now()}`;
      await makeIdle('ours', taskQueue, warm, sessions);
      await sleep(1000);
      const before = await w.memory();
      const ids = Array.from({ length: totalN }, (_, i) => `bench-many-${Date.now()}-${i}`);
      const t0 = performance.now();
      await pool(ids, concurrency, (id) =>
        sessions.start(id, { model: { provider: 'openai-compatible', model: 'bench:k=0' } }),
      );
      const startSeconds = (performance.now() - t0) / 1000;
      const t1 = performance.now();
      await pool(ids, concurrency, async (id) => void (await sessions.ask(id, text(SIZES.user, 1))));
      const firstTurnSeconds = (performance.now() - t1) / 1000;
      await sleep(2000);
      const after = await w.memory();

      // Wake latency: followup → its model activity starts (the worker's clock) and → the turn ends (`ask`), for a
      // random session of the first half (evicted long ago: the cache holds the last `cache` touched) against one
      // of ten sessions touched last (cached), alternating, with a quiet gap before each.
      const hot = ids.slice(-10);
      const cold = ids.slice(0, Math.floor(ids.length / 2));
      const wake = {
        evicted: { modelStart: [] as number[], turnEnd: [] as number[] },
        cached: { modelStart: [] as number[], turnEnd: [] as number[] },
      };
      let seed = 12345;
      const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
      const used = new Set<string>();
      for (let i = 0; i < wakeSamples * 2; i++) {
        const kind = i % 2 ? 'cached' : 'evicted';
        let id = hot[i % hot.length]!;
        if (kind === 'evicted') {
          do id = cold[Math.floor(random() * cold.length)]!;
          while (used.has(id));
          used.add(id);
        }
        await sleep(200);
        const before = (await w.ask<{ starts: number[] }>({ cmd: 'starts', id })).starts.length;
        const sent = Date.now();
        await sessions.ask(id, `wake ${i}`);
        const turnEnd = Date.now() - sent;
        const starts = (await w.ask<{ starts: number[] }>({ cmd: 'starts', id })).starts;
        wake[kind].turnEnd.push(turnEnd);
        if (starts.length > before) wake[kind].modelStart.push(starts[before]! - sent);
      }
      const end = await w.memory();
      raw.manySessions = {
        memoryPerCachedIdleWorkflow: { sessions: memoryN, variants: memory },
        idle: {
          sessions: totalN,
          maxCachedWorkflows: cache,
          concurrency,
          startsPerSec: totalN / startSeconds,
          firstTurnsPerSec: totalN / firstTurnSeconds,
          before,
          after,
          rssPerIdleSessionBytes: Math.round((after.rss - before.rss) / totalN),
          end,
        },
        wakeMs: {
          evicted: { modelStart: summary(wake.evicted.modelStart), turnEnd: summary(wake.evicted.turnEnd) },
          cached: { modelStart: summary(wake.cached.modelStart), turnEnd: summary(wake.cached.turnEnd) },
        },
      };
      report.manySessionsStartsPerSec = totalN / startSeconds;
      report.memoryPerCachedIdleSessionBytes = {
        ours: per('ours'),
        oursUnshared: per('oursUnshared'),
        bareSameBundle: per('bareSameBundle'),
        bareFloorBundle: per('bareFloorBundle'),
      };
      report.manySessionsRssPerIdleSessionBytes = Math.round((after.rss - before.rss) / totalN);
      report.manySessionsCachedAfter = after.cached;
      report.wakeEvictedP50RatioVsCached = ratio(
        percentile(wake.evicted.turnEnd, 50),
        percentile(wake.cached.turnEnd, 50),
      );
      report.wakeEvictedP95RatioVsCached = ratio(
        percentile(wake.evicted.turnEnd, 95),
        percentile(wake.cached.turnEnd, 95),
      );
      // The sessions stay: the server is stopped below.
    } finally {
      await w.close();
    }
  } finally {
    await connection.close();
    await server.stop({ signal: 'SIGKILL' });
  }
}

// ---------------------------------------------------------------------------------------------------------------
// marathon
// ---------------------------------------------------------------------------------------------------------------

export async function marathonGroup(ctx: ScaleContext): Promise<void> {
  const { report, raw, quick, bundle } = ctx;
  const turns = num('BENCH_MARATHON_TURNS', quick ? 1000 : 5000);
  const batch = num('BENCH_MARATHON_BATCH', 50);
  const wakeSamples = num('BENCH_MARATHON_WAKE_SAMPLES', quick ? 10 : 30);
  const taskQueue = 'bench-marathon';
  // Temporal's default limits (only the embedded dev server's tuning): the server suggests continue-as-new where it
  // would in production.
  const env = await serverAndWorker(ctx, [], taskQueue);
  const { client, sessions } = env;
  try {
    const id = `bench-marathon-${Date.now()}`;
    const model = {
      provider: 'openai-compatible' as const,
      model: process.env.BENCH_MARATHON_MODEL ?? 'bench:k=0',
    };
    await sessions.start(id, { model, tools: ['blob'] });
    const firstRunId = (await sessions.handle(id).describe()).runId;
    const t0 = performance.now();
    for (let i = 0; i < turns; i += batch) {
      const n = Math.min(batch, turns - i);
      await Promise.all(Array.from({ length: n }, (_, j) => sessions.followup(id, text(SIZES.user, i + j))));
      await waitFor(
        async () => {
          const s = await sessions.state(id);
          return s.turn >= i + n && s.status === 'idle';
        },
        `marathon turn ${i + n}`,
      );
      if ((i + n) % 1000 === 0) process.stderr.write(`bench: marathon: ${i + n} turns\n`);
    }
    const seconds = (performance.now() - t0) / 1000;
    const chain = await historyChain(client, id, firstRunId);
    const runs = chain.map((events) => ({
      events: events.length,
      bytes: events.reduce((s, e) => s + eventBytes(e), 0),
      modelSteps: events.filter(
        (e) =>
          e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED &&
          e.activityTaskScheduledEventAttributes?.activityType?.name === 'modelStep',
      ).length,
    }));
    const totalBytes = runs.reduce((s, r) => s + r.bytes, 0);
    const largestIndex = runs.reduce((best, r, i) => (r.events > runs[best]!.events ? i : best), 0);

    // Replay of the largest run, against a trivial history of the same length (as the replay group).
    const largest = { events: chain[largestIndex]! };
    const trivialId = `bench-marathon-trivial-${Date.now()}`;
    const trivial = await client.workflow.start('trivialActivities', {
      taskQueue,
      workflowId: trivialId,
      args: [Math.round((largest.events.length - 5) / 6)],
    });
    await trivial.result();
    const trivialHistory = await trivial.fetchHistory();
    const replay = async (h: unknown, wid: string) => {
      const s = performance.now();
      await Worker.runReplayHistory(
        { workflowBundle: bundle, sinks: transcriptRefSinks(ctx.entries) },
        h,
        wid,
      );
      return performance.now() - s;
    };
    await replay(trivialHistory, trivialId); // warm-up
    const oursReplay = await replay(largest, id);
    const trivialReplay = await replay(trivialHistory, trivialId);

    // Wake latency after the last continue-as-new, against a fresh session, alternating.
    const fresh = `bench-marathon-fresh-${Date.now()}`;
    await sessions.start(fresh, { model, tools: ['blob'] });
    await sessions.ask(fresh, 'warm');
    const wake = {
      marathon: { modelStart: [] as number[], turnEnd: [] as number[] },
      fresh: { modelStart: [] as number[], turnEnd: [] as number[] },
    };
    for (let i = 0; i < wakeSamples * 2; i++) {
      const kind = i % 2 ? 'fresh' : 'marathon';
      const target = kind === 'fresh' ? fresh : id;
      await sleep(150);
      const before = requestStarts.get(target)?.length ?? 0;
      const sent = Date.now();
      await sessions.ask(target, `wake ${i}`);
      wake[kind].turnEnd.push(Date.now() - sent);
      const start = requestStarts.get(target)?.[before];
      if (start !== undefined) wake[kind].modelStart.push(start - sent);
    }
    raw.marathon = {
      turns,
      turnShape: `user 2 KB → ${model.model} (k=0: one text step of 1 KB; k=1: a 4 KB tool step, then a text step)`,
      followupBatch: batch,
      seconds,
      turnsPerSec: turns / seconds,
      runs,
      continueAsNew: runs.length - 1,
      historyBytesPerTurn: totalBytes / turns,
      totalHistoryBytes: totalBytes,
      replay: {
        largestRunEvents: largest.events.length,
        oursMs: oursReplay,
        trivialMs: trivialReplay,
        trivialEvents: trivialHistory.events?.length,
      },
      wakeMs: {
        afterLastContinueAsNew: {
          modelStart: summary(wake.marathon.modelStart),
          turnEnd: summary(wake.marathon.turnEnd),
        },
        fresh: { modelStart: summary(wake.fresh.modelStart), turnEnd: summary(wake.fresh.turnEnd) },
      },
    };
    report.marathonContinueAsNew = runs.length - 1;
    report.marathonHistoryBytesPerTurn = totalBytes / turns;
    report.marathonReplayMsLargestRun = oursReplay;
    report.marathonReplayRatioVsTrivial = oursReplay / trivialReplay;
    report.marathonWakeP50RatioVsFresh = ratio(
      percentile(wake.marathon.turnEnd, 50),
      percentile(wake.fresh.turnEnd, 50),
    );
    report.marathonWakeP95RatioVsFresh = ratio(
      percentile(wake.marathon.turnEnd, 95),
      percentile(wake.fresh.turnEnd, 95),
    );
  } finally {
    await env.close();
  }
}
