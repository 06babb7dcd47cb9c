/**
 * `npm run bench`: measures history growth, events per step, throughput, latency, replay time and memory of our
 * agentSession on a real dev server, each beside a baseline measured in the same run, and writes
 * bench-results/latest.json (plus a table on stdout). No figure here is asserted anywhere: machines are noisy.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { bundleWorkflowCode, NativeConnection, Runtime, DefaultLogger, Worker } from '@temporalio/worker';
import { createActivities } from '../src/activities';
import { ToolRegistry } from '../src/activities/tools';
import { SessionClient } from '../src/client';
import { findProjectRoot, spawnDevServer } from '../src/devserver';
import { SIZES, benchProvider, blobTool, createBenchActivities, requestStarts, text } from './activities';

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

/** Whether to run a phase (BENCH_ONLY=throughput,latency runs just those); says so on stderr. */
function phase(name: string): boolean {
  const only = process.env.BENCH_ONLY?.split(',').map((s) => s.trim());
  const run = !only || only.includes(name);
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

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  // The naive baseline outgrows Temporal's default history limit (50 MB) before step 200 with these message sizes —
  // the problem this project solves — so the bench server allows 400 MB to let the baseline finish the comparison.
  const server = await spawnDevServer({
    inMemory: true,
    dynamicConfig: [
      'limit.historySize.error=419430400',
      'limit.historySize.warn=314572800',
      'limit.historyCount.error=204800',
      // Keep the replay session in one run of about 10,000 events (the server would suggest continue-as-new sooner).
      'limit.historyCount.suggestContinueAsNew=100000',
      'limit.historySize.suggestContinueAsNew=104857600',
    ],
  });
  // The naive baseline's history pages are larger than gRPC's default 4 MB message limit.
  const connection = await Connection.connect({
    address: server.address,
    channelArgs: { 'grpc.max_receive_message_length': 512 * 1024 * 1024 },
  });
  const client = new Client({ connection });
  const native = await NativeConnection.connect({ address: server.address });
  const bundle = await bundleWorkflowCode({
    workflowsPath: path.join(root, 'bench/workflows.ts'),
    logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} },
  });
  const taskQueue = 'bench';
  const activities = {
    ...createActivities({
      tools: new ToolRegistry([blobTool]),
      providers: { 'openai-compatible': benchProvider },
    }),
    ...createBenchActivities(),
  };
  const worker = await Worker.create({
    connection: native,
    taskQueue,
    workflowBundle: bundle,
    activities,
    maxCachedWorkflows: 2000,
    maxHeartbeatThrottleInterval: '1 second',
  });
  const running = worker.run();
  const sessions = new SessionClient({ client, taskQueue });
  const report: Record<string, unknown> = {};
  const raw: Record<string, unknown> = {};

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
  printTable(result);
}

function printTable(result: Record<string, unknown>): void {
  const rows: [string, unknown][] = Object.entries(result).filter(
    ([k]) => !['raw', 'machine', 'measuredAt', 'quick'].includes(k),
  );
  for (const [k, v] of rows)
    console.log(`${k.padEnd(34)} ${typeof v === 'number' ? v.toFixed(3) : JSON.stringify(v)}`);
  console.log(`\nraw figures: bench-results/latest.json`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
