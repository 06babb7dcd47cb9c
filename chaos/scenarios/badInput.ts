/**
 * Bad input (rule 5): payloads generated with fast-check (seeded) that the wire protocol refuses — over every signal
 * (`followup`, `steer`, `inject`, `cancel`, `dispose`), the `deliver` update and unknown signal names — sent
 * concurrently and interleaved with valid messages. Payloads that do not decode as JSON at all are sent raw, each to
 * a session of its own, so one that blocks its session does not hide the other figures. Promises: no workflow task
 * fails because of a payload; each refused signal is counted in `state.refused` and changes nothing else (no
 * cancel, no dispose, no event); every refused `deliver` fails with InvalidPayload and the message naming the field
 * (compared with the message the schema gives for that payload); every valid message is accepted and enters once.
 */
import fc from 'fast-check';
import { ApplicationFailure, WorkflowUpdateFailedError } from '@temporalio/client';
import { SessionClient } from '../../src/client';
import { describeZodIssue } from '../../src/domain/util';
import {
  CancelInputSchema,
  DeliverInputSchema,
  DisposeInputSchema,
  LANES,
  laneInputProblem,
  LaneSignalSchema,
  type Lane,
} from '../../src/domain/wire';
import {
  auditHistories,
  auditLog,
  emptyHistoryAudit,
  harmfulFailures,
  readSession,
  sumAudits,
  totalOf,
} from '../audit';
import { eventually, note, WorkerPool } from '../infra';
import type { Rng } from '../rng';
import type { ScenarioEnv, ScenarioReport } from '../scenario';

export interface BadInputParams {
  sessions: number;
  /** Invalid payloads in all (the decoded ones; the raw non-JSON ones come on top). */
  payloads: number;
  /** One valid message after this many invalid ones, per session. */
  validEvery: number;
  inFlight: number;
}

const SIGNALS = ['followup', 'steer', 'inject', 'cancel', 'dispose'] as const;
type Target = (typeof SIGNALS)[number] | 'deliver' | 'unknown';

interface Payload {
  target: Target;
  /** Signal name (the target, or an unknown name). */
  name: string;
  /** `undefined` = sent with no argument. */
  value: unknown;
  /** For deliver: the message the session must answer with. */
  expected?: string;
}

// ---- arbitraries ----

const validMessage = fc.record({
  id: fc.stringMatching(/^[!-~]{1,24}$/),
  content: fc.string({ minLength: 1, maxLength: 40 }),
});
const badId = fc.oneof(
  fc.constant(''),
  fc.constant('x'.repeat(129)),
  fc.constant('has space'),
  fc.constant('naïve'),
  fc.integer(),
  fc.constant(null),
);
const badContent = fc.oneof(
  // Past the size limit: rare, each is a quarter megabyte of history.
  { arbitrary: fc.constant('x'.repeat(256 * 1024 + 1)), weight: 1 },
  { arbitrary: fc.constant(''), weight: 10 },
  ...[
    fc.constant([]),
    fc.constant([{ type: 'image', url: 'http://x' }]),
    fc.constant([{ type: 'text' }]),
    fc.constant([{ type: 'text', text: 5 }]),
    fc.constant([{ type: 'text', text: '' }]),
  ].map((arbitrary) => ({ arbitrary, weight: 10 })),
  ...[
    fc.constant(Array.from({ length: 65 }, () => ({ type: 'text', text: 'b' }))),
    fc.integer(),
    fc.constant(null),
    fc.constant({ text: 'not blocks' }),
  ].map((arbitrary) => ({ arbitrary, weight: 10 })),
);
const badSource = fc.oneof(
  fc.constant({ kind: '' }),
  fc.constant({ kind: 'plugin' }),
  fc.constant({ kind: 'plugin', plugin: '' }),
  fc.constant({ kind: 'tool' }),
  fc.constant({ kind: 'tool', callId: 7 }),
  fc.constant({ kind: 'k'.repeat(129) }),
  fc.constant({ kind: 'plugin', plugin: 'p', blob: 'x'.repeat(5000) }),
  fc.constant({ kind: 5 }),
  fc.constant('user'),
  fc.constant(null),
  fc.constant([]),
);
const extraKey = fc
  .string({ minLength: 1, maxLength: 8 })
  .filter((k) => !['id', 'content', 'source'].includes(k));
const badMessage = fc.oneof(
  fc.tuple(validMessage, badId).map(([m, id]) => ({ ...m, id })),
  fc.tuple(validMessage, badContent).map(([m, content]) => ({ ...m, content })),
  fc.tuple(validMessage, badSource).map(([m, source]) => ({ ...m, source })),
  fc.tuple(validMessage, extraKey, fc.jsonValue()).map(([m, k, v]) => ({ ...m, [k]: v })),
  validMessage.map(({ id }) => ({ id })),
  fc.jsonValue(),
);
const anything = fc.oneof(fc.jsonValue(), fc.constant(undefined));
const lanePayload = fc.oneof(
  badMessage.map((message) => ({ message })),
  fc
    .tuple(validMessage, extraKey, fc.jsonValue())
    .map(([message, k, v]) => ({ message, [k === 'message' ? 'x' : k]: v })),
  validMessage.map((message) => ({ msg: message })),
  anything,
);
const cancelPayload = fc.oneof(
  fc.constant({ cause: { kind: 'disposed' } }),
  fc.constant({ cause: { kind: 'user', extra: 1 } }),
  fc.constant({ cause: { kind: 'hook' } }),
  fc.constant({ cause: { kind: 'hook', reason: 'r'.repeat(4097) } }),
  fc.constant({ cause: 'user' }),
  fc.jsonValue().map((keepInbox) => ({ keepInbox })),
  fc.record({ cause: fc.jsonValue() }),
  anything,
);
const deliverPayload = fc.oneof(
  fc.record({
    lane: fc.oneof(fc.constantFrom(...LANES), fc.constantFrom('later', '', 'FOLLOWUP', 'next-turn')),
    message: fc.oneof(badMessage, validMessage),
  }),
  fc.record({
    lane: fc.constantFrom(...LANES),
    message: validMessage,
    wait: fc.oneof(
      fc.constant({ timeoutMs: 0 }),
      fc.constant({ timeoutMs: 3_600_001 }),
      fc.constant({ timeoutMs: '1s' }),
      fc.constant({ seconds: 1 }),
      fc.constant(5),
    ),
  }),
  fc
    .tuple(fc.constantFrom(...LANES), validMessage, extraKey, fc.jsonValue())
    .map(([lane, message, k, v]) => ({
      lane,
      message,
      [['lane', 'message', 'wait'].includes(k) ? 'x' : k]: v,
    })),
  fc.jsonValue(),
);
const unknownName = fc
  .string({ minLength: 1, maxLength: 30 })
  .filter((n) => !(SIGNALS as readonly string[]).includes(n) && !n.startsWith('__'));

/** The value as the workflow decodes it (JSON round trip); `undefined` stays "no argument". */
function decoded(value: unknown): unknown {
  return value === undefined ? undefined : JSON.parse(JSON.stringify(value));
}

/** The refusal message the session gives a `deliver` payload (the schema's first issue), or undefined if valid. */
export function deliverRefusal(value: unknown): string | undefined {
  const parsed = DeliverInputSchema.safeParse(value);
  if (!parsed.success) return `invalid deliver payload: ${describeZodIssue(parsed.error.issues, 'payload')}`;
  const problem = laneInputProblem(parsed.data.lane, parsed.data.message);
  return problem ? `invalid deliver payload: ${problem}` : undefined;
}

/** Whether the session refuses this decoded signal payload (the same checks as the session's driver). */
function signalRefused(target: Target, value: unknown): boolean {
  switch (target) {
    case 'followup':
    case 'steer':
    case 'inject': {
      const parsed = LaneSignalSchema.safeParse(value);
      return !parsed.success || laneInputProblem(target as Lane, parsed.data.message) !== undefined;
    }
    case 'cancel':
      return !CancelInputSchema.safeParse(value ?? {}).success;
    case 'dispose':
      return !DisposeInputSchema.safeParse(value ?? {}).success;
    case 'unknown':
      return true;
    case 'deliver':
      return deliverRefusal(value) !== undefined;
  }
}

/** `count` refused payloads, generated from the seed; the mix of targets is fixed. */
export function generatePayloads(rng: Rng, count: number): Payload[] {
  const out: Payload[] = [];
  let seed = rng.int(0, 2 ** 30);
  const weights: [Target, number][] = [
    ['followup', 15],
    ['steer', 10],
    ['inject', 15],
    ['cancel', 12],
    ['dispose', 8],
    ['unknown', 10],
    ['deliver', 30],
  ];
  for (const [target, weight] of weights) {
    const want = Math.round((count * weight) / 100);
    let made = 0;
    while (made < want) {
      const batch = fc.sample(arbitraryFor(target), { seed: seed++, numRuns: Math.max(50, want - made) });
      for (const sample of batch) {
        if (made >= want) break;
        const { name, value: raw } = sample;
        const value = decoded(raw);
        if (!signalRefused(target, value)) continue;
        out.push({
          target,
          name,
          value,
          ...(target === 'deliver' ? { expected: deliverRefusal(value)! } : {}),
        });
        made++;
      }
    }
  }
  return rng.shuffle(out);
}

function arbitraryFor(target: Target): fc.Arbitrary<{ name: string; value: unknown }> {
  const named = (name: string, a: fc.Arbitrary<unknown>) => a.map((value) => ({ name, value }));
  switch (target) {
    case 'followup':
    case 'steer':
      return named(target, lanePayload);
    case 'inject':
      // Also valid messages without a source: inject requires one.
      return named(
        target,
        fc.oneof(
          lanePayload,
          validMessage.map((message) => ({ message })),
        ),
      );
    case 'cancel':
      return named(target, cancelPayload);
    case 'dispose':
      return named(target, anything);
    case 'deliver':
      return named(target, deliverPayload);
    case 'unknown':
      return fc
        .tuple(
          unknownName,
          fc.oneof(
            anything,
            validMessage.map((message) => ({ message })),
          ),
        )
        .map(([name, value]) => ({ name, value }));
  }
}

/** Payloads that are not JSON at all, sent raw: each kind goes to a session of its own. */
const RAW_KINDS = [
  { kind: 'json-syntax-signal', encoding: 'json/plain', data: '{"message": ', update: false },
  { kind: 'binary-signal', encoding: 'binary/plain', data: 'raw bytes', update: false },
  { kind: 'unknown-encoding-signal', encoding: 'application/x-chaos', data: 'x', update: false },
  { kind: 'json-syntax-deliver', encoding: 'json/plain', data: '{"lane": ', update: true },
] as const;

export async function badInput(
  env: ScenarioEnv,
  p: BadInputParams,
): Promise<Omit<ScenarioReport, 'scenario' | 'durationMs'>> {
  const { rng, client } = env;
  const taskQueue = `chaos-bad-${rng.seed}`;
  const pool = new WorkerPool(env.root, () => env.server.address, taskQueue);
  await pool.fill(1);
  const sessions = new SessionClient({ client, taskQueue });
  const ids = Array.from({ length: p.sessions }, (_, i) => `chaos-bad-${rng.seed}-${i}`);
  for (const id of ids) await sessions.start(id, { model: { provider: 'scripted', steps: [] } });

  const payloads = generatePayloads(rng.fork('payloads'), p.payloads);
  note(`bad-input: ${payloads.length} refused payloads generated; sending`);
  const refusedSignals = new Map<string, number>(ids.map((id) => [id, 0]));
  const validIds = new Map<string, string[]>(ids.map((id) => [id, []]));
  const deliver = { refused: 0, namedField: 0, exactMessage: 0, accepted: 0, otherErrors: [] as string[] };
  const mismatches: { expected: string; got: string }[] = [];
  const signalErrors: string[] = [];
  let valid = 0;
  let sent = 0;

  const jobs: (() => Promise<void>)[] = [];
  payloads.forEach((payload, i) => {
    const id = ids[i % ids.length]!;
    jobs.push(async () => {
      const handle = client.workflow.getHandle(id);
      if (payload.target === 'deliver') {
        try {
          await handle.executeUpdate('deliver', { args: [payload.value] });
          deliver.accepted++;
        } catch (err) {
          const cause = err instanceof WorkflowUpdateFailedError ? err.cause : undefined;
          if (cause instanceof ApplicationFailure && cause.type === 'InvalidPayload') {
            deliver.refused++;
            if (
              /^invalid deliver payload: (payload|[A-Za-z_$][\w$]*(\.[\w$]+|\[\d+\])*): \S/.test(
                cause.message,
              )
            )
              deliver.namedField++;
            if (cause.message === payload.expected) deliver.exactMessage++;
            else if (mismatches.length < 5)
              mismatches.push({ expected: payload.expected!, got: cause.message });
          } else deliver.otherErrors.push(`${(err as Error).name}: ${(err as Error).message}`.slice(0, 200));
        }
      } else {
        try {
          if (payload.value === undefined) await handle.signal(payload.name);
          else await handle.signal(payload.name, payload.value);
          refusedSignals.set(id, refusedSignals.get(id)! + 1);
        } catch (err) {
          signalErrors.push(`${payload.name}: ${(err as Error).message}`.slice(0, 200));
        }
      }
      sent++;
    });
    // A valid message after every `validEvery` invalid ones of a session.
    if (Math.floor(i / ids.length) % p.validEvery === p.validEvery - 1) {
      const n = valid++;
      const msgId = `${id}:ok:${n}`;
      validIds.get(id)!.push(msgId);
      const lane = rng.pick(['inject', 'inject', 'followup', 'deliver-inject'] as const);
      jobs.push(async () => {
        const content = `valid message ${n}`;
        if (lane === 'followup') await sessions.followup(id, { id: msgId, content });
        else if (lane === 'inject') await sessions.inject(id, { id: msgId, content, source: chaosSource });
        else await sessions.deliver(id, 'inject', { id: msgId, content, source: chaosSource });
      });
    }
  });
  const started = Date.now();
  await runLimited(jobs, p.inFlight);
  const sendMs = Date.now() - started;
  note(`bad-input: sent in ${Math.round(sendMs / 1000)} s; checking`);

  // Raw payloads that are not JSON, each to its own session, then a valid follow-up that must get its turn.
  const raw: Record<string, { workflowTaskFailed: boolean; followupAnswered: boolean; error?: string }> = {};
  await Promise.all(
    RAW_KINDS.map(async (r) => {
      const id = `chaos-bad-${rng.seed}-raw-${r.kind}`;
      await sessions.start(id, { model: { provider: 'scripted', steps: [] } });
      const input = {
        payloads: [{ metadata: { encoding: Buffer.from(r.encoding) }, data: Buffer.from(r.data) }],
      };
      let error: string | undefined;
      try {
        if (r.update)
          await env.connection.withDeadline(Date.now() + 15_000, () =>
            client.workflowService.updateWorkflowExecution({
              namespace: 'default',
              workflowExecution: { workflowId: id },
              request: {
                meta: { updateId: `raw-${r.kind}`, identity: 'chaos' },
                input: { name: 'deliver', args: input },
              },
              waitPolicy: { lifecycleStage: 3 /* COMPLETED */ },
            }),
          );
        else
          await client.workflowService.signalWorkflowExecution({
            namespace: 'default',
            workflowExecution: { workflowId: id },
            signalName: r.kind.startsWith('json') ? 'followup' : 'inject',
            input,
            identity: 'chaos',
          });
      } catch (err) {
        error = (err as Error).message.slice(0, 200);
      }
      let followupAnswered = true;
      try {
        await sessions.followup(id, { id: `${id}:after`, content: 'after the raw payload' });
        await eventually(
          () => sessions.state(id),
          (s) => s.turn >= 1 && s.status === 'idle',
          'the turn',
          15_000,
        );
      } catch {
        followupAnswered = false;
      }
      const history = emptyHistoryAudit();
      await auditHistories(client, id, history);
      raw[r.kind] = {
        workflowTaskFailed: totalOf(history.workflowTaskFailures) > 0,
        followupAnswered,
        ...(error ? { error } : {}),
      };
    }),
  );

  // Every session ends with a follow-up, so pending valid injects enter.
  for (const id of ids) await sessions.followup(id, { id: `${id}:last`, content: 'last' });
  const audits = [];
  const history = emptyHistoryAudit();
  const refusedMismatch: string[] = [];
  const unreadable: string[] = [];
  let aborted = 0;
  let canceledSplices = 0;
  let disposed = 0;
  for (const id of ids) {
    const state = await eventually(
      () => sessions.state(id),
      (s) => s.status === 'idle' && s.pending.nextStep.length + s.pending.nextTurn.length === 0,
      `${id} to settle`,
      120_000,
      500,
    );
    if (state.refused !== refusedSignals.get(id))
      refusedMismatch.push(
        `${id}: state.refused ${state.refused}, refused signals sent ${refusedSignals.get(id)}`,
      );
    if (state.status === 'disposed') disposed++;
    const read = await readSession(sessions, client, id, history);
    if ('error' in read) {
      unreadable.push(read.error);
      continue;
    }
    const { events } = read;
    audits.push(auditLog(events, [...validIds.get(id)!, `${id}:last`]));
    aborted += events.filter((e) => e.type === 'turn/end' && e.data.reason.kind === 'aborted').length;
    canceledSplices += events.filter(
      (e) => e.type === 'agent/inbox/spliced' && e.data.outcome === 'canceled',
    ).length;
  }
  await pool.stopAll();

  const total = sumAudits(audits);
  const byTarget: Record<string, number> = {};
  for (const x of payloads) byTarget[x.target] = (byTarget[x.target] ?? 0) + 1;
  const broken: string[] = [];
  if (harmfulFailures(history))
    broken.push(
      `workflow tasks failed: ${JSON.stringify(history.workflowTaskFailures)} (${Object.values(history.failureSamples)[0]})`,
    );
  for (const [kind, r] of Object.entries(raw)) {
    if (r.workflowTaskFailed || !r.followupAnswered)
      broken.push(
        `a ${kind} payload that is not JSON ${r.workflowTaskFailed ? 'failed the workflow task' : ''}${!r.followupAnswered ? ' and blocked its session' : ''}`,
      );
  }
  if (unreadable.length) broken.push(`${unreadable.length} session log(s) cannot be read: ${unreadable[0]}`);
  if (deliver.accepted) broken.push(`${deliver.accepted} invalid deliver payload(s) were accepted`);
  if (deliver.otherErrors.length)
    broken.push(`${deliver.otherErrors.length} deliver(s) failed otherwise: ${deliver.otherErrors[0]}`);
  if (deliver.namedField < deliver.refused)
    broken.push(`${deliver.refused - deliver.namedField} deliver refusal(s) do not name a field`);
  if (deliver.exactMessage < deliver.refused)
    broken.push(
      `${deliver.refused - deliver.exactMessage} deliver refusal(s) differ from the schema's message: ${JSON.stringify(mismatches[0])}`,
    );
  if (signalErrors.length)
    broken.push(`${signalErrors.length} signal(s) were not delivered: ${signalErrors[0]}`);
  if (refusedMismatch.length) broken.push(`refusal counts differ: ${refusedMismatch[0]}`);
  if (aborted || canceledSplices || disposed)
    broken.push(
      `refused payloads changed sessions: ${aborted} aborted turns, ${canceledSplices} canceled splices, ${disposed} disposed`,
    );
  for (const k of ['userMessage', 'toolResult', 'assistantMessage'] as const) {
    if (total.lost[k]) broken.push(`${total.lost[k]} ${k} lost`);
    if (total.doubled[k]) broken.push(`${total.doubled[k]} ${k} doubled`);
  }
  if (total.invalidLogs) broken.push(`${total.invalidLogs} log(s) break invariants: ${total.problems[0]}`);

  return {
    broken,
    figures: {
      sessions: ids.length,
      invalidPayloads: payloads.length,
      byTarget,
      unknownSignalNames: new Set(payloads.filter((x) => x.target === 'unknown').map((x) => x.name)).size,
      validMessages: valid,
      sendMs,
      payloadsPerSecond: Math.round((sent / sendMs) * 1000),
      deliver,
      deliverMismatchSamples: mismatches,
      refusedSignalsSent: [...refusedSignals.values()].reduce((a, b) => a + b, 0),
      refusedCountMismatches: refusedMismatch,
      rawNonJson: raw,
      workflowTaskFailures: history.workflowTaskFailures,
      workflowTaskFailureSamples: history.failureSamples,
      lost: total.lost,
      doubled: total.doubled,
      turns: { total: total.turns, byEnd: total.turnEnds },
      maxRunEvents: history.maxRunEvents,
      runs: history.runs,
      invalidLogs: total.invalidLogs,
    },
  };
}

/** Runs the jobs with at most `limit` in flight, in order of start. */
async function runLimited(jobs: (() => Promise<void>)[], limit: number): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < jobs.length) await jobs[next++]!();
  };
  await Promise.all(Array.from({ length: Math.min(limit, jobs.length) }, lane));
}

const chaosSource = { kind: 'plugin', plugin: 'chaos' };
