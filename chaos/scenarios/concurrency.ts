/**
 * Concurrency: `senders` callers send `messages` messages each to one session at the same time, each sender one
 * message after the other, on every lane (follow-ups start turns, steers and injects join them), by signal or
 * through `deliver`; some messages are sent twice with their id (a caller retrying), by the same path or the other.
 * The session continues as new every few hundred events, so deliveries also cross runs. Promises (rules 2, 4, 9):
 * each id is inserted exactly once and enters as exactly one `user/message`; a retried `deliver` reports
 * `duplicate: true`; each sender's messages are inserted in the order it sent them, and enter in that order within
 * a lane's list; no workflow task fails; the log passes the invariant checker.
 */
import { SessionClient } from '../../src/client';
import type { SessionEvent } from '../../src/domain/events';
import { auditHistories, auditLog, emptyHistoryAudit, harmfulFailures, sumAudits } from '../audit';
import { eventually, note, WorkerPool } from '../infra';
import type { ScenarioEnv, ScenarioReport } from '../scenario';

export interface ConcurrencyParams {
  senders: number;
  messages: number;
  /** Share of messages sent a second time with their id. */
  retryShare: number;
  workers: number;
  continueAsNewAfterEvents: number;
}

type Lane = 'followup' | 'steer' | 'inject';

interface Sent {
  id: string;
  sender: number;
  index: number;
  lane: Lane;
  path: 'signal' | 'deliver';
  retriedBy?: 'signal' | 'deliver';
}

export async function concurrency(
  env: ScenarioEnv,
  p: ConcurrencyParams,
): Promise<Omit<ScenarioReport, 'scenario' | 'durationMs'>> {
  const { rng, client } = env;
  const taskQueue = `chaos-conc-${rng.seed}`;
  const pool = new WorkerPool(env.root, () => env.server.address, taskQueue);
  await pool.fill(p.workers);
  const sessions = new SessionClient({ client, taskQueue });
  const id = `chaos-conc-${rng.seed}`;
  await sessions.start(id, {
    model: { provider: 'scripted', steps: [] },
    continueAsNewAfterEvents: p.continueAsNewAfterEvents,
  });

  const sent: Sent[] = [];
  const duplicates = { deliverRetries: 0, reportedDuplicate: 0, firstReportedDuplicate: 0 };
  const errors: string[] = [];
  const started = Date.now();
  await Promise.all(
    Array.from({ length: p.senders }, async (_, sender) => {
      const r = rng.fork(`sender-${sender}`);
      for (let index = 0; index < p.messages; index++) {
        const lane = r.pick(['followup', 'followup', 'steer', 'inject', 'inject'] as const);
        const m: Sent = {
          id: `s${sender}-m${index}`,
          sender,
          index,
          lane,
          path: r.chance(0.5) ? 'signal' : 'deliver',
        };
        if (r.chance(p.retryShare))
          m.retriedBy = r.chance(0.5) ? m.path : m.path === 'signal' ? 'deliver' : 'signal';
        sent.push(m);
        const message = {
          id: m.id,
          content: `message ${index} of sender ${sender}`,
          ...(lane === 'inject' ? { source: { kind: 'plugin', plugin: `sender-${sender}` } } : {}),
        };
        const send = async (path: 'signal' | 'deliver', retry: boolean) => {
          if (path === 'signal') {
            await sessions[lane](id, message);
            return;
          }
          const receipt = await sessions.deliver(id, lane, message);
          if (retry) {
            duplicates.deliverRetries++;
            if (receipt.duplicate) duplicates.reportedDuplicate++;
          } else if (receipt.duplicate) duplicates.firstReportedDuplicate++;
        };
        try {
          await send(m.path, false);
          if (m.retriedBy) await send(m.retriedBy, true);
        } catch (err) {
          errors.push(`${m.id}: ${(err as Error).name}: ${(err as Error).message}`.slice(0, 300));
        }
      }
    }),
  );
  const sendMs = Date.now() - started;
  note(
    `concurrency: ${sent.length} messages sent in ${Math.round(sendMs / 1000)} s; waiting for the session`,
  );
  // A last follow-up, so that injects still pending enter; then everything has entered.
  await sessions.followup(id, { id: 'last', content: 'last' });
  await eventually(
    () => sessions.state(id),
    (s) => s.status === 'idle' && s.pending.nextStep.length + s.pending.nextTurn.length === 0,
    'the session to run every message',
    300_000,
    500,
  );
  const settledMs = Date.now() - started;
  const events = await sessions.allEvents(id);
  const audit = sumAudits([auditLog(events, [...sent.map((m) => m.id), 'last'])]);
  const history = emptyHistoryAudit();
  await auditHistories(client, id, history);
  await pool.stopAll();

  const order = orderFigures(events, sent);
  const broken: string[] = [];
  if (errors.length) broken.push(`${errors.length} send(s) failed: ${errors[0]}`);
  if (order.insertedNotOnce) broken.push(`${order.insertedNotOnce} id(s) were not inserted exactly once`);
  if (order.senderOrderBroken)
    broken.push(`${order.senderOrderBroken} sender(s) saw their insertion order changed`);
  if (order.laneOrderBroken) broken.push(`${order.laneOrderBroken} sender lane(s) entered out of order`);
  if (duplicates.reportedDuplicate < duplicates.deliverRetries)
    broken.push(
      `${duplicates.deliverRetries - duplicates.reportedDuplicate} retried deliver(s) not reported duplicate`,
    );
  if (duplicates.firstReportedDuplicate)
    broken.push(`${duplicates.firstReportedDuplicate} first deliver(s) reported duplicate`);
  for (const k of ['userMessage', 'toolResult', 'assistantMessage'] as const) {
    if (audit.lost[k]) broken.push(`${audit.lost[k]} ${k} lost`);
    if (audit.doubled[k]) broken.push(`${audit.doubled[k]} ${k} doubled`);
  }
  if (audit.invalidLogs) broken.push(`the log breaks invariants: ${audit.problems[0]}`);
  if (harmfulFailures(history))
    broken.push(`workflow tasks failed: ${JSON.stringify(history.workflowTaskFailures)}`);
  const notCompleted = audit.turns - (audit.turnEnds.completed ?? 0);
  if (notCompleted)
    broken.push(`${notCompleted} turn(s) did not complete: ${JSON.stringify(audit.turnEnds)}`);

  const byPath = { signal: 0, deliver: 0 };
  const byLane: Record<string, number> = {};
  for (const m of sent) {
    byPath[m.path]++;
    byLane[m.lane] = (byLane[m.lane] ?? 0) + 1;
  }
  return {
    broken,
    figures: {
      senders: p.senders,
      messagesPerSender: p.messages,
      messages: sent.length,
      byLane,
      byPath,
      retried: sent.filter((m) => m.retriedBy).length,
      duplicates,
      sendMs,
      settledMs,
      messagesPerSecond: Math.round((sent.length / sendMs) * 1000),
      ...order,
      userMessages: audit.counted.userMessage,
      lost: audit.lost,
      doubled: audit.doubled,
      turns: { total: audit.turns, byEnd: audit.turnEnds },
      workflowTaskFailures: history.workflowTaskFailures,
      runs: history.runs,
      maxRunEvents: history.maxRunEvents,
      invalidLogs: audit.invalidLogs,
      sendErrors: errors.slice(0, 5),
    },
  };
}

/** How ids were inserted and entered, against what each sender sent. */
function orderFigures(events: readonly SessionEvent[], sent: readonly Sent[]) {
  const insertedAt = new Map<string, number[]>();
  const enteredAt = new Map<string, number>();
  for (const e of events) {
    if (e.type === 'agent/inbox/spliced')
      for (const m of e.data.inserted) insertedAt.set(m.id, [...(insertedAt.get(m.id) ?? []), e.seq]);
    if (e.type === 'user/message') enteredAt.set(e.data.message.id, e.seq);
  }
  const insertedNotOnce = sent.filter((m) => insertedAt.get(m.id)?.length !== 1).length;
  let senderOrderBroken = 0;
  let laneOrderBroken = 0;
  const senders = new Set(sent.map((m) => m.sender));
  for (const s of senders) {
    const mine = sent.filter((m) => m.sender === s).sort((a, b) => a.index - b.index);
    const seqs = mine.map((m) => insertedAt.get(m.id)?.[0] ?? -1);
    if (seqs.some((q, i) => i > 0 && q <= seqs[i - 1]!)) senderOrderBroken++;
    // Follow-ups wait on next-turn, steers and injects on next-step: within one list, entry keeps send order.
    for (const list of [['followup'], ['steer', 'inject']]) {
      const entered = mine.filter((m) => list.includes(m.lane)).map((m) => enteredAt.get(m.id) ?? -1);
      if (entered.some((q, i) => i > 0 && q <= entered[i - 1]!)) laneOrderBroken++;
    }
  }
  return { insertedNotOnce, senderOrderBroken, laneOrderBroken };
}
