/**
 * Property tests: random lane traffic (followup / steer / inject, duplicates included) interleaved with random step
 * outcomes, run through the simulate driver. Whatever happens, the log is valid, the inbox is the fold of its splices,
 * the transcript is the projection of the log, follow-ups never share a turn, and idle injects never open a turn.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  checkLog,
  foldInbox,
  projectTranscript,
  type Lane,
  type SessionEvent,
  type SpliceData,
  type TranscriptEntry,
} from '../../src/domain/index';
import {
  msg,
  Simulation,
  type Delivery,
  type ModelPlan,
  type PreStepPlan,
  type Script,
} from '../support/simulate';

// ---- arbitraries ----

/** A small id pool, so the same id is often sent again (on the same or another lane). */
const deliveryArb: fc.Arbitrary<Delivery> = fc
  .record({
    lane: fc.constantFrom<Lane>('followup', 'steer', 'inject'),
    n: fc.nat({ max: 11 }),
    text: fc.constantFrom('hi', 'again', 'ctx'),
  })
  .map(({ lane, n, text }) => ({
    lane,
    message: msg(`m${n}`, text, lane === 'inject' ? { kind: 'plugin', plugin: 'watcher' } : { kind: 'user' }),
  }));

type PreStepGen = { kind: 'default' | 'reject' | 'throw' | 'empty' } | { kind: 'extra'; count: number };
const preStepArb: fc.Arbitrary<PreStepGen> = fc.oneof(
  { arbitrary: fc.constant({ kind: 'default' as const }), weight: 6 },
  { arbitrary: fc.constant({ kind: 'reject' as const }), weight: 1 },
  { arbitrary: fc.constant({ kind: 'throw' as const }), weight: 1 },
  { arbitrary: fc.constant({ kind: 'empty' as const }), weight: 1 },
  {
    arbitrary: fc.record({ kind: fc.constant('extra' as const), count: fc.integer({ min: 1, max: 2 }) }),
    weight: 1,
  },
);

const toolCallArb = fc.record({ contexts: fc.nat({ max: 2 }), concludes: fc.boolean() });
const modelArb: fc.Arbitrary<ModelPlan> = fc.oneof(
  { arbitrary: fc.constant<ModelPlan>({ text: 'done' }), weight: 4 },
  {
    arbitrary: fc.array(toolCallArb, { minLength: 1, maxLength: 3 }).map<ModelPlan>((calls) => ({
      text: 'using tools',
      toolCalls: calls.map((c, i) => ({
        name: `tool${i}`,
        contexts: Array.from({ length: c.contexts }, (_, k) => `context ${k}`),
        concludes: c.concludes && i === 0,
      })),
    })),
    weight: 3,
  },
  { arbitrary: fc.constant<ModelPlan>({ text: 'cut', maxTokens: true }), weight: 1 },
  { arbitrary: fc.constant<ModelPlan>({ fail: 'provider error' }), weight: 1 },
);

/** One idle workflow task (several deliveries), or a continue-as-new at a quiet point. */
const opArb = fc.oneof(
  {
    arbitrary: fc
      .array(deliveryArb, { minLength: 1, maxLength: 3 })
      .map((deliveries) => ({ kind: 'task' as const, deliveries })),
    weight: 8,
  },
  { arbitrary: fc.constant({ kind: 'continue-as-new' as const }), weight: 1 },
);

const programArb = fc.record({
  ops: fc.array(opArb, { minLength: 1, maxLength: 12 }),
  preSteps: fc.array(preStepArb, { maxLength: 20 }),
  models: fc.array(modelArb, { maxLength: 20 }),
  /** Deliveries at the k-th await point of the whole run (pre-step, model call, before each tool result). */
  during: fc.array(fc.tuple(fc.nat({ max: 40 }), deliveryArb), { maxLength: 10 }),
});
type Program = typeof programArb extends fc.Arbitrary<infer T> ? T : never;

function scriptOf(program: Program): Script {
  const preSteps = [...program.preSteps];
  const models = [...program.models];
  let point = 0;
  let extra = 0;
  return {
    preStep: (): PreStepPlan => {
      const gen = preSteps.shift() ?? { kind: 'default' };
      switch (gen.kind) {
        case 'default':
        case 'reject':
          return { kind: gen.kind };
        case 'throw':
          return { kind: 'throw', message: 'listener threw' };
        case 'empty':
          return { kind: 'enter', messages: [] };
        case 'extra':
          return {
            kind: 'extra',
            messages: Array.from({ length: gen.count }, () =>
              msg(`x${++extra}`, 'listener context', { kind: 'plugin', plugin: 'tui' }),
            ),
          };
      }
    },
    model: ({ turn, step }) => models.shift() ?? { text: `answer ${turn}.${step}` },
    during: () => {
      const k = point++;
      return program.during.filter(([at]) => at === k).map(([, d]) => d);
    },
  };
}

/** Runs a program; returns the whole log (across continue-as-new) and the final simulation. */
function run(program: Program): {
  log: SessionEvent[];
  sim: Simulation;
  requests: TranscriptEntry[][];
  laneOf: (id: string) => Lane | undefined;
} {
  const script = scriptOf(program);
  let sim = new Simulation(script);
  const log: SessionEvent[] = [];
  const requests: TranscriptEntry[][] = [];
  for (const op of program.ops) {
    if (op.kind === 'continue-as-new') {
      log.push(...sim.core.log);
      requests.push(...sim.requests);
      sim = new Simulation(script, { snapshot: sim.core.snapshot, transcript: sim.core.transcript });
      continue;
    }
    const turnsBefore = sim.core.turn;
    const results = sim.deliver(...op.deliveries);
    const wokeIt = results.some((r, i) => r.accepted && op.deliveries[i]!.lane !== 'inject');
    // Idle injects never open a turn by themselves (rules 6, 7, 25); a waking message to an idle session does (rule 8).
    if (wokeIt) expect(sim.core.turn).toBeGreaterThan(turnsBefore);
    else expect(sim.core.turn).toBe(turnsBefore);
    // Every task ends with the session idle (the driver has no cancel).
    expect(sim.core.status()).toBe('idle');
  }
  log.push(...sim.core.log);
  requests.push(...sim.requests);
  const last = sim;
  // The lane that first got an id accepted (the recent window is far larger than any program).
  return { log, sim, requests, laneOf: (id) => last.core.receiptOf(id)?.lane };
}

const splicesOf = (log: readonly SessionEvent[]): SpliceData[] =>
  log.flatMap((e) => (e.type === 'agent/inbox/spliced' ? [e.data] : []));

describe('random lane traffic and step outcomes', () => {
  it('always give a valid log whose folds agree with the session state', () => {
    const seen = new Map<string, number>();
    const count = (what: string, yes: boolean) => yes && seen.set(what, (seen.get(what) ?? 0) + 1);
    fc.assert(
      fc.property(programArb, (program) => {
        const { log, sim, requests } = run(program);
        const reasons = new Set<string>(
          log.flatMap((e) => (e.type === 'turn/end' ? [e.data.reason.kind] : [])),
        );
        for (const kind of ['completed', 'blocked', 'error', 'max-tokens']) count(kind, reasons.has(kind));
        count(
          'multi-step turn',
          log.some((e) => e.type === 'step/start' && e.data.step > 1),
        );
        count(
          'tool context entered',
          log.some((e) => e.type === 'user/message' && e.data.message.source.kind === 'tool'),
        );
        count(
          'pre-step addition',
          log.some((e) => e.type === 'user/message' && /^x\d+$/.test(e.data.message.id)),
        );
        count(
          'continue-as-new',
          program.ops.some((op) => op.kind === 'continue-as-new'),
        );
        count('pending at the end', sim.core.inbox.nextStep.length + sim.core.inbox.nextTurn.length > 0);
        expect(checkLog(log)).toEqual({ ok: true });
        const inbox = foldInbox(splicesOf(log));
        expect(sim.core.inbox).toEqual(inbox);
        expect(sim.core.stateView().pending).toEqual({
          nextTurn: inbox.nextTurn.map((m) => m.id),
          nextStep: inbox.nextStep.map((m) => m.id),
        });
        expect(projectTranscript(log)).toEqual(sim.core.transcript.entries);
        expect(sim.core.lastSeq).toBe(log.length - 1);
        const turnsStarted = log.filter((e) => e.type === 'turn/start').length;
        expect(sim.core.turn).toBe(turnsStarted);
        // Each model request holds exactly the model-visible messages logged up to its step's entries (rule 14).
        const stepStarts = log.flatMap((e, i) => (e.type === 'step/start' ? [i] : []));
        expect(requests).toHaveLength(stepStarts.length);
        stepStarts.forEach((start, n) => {
          let end = start + 1;
          while (log[end]?.type === 'user/message') end++;
          expect(requests[n]).toEqual(projectTranscript(log.slice(0, end)));
        });
      }),
      { numRuns: 300 },
    );
    // The generators reach every outcome often enough to matter.
    for (const what of [
      'completed',
      'blocked',
      'error',
      'max-tokens',
      'multi-step turn',
      'tool context entered',
      'pre-step addition',
      'continue-as-new',
      'pending at the end',
    ]) {
      expect(seen.get(what) ?? 0, what).toBeGreaterThan(10);
    }
  });

  it('never let two follow-ups share a turn (rule 22)', () => {
    fc.assert(
      fc.property(programArb, (program) => {
        const { log, laneOf } = run(program);
        let followups: string[] = [];
        for (const e of log) {
          if (e.type === 'turn/start') followups = [];
          if (e.type === 'user/message' && laneOf(e.data.message.id) === 'followup')
            followups.push(e.data.message.id);
          expect(followups.length, `turn with follow-ups ${followups.join(', ')}`).toBeLessThanOrEqual(1);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('open a turn only for new waking work, or right after a turn that completed (rules 8, 15, 16)', () => {
    fc.assert(
      fc.property(programArb, (program) => {
        const { log, laneOf } = run(program);
        let previousEnd: string | undefined;
        let wakingSinceEnd = false;
        for (const e of log) {
          if (e.type === 'agent/inbox/spliced') {
            const waking = e.data.inserted.some(
              (m) => laneOf(m.id) === 'followup' || laneOf(m.id) === 'steer',
            );
            wakingSinceEnd ||= waking;
          }
          if (e.type === 'turn/start') {
            const resumes = previousEnd === 'completed' || previousEnd === 'max-tokens';
            expect(
              resumes || wakingSinceEnd,
              `turn ${e.data.turn} after a ${previousEnd ?? 'fresh start'} turn`,
            ).toBe(true);
          }
          if (e.type === 'turn/end') {
            previousEnd = e.data.reason.kind;
            wakingSinceEnd = false;
          }
        }
      }),
      { numRuns: 300 },
    );
  });

  it('enter every message at most once, and only messages that were accepted or added by pre-step', () => {
    fc.assert(
      fc.property(programArb, (program) => {
        const { log, laneOf } = run(program);
        const entered = log.flatMap((e) => (e.type === 'user/message' ? [e.data.message.id] : []));
        expect(new Set(entered).size).toBe(entered.length);
        for (const id of entered) expect(laneOf(id) !== undefined || /^x\d+$/.test(id)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('give logs in which the checker catches any dropped structural event, even with seq renumbered', () => {
    const structural = new Set([
      'turn/start',
      'turn/end',
      'step/start',
      'step/end',
      'tool/call',
      'tool/result',
    ]);
    fc.assert(
      fc.property(programArb, fc.nat(), (program, pick) => {
        const { log } = run(program);
        const candidates = log.flatMap((e, i) => (structural.has(e.type) ? [i] : []));
        fc.pre(candidates.length > 0);
        const drop = candidates[pick % candidates.length]!;
        const broken = log.filter((_, i) => i !== drop).map((e, seq) => ({ ...e, seq }) as SessionEvent);
        expect(checkLog(broken).ok, `dropped ${log[drop]!.type} at seq ${drop}`).toBe(false);
      }),
      { numRuns: 300 },
    );
  });
});
