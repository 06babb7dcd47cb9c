/**
 * A long session: `turns` follow-ups, one turn each, through continue-as-new (at the session's default threshold
 * in the full profile), kept a few turns ahead of the session by a sender. Promises: every turn completes, every
 * message enters once, the whole log (across every run) passes the invariant checker, and the history of every run
 * stays under Temporal's limits (the per-run figures are reported beside the limits).
 */
import { SessionClient } from '../../src/client';
import {
  auditHistories,
  auditLog,
  emptyHistoryAudit,
  harmfulFailures,
  HISTORY_LIMITS,
  sumAudits,
} from '../audit';
import { eventually, note, sleep, WorkerPool } from '../infra';
import type { ScenarioEnv, ScenarioReport } from '../scenario';

export interface LongSessionParams {
  turns: number;
  /** Follow-ups sent ahead of the session's current turn. */
  window: number;
  /** Undefined: the session's default (10,000 events). */
  continueAsNewAfterEvents?: number;
  workers: number;
}

export async function longSession(
  env: ScenarioEnv,
  p: LongSessionParams,
): Promise<Omit<ScenarioReport, 'scenario' | 'durationMs'>> {
  const { rng, client } = env;
  const taskQueue = `chaos-long-${rng.seed}`;
  const pool = new WorkerPool(env.root, () => env.server.address, taskQueue);
  await pool.fill(p.workers);
  const sessions = new SessionClient({ client, taskQueue });
  const id = `chaos-long-${rng.seed}`;
  await sessions.start(id, {
    model: { provider: 'scripted', steps: [] },
    ...(p.continueAsNewAfterEvents ? { continueAsNewAfterEvents: p.continueAsNewAfterEvents } : {}),
  });
  const ids: string[] = [];
  const started = Date.now();
  let turn = 0;
  let lastNote = Date.now();
  while (turn < p.turns) {
    while (ids.length < p.turns && ids.length < turn + p.window) {
      const n = ids.length + 1;
      ids.push(`long-${n}`);
      await sessions.followup(id, { id: `long-${n}`, content: `turn ${n}` });
    }
    await sleep(200);
    try {
      turn = (await sessions.state(id)).turn;
    } catch {
      // A query that lands while the run continues as new is asked again.
    }
    if (Date.now() - lastNote > 30_000) {
      note(`long-session: turn ${turn}/${p.turns}`);
      lastNote = Date.now();
    }
  }
  await eventually(
    () => sessions.state(id),
    (s) => s.status === 'idle',
    'the last turn to end',
    120_000,
  );
  const runMs = Date.now() - started;
  note(`long-session: ${p.turns} turns in ${Math.round(runMs / 1000)} s; reading the log`);
  const events = await sessions.allEvents(id);
  const audit = sumAudits([auditLog(events, ids)]);
  const history = emptyHistoryAudit();
  await auditHistories(client, id, history);
  await pool.stopAll();

  const broken: string[] = [];
  if (audit.turns !== p.turns) broken.push(`${audit.turns} turns ended, ${p.turns} expected`);
  const notCompleted = audit.turns - (audit.turnEnds.completed ?? 0);
  if (notCompleted)
    broken.push(`${notCompleted} turn(s) did not complete: ${JSON.stringify(audit.turnEnds)}`);
  for (const k of ['userMessage', 'toolResult', 'assistantMessage'] as const) {
    if (audit.lost[k]) broken.push(`${audit.lost[k]} ${k} lost`);
    if (audit.doubled[k]) broken.push(`${audit.doubled[k]} ${k} doubled`);
  }
  if (audit.invalidLogs) broken.push(`the log breaks invariants: ${audit.problems[0]}`);
  if (history.runsOverError) broken.push(`${history.runsOverError} run(s) over Temporal's history limits`);
  if (harmfulFailures(history))
    broken.push(`workflow tasks failed: ${JSON.stringify(history.workflowTaskFailures)}`);
  const seqs = events.map((e) => e.seq);
  if (seqs.some((s, i) => s !== i)) broken.push('the log has gaps in seq across runs');

  return {
    broken,
    figures: {
      turns: audit.turns,
      byEnd: audit.turnEnds,
      logEvents: events.length,
      runs: history.runs,
      continueAsNewAfterEvents: p.continueAsNewAfterEvents ?? 'default (10,000)',
      maxRunHistoryEvents: history.maxRunEvents,
      maxRunHistoryBytes: history.maxRunBytes,
      limits: HISTORY_LIMITS,
      runsOverWarn: history.runsOverWarn,
      runsOverError: history.runsOverError,
      turnsPerSecond: Math.round((p.turns / runMs) * 10_000) / 10,
      lost: audit.lost,
      doubled: audit.doubled,
      workflowTaskFailures: history.workflowTaskFailures,
      invalidLogs: audit.invalidLogs,
    },
  };
}
