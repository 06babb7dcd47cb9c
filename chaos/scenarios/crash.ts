/**
 * Crash campaign: sessions with multi-step scripts (parallel tools with contexts, self-injects, continue-as-new every
 * few turns) run on a pool of CLI workers while workers are SIGKILLed at chosen kinds of moments — during a model
 * call, during a tool call, right after a message was sent (its workflow task in flight), and between turns (the
 * session's sticky worker dies, then a message arrives). A replacement starts after every kill. Promises (rule 32):
 * every session completes its work, every turn ends `completed`, no tool result is an error, nothing is lost or
 * doubled, every log passes the invariant checker, no workflow task fails.
 */
import { temporal } from '@temporalio/proto';
import { SessionClient } from '../../src/client';
import { auditLog, emptyHistoryAudit, harmfulFailures, readSession, sumAudits, totalOf } from '../audit';
import { crashScript, SessionDriver, type BeforeSend } from '../driver';
import { describeWaiting, note, pidOfIdentity, sleep, spread, WorkerPool } from '../infra';
import type { ScenarioEnv, ScenarioReport } from '../scenario';

const STARTED = temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED;
const EventType = temporal.api.enums.v1.EventType;

export const MOMENTS = ['model-call', 'tool-call', 'workflow-task', 'between-turns'] as const;
export type Moment = (typeof MOMENTS)[number] | 'any';

export interface CrashParams {
  sessions: number;
  kills: number;
  workers: number;
  /** Turns every session runs at least (they go on while kills remain). */
  minTurns: number;
  /** Scripted model delays and tool sleeps. */
  delayMs: [number, number];
  thinkMs: [number, number];
  continueAsNewAfterEvents: number;
  /** Longest wait for one turn before the session counts as stuck. */
  turnTimeoutMs: number;
}

interface KillRecord {
  moment: Moment;
  pid: number;
  at: number;
  victim?: string;
  recoverMs?: number;
}

export async function crashCampaign(
  env: ScenarioEnv,
  p: CrashParams,
): Promise<Omit<ScenarioReport, 'scenario' | 'durationMs'>> {
  const { rng } = env;
  const taskQueue = `chaos-crash-${rng.seed}`;
  const pool = new WorkerPool(env.root, () => env.server.address, taskQueue);
  await pool.fill(p.workers);
  const sessions = new SessionClient({ client: env.client, taskQueue });
  const kills: KillRecord[] = [];
  const replacementErrors: string[] = [];
  let killing = true;

  const kill = async (pid: number, moment: Moment, victim?: string) => {
    await pool.kill(pid);
    kills.push({ moment, pid, at: Date.now(), ...(victim ? { victim } : {}) });
    note(`crash: kill ${kills.length}/${p.kills} (${moment}${victim ? ` of ${victim}` : ''}), worker ${pid}`);
    pool.start().ready.catch((err: Error) => replacementErrors.push(err.message.slice(0, 300)));
  };

  const ids = Array.from({ length: p.sessions }, (_, i) => `chaos-crash-${rng.seed}-${i}`);
  const drivers = ids.map(
    (id) =>
      new SessionDriver({
        id,
        rng: rng.fork(id),
        sessions,
        more: (d) => killing || d.turnsSent < p.minTurns,
        thinkMs: p.thinkMs,
        askShare: 0.6,
        turnTimeoutMs: p.turnTimeoutMs,
        diagnose: (sid) => describeWaiting(env.client, sid),
      }),
  );
  for (const d of drivers) {
    const script = crashScript(rng.fork(`${d.id}:script`), 150, p.delayMs);
    await sessions.start(d.id, {
      model: { provider: 'scripted', steps: script },
      tools: ['sleep', 'emit_context', 'inject_self', 'echo'],
      continueAsNewAfterEvents: p.continueAsNewAfterEvents,
    });
  }
  const driving = Promise.all(drivers.map((d) => d.run()));

  /** The worker that ran the session's last workflow task (it holds the session in its sticky cache). */
  const stickyWorker = async (id: string): Promise<number | undefined> => {
    const page = await env.client.workflowService.getWorkflowExecutionHistoryReverse({
      namespace: 'default',
      execution: { workflowId: id },
      maximumPageSize: 50,
    });
    const started = page.history?.events?.find(
      (e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
    );
    return pidOfIdentity(started?.workflowTaskStartedEventAttributes?.identity);
  };

  /** Kills the worker running an activity of `type` of some session; false if none ran within the wait. */
  const killDuringActivity = async (type: 'modelStep' | 'executeTool', moment: Moment): Promise<boolean> => {
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      for (const id of rng.shuffle(ids)) {
        const d = await env.client.workflow.getHandle(id).describe();
        const running = (d.raw.pendingActivities ?? []).find(
          (a) =>
            a.activityType?.name === type &&
            a.state === STARTED &&
            pool.ready().some((w) => w.pid === pidOfIdentity(a.lastWorkerIdentity)),
        );
        if (running) {
          await kill(pidOfIdentity(running.lastWorkerIdentity)!, moment, id);
          return true;
        }
      }
      await sleep(100);
    }
    return false;
  };

  /** Kills a session's sticky worker around its next message: just after it was sent, or before it is sent. */
  const killAroundMessage = async (moment: 'workflow-task' | 'between-turns'): Promise<boolean> => {
    // Prefer a session pausing between turns: it sends soonest.
    const free = drivers.filter((d) => !d.hasHook && !d.stuck && d.phase !== 'done');
    const thinking = free.filter((d) => d.phase === 'thinking');
    if (free.length === 0) return false;
    const driver = rng.pick(thinking.length ? thinking : free);
    let done!: (ok: boolean) => void;
    const finished = new Promise<boolean>((resolve) => (done = resolve));
    const hook: BeforeSend = async (d, send) => {
      try {
        const sticky = await stickyWorker(d.id);
        const ready = pool.ready();
        const target =
          sticky !== undefined && ready.some((w) => w.pid === sticky) ? sticky : rng.pick(ready).pid;
        if (moment === 'between-turns') {
          await kill(target, moment, d.id);
          await send();
        } else {
          const sending = send();
          await sleep(rng.int(0, 20));
          await kill(target, moment, d.id);
          await sending;
        }
        done(true);
      } catch (err) {
        note(`crash: ${moment} kill failed: ${(err as Error).message}`);
        done(false);
      }
    };
    driver.beforeNextSend(hook);
    const timedOut = await Promise.race([finished.then(() => false), sleep(120_000).then(() => true)]);
    // A hook that has not run by now is dropped; one that is running is waited for (it kills exactly once).
    if (timedOut && driver.clearHook(hook)) return false;
    return finished;
  };

  const moments = rng.shuffle(Array.from({ length: p.kills }, (_, i) => MOMENTS[i % MOMENTS.length]!));
  for (const moment of moments) {
    // Always one worker left: the next kill waits until the pool is whole again.
    while (pool.ready().length < p.workers) await sleep(100);
    await sleep(rng.int(0, 1500));
    const hit =
      moment === 'model-call'
        ? await killDuringActivity('modelStep', moment)
        : moment === 'tool-call'
          ? await killDuringActivity('executeTool', moment)
          : await killAroundMessage(moment);
    if (!hit && pool.ready().length > 0) await kill(rng.pick(pool.ready()).pid, 'any');
  }
  killing = false;
  note('crash: kills done; sessions finish their turns');
  await driving;
  await Promise.all(drivers.map((d) => d.finish()));

  note('crash: reading every log and history');
  const audits = [];
  const unreadable: string[] = [];
  const history = emptyHistoryAudit();
  for (const d of drivers) {
    const read = await readSession(sessions, env.client, d.id, history);
    if ('error' in read) {
      unreadable.push(read.error);
      continue;
    }
    const { events } = read;
    audits.push(auditLog(events, d.sentIds));
    for (const k of kills.filter((k) => k.victim === d.id)) {
      const next = events.find((e) => e.time > k.at);
      if (next) k.recoverMs = next.time - k.at;
    }
  }
  await pool.stopAll();

  const total = sumAudits(audits);
  const broken: string[] = [];
  const stuck = drivers.filter((d) => d.stuck);
  if (stuck.length) broken.push(`${stuck.length} session(s) did not complete their work: ${stuck[0]!.stuck}`);
  if (unreadable.length) broken.push(`${unreadable.length} session log(s) cannot be read: ${unreadable[0]}`);
  if (kills.length < p.kills) broken.push(`only ${kills.length} of ${p.kills} kills happened`);
  for (const k of ['userMessage', 'toolResult', 'assistantMessage'] as const) {
    if (total.lost[k]) broken.push(`${total.lost[k]} ${k} lost`);
    if (total.doubled[k]) broken.push(`${total.doubled[k]} ${k} doubled`);
  }
  const notCompleted = total.turns - (total.turnEnds.completed ?? 0);
  if (notCompleted)
    broken.push(
      `${notCompleted} of ${total.turns} turns did not complete: ${JSON.stringify(total.turnEnds)}`,
    );
  if (totalOf(total.toolErrors))
    broken.push(`${totalOf(total.toolErrors)} tool results are errors: ${JSON.stringify(total.toolErrors)}`);
  if (total.invalidLogs) broken.push(`${total.invalidLogs} log(s) break invariants: ${total.problems[0]}`);
  if (harmfulFailures(history))
    broken.push(`workflow tasks failed: ${JSON.stringify(history.workflowTaskFailures)}`);
  if (pool.unexpectedExits) broken.push(`${pool.unexpectedExits} worker(s) exited without being killed`);
  if (replacementErrors.length) broken.push(`replacement workers failed to start: ${replacementErrors[0]}`);

  const byMoment: Record<string, number> = {};
  for (const k of kills) byMoment[k.moment] = (byMoment[k.moment] ?? 0) + 1;
  const refusals = drivers.flatMap((d) => d.refusals);
  return {
    broken,
    figures: {
      kills: { total: kills.length, byMoment },
      sessions: drivers.length,
      sessionsStuck: stuck.length,
      stuckSamples: stuck.slice(0, 5).map((d) => d.stuck),
      sessionsUnreadable: unreadable.length,
      workers: p.workers,
      messages: {
        sent: drivers.reduce((n, d) => n + d.sentIds.length, 0),
        userMessages: total.counted.userMessage,
        toolResults: total.counted.toolResult,
        assistantMessages: total.counted.assistantMessage,
      },
      turnMs: spread(drivers.flatMap((d) => d.turnMs)),
      lost: total.lost,
      doubled: total.doubled,
      turns: { total: total.turns, byEnd: total.turnEnds },
      toolErrors: total.toolErrors,
      workflowTaskFailures: history.workflowTaskFailures,
      workflowTaskFailureSamples: history.failureSamples,
      workflowTaskTimeouts: history.workflowTaskTimeouts,
      activityTimeoutsFinal: history.activityTimeouts,
      runs: history.runs,
      maxRunEvents: history.maxRunEvents,
      invalidLogs: total.invalidLogs,
      recoverAfterKill: spread(kills.flatMap((k) => (k.recoverMs !== undefined ? [k.recoverMs] : []))),
      workerStart: spread(pool.startMs),
      callerRetries: { count: refusals.length, samples: [...new Set(refusals)].slice(0, 5) },
    },
  };
}
