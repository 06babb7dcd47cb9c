/**
 * Server outages: sessions run turns (tools, contexts, continue-as-new) on a pool of CLI workers while the dev server
 * is SIGKILLed mid-turn and started again on the same SQLite file and port, `restarts` times. While it is down,
 * every session is also sent an inject by signal and another through `deliver`. Promises: each such call is either
 * acknowledged once the server is back or refused to the caller with an error (then the caller sends it again with
 * its id) — never lost, never doubled; every session completes its work; the workers live through the outage; every
 * log passes the invariant checker; no workflow task fails.
 */
import { SessionClient } from '../../src/client';
import { auditLog, emptyHistoryAudit, harmfulFailures, readSession, sumAudits, totalOf } from '../audit';
import { crashScript, SessionDriver } from '../driver';
import { describeWaiting, note, sleep, spread, WorkerPool } from '../infra';
import type { ScenarioEnv, ScenarioReport } from '../scenario';

export interface ServerParams {
  sessions: number;
  restarts: number;
  workers: number;
  minTurns: number;
  /** How long the server stays down before it is started again. */
  downMs: [number, number];
  delayMs: [number, number];
  thinkMs: [number, number];
  continueAsNewAfterEvents: number;
  turnTimeoutMs: number;
}

interface DownMessage {
  session: string;
  id: string;
  path: 'signal' | 'deliver';
  /** What the first call did: answered (acknowledged) or threw (refused, with its error). */
  outcome?: 'acknowledged' | 'refused';
  error?: string;
  /** Resolved after the outage, by the first call or by the caller's retry with the same id. */
  acknowledged?: boolean;
}

export async function serverOutages(
  env: ScenarioEnv,
  p: ServerParams,
): Promise<Omit<ScenarioReport, 'scenario' | 'durationMs'>> {
  const { rng } = env;
  const taskQueue = `chaos-server-${rng.seed}`;
  const pool = new WorkerPool(env.root, () => env.server.address, taskQueue);
  await pool.fill(p.workers);
  const workerPids = pool.live().map((w) => w.pid);
  const sessions = new SessionClient({ client: env.client, taskQueue });
  let restarting = true;
  const ids = Array.from({ length: p.sessions }, (_, i) => `chaos-server-${rng.seed}-${i}`);
  const drivers = ids.map(
    (id) =>
      new SessionDriver({
        id,
        rng: rng.fork(id),
        sessions,
        more: (d) => restarting || d.turnsSent < p.minTurns,
        thinkMs: p.thinkMs,
        askShare: 0.5,
        turnTimeoutMs: p.turnTimeoutMs,
        diagnose: (sid) => describeWaiting(env.client, sid),
      }),
  );
  for (const d of drivers) {
    await sessions.start(d.id, {
      model: { provider: 'scripted', steps: crashScript(rng.fork(`${d.id}:script`), 150, p.delayMs) },
      tools: ['sleep', 'emit_context', 'inject_self', 'echo'],
      continueAsNewAfterEvents: p.continueAsNewAfterEvents,
    });
  }
  const driving = Promise.all(drivers.map((d) => d.run()));

  const outages: { killAt: number; readyAt: number }[] = [];
  const down: DownMessage[] = [];
  for (let r = 0; r < p.restarts; r++) {
    await sleep(rng.int(3_000, 8_000));
    const killAt = Date.now();
    await env.server.kill();
    note(`server: killed (outage ${r + 1}/${p.restarts})`);
    const calls = ids.flatMap((session) =>
      (['signal', 'deliver'] as const).map((path) => {
        const m: DownMessage = { session, id: `${session}:down${r + 1}:${path}`, path };
        down.push(m);
        const message = { id: m.id, content: `sent while the server is down (${path})`, source: chaosSource };
        const call =
          path === 'signal'
            ? sessions.inject(session, message)
            : sessions.deliver(session, 'inject', message);
        return call.then(
          () => {
            m.outcome = 'acknowledged';
            m.acknowledged = true;
          },
          (err: Error) => {
            m.outcome = 'refused';
            m.error = `${err.name}: ${err.message}`.slice(0, 300);
          },
        );
      }),
    );
    await sleep(rng.int(...p.downMs));
    await env.server.restart();
    const readyAt = Date.now();
    outages.push({ killAt, readyAt });
    note(`server: back after ${readyAt - killAt} ms`);
    await Promise.all(calls);
    // A caller told "refused" sends the message again with its id (the session ignores ids it has seen).
    for (const m of down.filter((d) => d.outcome === 'refused' && !d.acknowledged)) {
      const message = { id: m.id, content: `sent again after a refusal (${m.path})`, source: chaosSource };
      for (let i = 0; i < 20 && !m.acknowledged; i++) {
        try {
          if (m.path === 'signal') await sessions.inject(m.session, message);
          else await sessions.deliver(m.session, 'inject', message);
          m.acknowledged = true;
        } catch {
          await sleep(500);
        }
      }
    }
  }
  restarting = false;
  note('server: outages done; sessions finish their turns');
  await driving;
  await Promise.all(drivers.map((d) => d.finish()));

  note('server: reading every log and history');
  const audits = [];
  const unreadable: string[] = [];
  const history = emptyHistoryAudit();
  const recoverMs: number[] = [];
  for (const d of drivers) {
    const read = await readSession(sessions, env.client, d.id, history);
    if ('error' in read) {
      unreadable.push(read.error);
      continue;
    }
    const { events } = read;
    const expected = [
      ...d.sentIds,
      ...down.filter((m) => m.session === d.id && m.acknowledged).map((m) => m.id),
    ];
    audits.push(auditLog(events, expected));
    for (const o of outages) {
      const next = events.find((e) => e.time > o.readyAt);
      if (next) recoverMs.push(next.time - o.readyAt);
    }
  }
  const workersLived = workerPids.filter((pid) => pool.has(pid)).length;
  await pool.stopAll();

  const total = sumAudits(audits);
  const broken: string[] = [];
  const stuck = drivers.filter((d) => d.stuck);
  if (stuck.length) broken.push(`${stuck.length} session(s) did not complete their work: ${stuck[0]!.stuck}`);
  if (unreadable.length) broken.push(`${unreadable.length} session log(s) cannot be read: ${unreadable[0]}`);
  for (const k of ['userMessage', 'toolResult', 'assistantMessage'] as const) {
    if (total.lost[k]) broken.push(`${total.lost[k]} ${k} lost`);
    if (total.doubled[k]) broken.push(`${total.doubled[k]} ${k} doubled`);
  }
  const unacknowledged = down.filter((m) => !m.acknowledged);
  if (unacknowledged.length)
    broken.push(`${unacknowledged.length} message(s) sent during an outage were never acknowledged`);
  const unclear = down.filter((m) => m.outcome === 'refused' && !/\S{3}/.test(m.error ?? ''));
  if (unclear.length) broken.push(`${unclear.length} refusal(s) came without an error message`);
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
  if (pool.unexpectedExits || workersLived < workerPids.length)
    broken.push(`${workerPids.length - workersLived} worker(s) did not live through the outages`);

  const refused = down.filter((m) => m.outcome === 'refused');
  return {
    broken,
    figures: {
      restarts: outages.length,
      downMs: spread(outages.map((o) => o.readyAt - o.killAt)),
      sessions: drivers.length,
      sessionsStuck: stuck.length,
      stuckSamples: stuck.slice(0, 5).map((d) => d.stuck),
      sessionsUnreadable: unreadable.length,
      workers: p.workers,
      workersLived,
      messages: {
        sent: drivers.reduce((n, d) => n + d.sentIds.length, 0) + down.length,
        sentWhileDown: down.length,
        acknowledgedFirstTime: down.filter((m) => m.outcome === 'acknowledged').length,
        refusedThenResent: refused.length,
        refusalSamples: [...new Set(refused.map((m) => m.error))].slice(0, 5),
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
      runs: history.runs,
      invalidLogs: total.invalidLogs,
      recoverAfterRestart: spread(recoverMs),
      callerRetries: {
        count: drivers.reduce((n, d) => n + d.refusals.length, 0),
        samples: [...new Set(drivers.flatMap((d) => d.refusals))].slice(0, 5),
      },
    },
  };
}

const chaosSource = { kind: 'plugin', plugin: 'chaos' };
