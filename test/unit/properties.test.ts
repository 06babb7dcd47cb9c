/**
 * Property tests of the one loop (src/domain/driver.ts), driven by the in-memory interpreter: random lane traffic
 * (duplicates included), arrivals at random await points (pre-step, model call, each tool settlement), cancels with
 * and without keepInbox, disposes, malformed signal payloads, pre-step decisions, model answers, tool outcomes and
 * settle orders, parallelism limits, post-tool hooks and continue-as-new. Whatever happens: the invariant checker
 * accepts the log, the inbox is the fold of its splices, every model request equals the model-visible messages
 * logged before it (computed here by an independent projection), and rules 10–31 hold.
 *
 * Each property runs with a fixed seed, then with a random one that fast-check prints on failure
 * (`PROPERTY_SEED=<seed> npx vitest run test/unit/properties.test.ts` reruns it).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  checkLog,
  foldInbox,
  projectTranscript,
  type TextBlock,
  type Lane,
  type MessageSource,
  type PostToolHookOutcome,
  type SessionEvent,
  type SpliceData,
} from '../../src/domain/index';
import {
  cancel,
  dispose,
  InMemorySession,
  msg,
  type Arrival,
  type ModelPlan,
  type PreStepPlan,
  type Script,
} from '../support/interpreter';

const FIXED_SEED = 20261203;
const RUNS = Number(process.env.PROPERTY_RUNS ?? 150);
const randomSeed = Number(process.env.PROPERTY_SEED ?? Math.floor(Math.random() * 2 ** 31));

/** Runs a property with the fixed seed, then with the random one (printed by fast-check when it fails). */
function check<T>(arb: fc.Arbitrary<T>, body: (value: T) => void, runs = RUNS): void {
  fc.assert(fc.property(arb, body), { seed: FIXED_SEED, numRuns: runs });
  fc.assert(fc.property(arb, body), { seed: randomSeed, numRuns: runs });
}

// ---- arbitraries ----

/** A small id pool, so the same id is often sent again (on the same or another lane). */
const deliveryArb: fc.Arbitrary<Arrival> = fc
  .record({
    lane: fc.constantFrom<Lane>('followup', 'steer', 'inject'),
    n: fc.nat({ max: 11 }),
    text: fc.constantFrom('hi', 'again', 'ctx'),
  })
  .map(({ lane, n, text }) => ({
    lane,
    message: msg(`m${n}`, text, lane === 'inject' ? { kind: 'plugin', plugin: 'watcher' } : { kind: 'user' }),
  }));

/** Payloads that are bad for every signal name: each must be refused and change nothing but the count. */
const badPayloadArb = fc.constantFrom<unknown>(
  42,
  'now',
  [1],
  { junk: 1 },
  null,
  { cause: { kind: 'nope' } },
  { keepInbox: 'yes' },
  { message: 5 },
  { message: { content: '' } },
);
const BAD = 'bad';
const badSignalArb: fc.Arbitrary<Arrival> = fc
  .record({
    signal: fc.constantFrom('followup', 'steer', 'inject', 'cancel', 'dispose', 'nope'),
    payload: badPayloadArb,
  })
  .map((a) => ({ ...a, [BAD]: true }) as Arrival);

const cancelArb: fc.Arbitrary<Arrival> = fc
  .record({ hook: fc.boolean(), keepInbox: fc.boolean() })
  .map(({ hook, keepInbox }) =>
    cancel({
      cause: hook ? { kind: 'hook', reason: 'policy' } : { kind: 'user' },
      ...(keepInbox ? { keepInbox } : {}),
    }),
  );

/** What arrives in an idle workflow task. */
const arrivalArb: fc.Arbitrary<Arrival> = fc.oneof(
  { arbitrary: deliveryArb, weight: 12 },
  { arbitrary: cancelArb, weight: 1 },
  { arbitrary: badSignalArb, weight: 2 },
);
/** What arrives while the loop awaits something (cancels are more likely there: that is where they matter). */
const duringArb: fc.Arbitrary<Arrival> = fc.oneof(
  { arbitrary: deliveryArb, weight: 6 },
  { arbitrary: cancelArb, weight: 3 },
  { arbitrary: badSignalArb, weight: 1 },
);

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

const TOOLS = ['t0', 't1', 't2', 'tx'];
const toolCallArb = fc.record({
  name: fc.constantFrom(...TOOLS, 'forbidden'),
  contexts: fc.nat({ max: 2 }),
  concludes: fc.boolean(),
  badArgs: fc.boolean(),
  abortOnCancel: fc.boolean(),
  fails: fc.boolean(),
});
const modelArb: fc.Arbitrary<ModelPlan> = fc.oneof(
  { arbitrary: fc.constant<ModelPlan>({ text: 'done' }), weight: 4 },
  {
    arbitrary: fc.array(toolCallArb, { minLength: 1, maxLength: 4 }).map<ModelPlan>((calls) => ({
      text: 'using tools',
      toolCalls: calls.map((c, i) => ({
        name: c.name,
        ...(c.badArgs && i === 1 ? { args: null } : {}),
        contexts: Array.from({ length: c.contexts }, (_, k) => `context ${k}`),
        concludes: c.concludes && i === 0,
        ...(c.fails && i === 2 ? { error: 'tool broke' } : {}),
        onCancel: c.abortOnCancel ? 'abort' : 'finish',
      })),
    })),
    weight: 4,
  },
  { arbitrary: fc.constant<ModelPlan>({ text: 'cut', maxTokens: true }), weight: 1 },
  { arbitrary: fc.constant<ModelPlan>({ fail: 'provider error' }), weight: 1 },
);

const hookOutcomeArb = fc.constantFrom<'continue' | 'context' | 'block' | 'fail'>(
  'continue',
  'context',
  'block',
  'fail',
);

/** One idle workflow task (several arrivals), or a continue-as-new at a quiet point. */
const opArb = fc.oneof(
  {
    arbitrary: fc
      .array(arrivalArb, { minLength: 1, maxLength: 3 })
      .map((arrivals) => ({ kind: 'task' as const, arrivals })),
    weight: 8,
  },
  { arbitrary: fc.constant({ kind: 'continue-as-new' as const }), weight: 1 },
);

const programArb = fc.record({
  ops: fc.array(opArb, { minLength: 1, maxLength: 12 }),
  preSteps: fc.array(preStepArb, { maxLength: 20 }),
  models: fc.array(modelArb, { maxLength: 20 }),
  /** Arrivals at the k-th await point of the whole run (pre-step, model call, each tool settlement). */
  during: fc.array(fc.tuple(fc.nat({ max: 40 }), duringArb), { maxLength: 10 }),
  /** A dispose in about one run of four: at an idle task (`op`) or at an await point. */
  dispose: fc.oneof(
    { arbitrary: fc.constant(null), weight: 3 },
    { arbitrary: fc.record({ during: fc.boolean(), at: fc.nat({ max: 12 }) }), weight: 1 },
  ),
  /** Which running call settles next, as picks among those running. */
  settles: fc.array(fc.nat(), { maxLength: 30 }),
  maxParallel: fc.oneof(fc.constant(1), fc.integer({ min: 1, max: 4 })),
  exclusiveTx: fc.boolean(),
  postToolHook: fc.boolean(),
  hookOutcomes: fc.array(hookOutcomeArb, { maxLength: 20 }),
  /** A token budget in about half the runs, small enough that most runs compact (often more than once). */
  context: fc.option(fc.record({ keepRecent: fc.nat({ max: 3 }), compactAt: fc.constantFrom(0.1, 0.2) })),
});
type Program = typeof programArb extends fc.Arbitrary<infer T> ? T : never;

function scriptOf(program: Program): Script {
  const preSteps = [...program.preSteps];
  const models = [...program.models];
  const settles = [...program.settles];
  const hookOutcomes = [...program.hookOutcomes];
  let point = 0;
  let extra = 0;
  return {
    tools: TOOLS.map((name) => ({ name, exclusive: name === 'tx' && program.exclusiveTx })),
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
      const arrivals = program.during.filter(([at]) => at === k).map(([, d]) => d);
      return program.dispose?.during && program.dispose.at === k ? [...arrivals, dispose()] : arrivals;
    },
    settle: (running) => running[(settles.shift() ?? 0) % running.length]!,
    postTool: (_hook, call): PostToolHookOutcome => {
      switch (hookOutcomes.shift() ?? 'continue') {
        case 'continue':
          return { kind: 'ok', result: { kind: 'continue', additionalContexts: [] } };
        case 'context':
          return {
            kind: 'ok',
            result: { kind: 'continue', additionalContexts: [{ content: text(`audit of ${call.callId}`) }] },
          };
        case 'block':
          return { kind: 'ok', result: { kind: 'block', feedback: 'not allowed', additionalContexts: [] } };
        case 'fail':
          return { kind: 'failed', error: { message: 'hook down', code: 'HOOK_FAILED' } };
      }
    },
  };
}

const text = (t: string): TextBlock[] => [{ type: 'text', text: t }];

interface Run {
  session: InMemorySession;
  log: SessionEvent[];
  laneOf: (id: string) => Lane | undefined;
  badPayloads: number;
  disposeSent: boolean;
}

/** Runs a program: each task's arrivals, then the loop until it waits for work (or the session is disposed). */
function run(program: Program): Run {
  const session = new InMemorySession(scriptOf(program), {
    config: {
      tools: TOOLS,
      maxParallelToolCalls: program.maxParallel,
      ...(program.postToolHook ? { hooks: ['post-audit'] } : {}),
      ...(program.context ? { context: { maxTokens: 256, ...program.context } } : {}),
    },
  });
  for (const [index, op] of program.ops.entries()) {
    if (program.dispose && !program.dispose.during && program.dispose.at === index) session.signal(dispose());
    if (op.kind === 'continue-as-new') {
      if (!session.completed) session.continueAsNew();
      continue;
    }
    const turnsBefore = session.core.turn;
    const wasDisposing = session.driver.disposing || session.completed;
    const deliveries = op.arrivals.filter((a) => 'lane' in a);
    const signals = op.arrivals.filter((a) => 'signal' in a);
    // A task's signals first (so a cancel or dispose of this task is seen before it wakes anything), then deliveries.
    session.signal(...signals);
    const results = session.deliver(...deliveries);
    if (!wasDisposing && !session.driver.disposing) {
      const woke = results.some((r, i) => r.accepted && deliveries[i]!.lane !== 'inject');
      // Idle injects never open a turn by themselves (rules 6, 7, 25); a waking message to an idle session does (8).
      if (woke) expect(session.core.turn).toBeGreaterThan(turnsBefore);
      if (!woke && signals.length === 0) expect(session.core.turn).toBe(turnsBefore);
      // Every task ends with the session idle.
      expect(session.core.status()).toBe('idle');
    }
  }
  const all = session.arrived;
  return {
    session,
    log: session.log,
    laneOf: (id) => session.core.receiptOf(id)?.lane,
    badPayloads: all.filter((a) => BAD in a).length,
    disposeSent: all.some((a) => 'signal' in a && a.signal === 'dispose' && !(BAD in a)),
  };
}

/**
 * The model-visible messages of a log prefix, written independently of src/domain/transcript.ts: user messages
 * as entered, assistant messages (interrupted ones keep their text), tool results named by their calls; a
 * compaction's summary in place of what it replaced (docs/protocol.md, "Compaction").
 */
function visibleMessages(log: readonly SessionEvent[]): unknown[] {
  const names = new Map<string, string>();
  let out: unknown[] = [];
  let seqs: number[] = [];
  for (const e of log) {
    const before = out.length;
    if (e.type === 'compaction/summary') {
      const { throughSeq, pinned, summary, model } = e.data;
      const keep = seqs.flatMap((s, i) => (s > throughSeq || s === pinned ? [i] : []));
      out = [
        {
          role: 'user',
          id: `compaction-${e.seq}`,
          content: [
            {
              type: 'text',
              text: `Summary of the earlier conversation (log seq 0–${throughSeq} except the messages that follow; compacted by ${model}):\n\n${summary}`,
            },
          ],
          source: { kind: 'compaction', model, throughSeq },
        },
        ...keep.map((i) => out[i]),
      ];
      seqs = [throughSeq, ...keep.map((i) => seqs[i]!)];
      continue;
    }
    if (e.type === 'user/message') {
      const { id, content, source } = e.data.message;
      out.push({ role: 'user', id, content, source: source as MessageSource });
    } else if (e.type === 'assistant/message') {
      const { id, content, toolCalls } = e.data.message;
      out.push({
        role: 'assistant',
        id,
        content,
        ...(toolCalls?.length ? { toolCalls } : {}),
        ...(e.data.interrupted ? { interrupted: true } : {}),
      });
    } else if (e.type === 'tool/call') {
      names.set(e.data.callId, e.data.name);
    } else if (e.type === 'tool/result') {
      out.push({
        role: 'tool',
        callId: e.data.callId,
        name: names.get(e.data.callId),
        content: e.data.content,
        ...(e.data.error ? { error: e.data.error } : {}),
      });
    }
    for (let i = before; i < out.length; i++) seqs.push(e.seq);
  }
  return out;
}

const splicesOf = (log: readonly SessionEvent[]): SpliceData[] =>
  log.flatMap((e) => (e.type === 'agent/inbox/spliced' ? [e.data] : []));

describe('the one loop under random traffic, arrivals, cancels, disposes and outcomes', () => {
  it('always gives a valid log whose folds agree with the session state, and requests equal the logged messages', () => {
    const seen = new Map<string, number>();
    const count = (what: string, yes: boolean) => yes && seen.set(what, (seen.get(what) ?? 0) + 1);
    check(programArb, (program) => {
      const { session, log, badPayloads, disposeSent } = run(program);
      const ends = log.flatMap((e) => (e.type === 'turn/end' ? [e.data.reason] : []));
      for (const kind of ['completed', 'blocked', 'error', 'max-tokens', 'aborted'])
        count(
          kind,
          ends.some((r) => r.kind === kind),
        );
      count(
        'keepInbox cancel',
        program.during.some(
          ([, a]) => 'signal' in a && (a.payload as { keepInbox?: boolean })?.keepInbox === true,
        ),
      );
      count('disposed', log.at(-1)?.type === 'session/disposed');
      const codes = log.flatMap((e) => (e.type === 'tool/result' && e.data.error ? [e.data.error.code] : []));
      for (const code of [
        'ABORTED_BEFORE_DISPATCH',
        'TOOL_NOT_ALLOWED',
        'TOOL_INVALID_ARGUMENTS',
        'TOOL_BLOCKED',
        'POST_TOOL_HOOK_FAILED',
      ])
        count(code, codes.includes(code));
      count(
        'multi-step turn',
        log.some((e) => e.type === 'step/start' && e.data.step > 1),
      );
      count(
        'tool context entered',
        log.some((e) => e.type === 'user/message' && e.data.message.source.kind === 'tool'),
      );
      count('continue-as-new', session.continuedAsNew > 0);
      count(
        'compacted',
        log.some((e) => e.type === 'compaction/summary'),
      );
      count('compacted twice', log.filter((e) => e.type === 'compaction/summary').length > 1);

      expect(checkLog(log)).toEqual({ ok: true });
      const inbox = foldInbox(splicesOf(log));
      expect(session.core.inbox).toEqual(inbox);
      expect(session.core.stateView().pending).toEqual({
        nextTurn: inbox.nextTurn.map((m) => m.id),
        nextStep: inbox.nextStep.map((m) => m.id),
      });
      expect(projectTranscript(log).slice(session.core.transcript.base)).toEqual(
        session.core.transcript.entries,
      );
      expect(session.core.lastSeq).toBe(log.length - 1);
      expect(session.core.turn).toBe(log.filter((e) => e.type === 'turn/start').length);
      // Rule 14: each model request holds exactly the model-visible messages logged before it.
      expect(session.requests).toHaveLength(log.filter((e) => e.type === 'step/start').length);
      session.requests.forEach((request, n) => {
        expect(request).toEqual(visibleMessages(log.slice(0, session.requestAt[n])));
      });
      // Rule 5: bad payloads are counted and change nothing else.
      expect(session.core.stateView().refused).toBe(badPayloads);
      // Rule 31: a dispose completes the session with session/disposed last; otherwise it stays open.
      expect(session.completed).toBe(disposeSent);
      expect(log.at(-1)?.type === 'session/disposed').toBe(disposeSent);
    });
    for (const [what, min] of [
      ['compacted', 20],
      ['compacted twice', 5],
      ['completed', 50],
      ['blocked', 10],
      ['error', 30],
      ['max-tokens', 10],
      ['aborted', 20],
      ['keepInbox cancel', 10],
      ['disposed', 15],
      ['ABORTED_BEFORE_DISPATCH', 3],
      ['TOOL_NOT_ALLOWED', 20],
      ['TOOL_INVALID_ARGUMENTS', 10],
      ['TOOL_BLOCKED', 10],
      ['POST_TOOL_HOOK_FAILED', 10],
      ['multi-step turn', 50],
      ['tool context entered', 20],
      ['continue-as-new', 20],
    ] as const) {
      expect(seen.get(what) ?? 0, `${what} reached in ${seen.get(what) ?? 0} runs`).toBeGreaterThanOrEqual(
        min,
      );
    }
  });

  it('never lets two follow-ups share a turn (rule 22)', () => {
    check(programArb, (program) => {
      const { log, laneOf } = run(program);
      let followups: string[] = [];
      for (const e of log) {
        if (e.type === 'turn/start') followups = [];
        if (e.type === 'user/message' && laneOf(e.data.message.id) === 'followup')
          followups.push(e.data.message.id);
        expect(followups.length, `turn with follow-ups ${followups.join(', ')}`).toBeLessThanOrEqual(1);
      }
    });
  });

  it("inserts a tool's contexts only after its result, and a batch's contexts enter after all its results (rule 19)", () => {
    check(programArb, (program) => {
      const { log } = run(program);
      const resultAt = new Map<string, number>();
      log.forEach((e, i) => {
        if (e.type === 'tool/result') resultAt.set(e.data.callId, i);
        if (e.type === 'agent/inbox/spliced')
          for (const m of e.data.inserted)
            if (m.source.kind === 'tool') {
              const at = resultAt.get(String((m.source as { callId: string }).callId));
              expect(at, `context ${m.id} inserted before its result`).toBeLessThan(i);
            }
        if (e.type === 'user/message' && e.data.message.source.kind === 'tool') {
          // It enters in a later step than its call: after that step's step/end.
          const callId = String((e.data.message.source as { callId: string }).callId);
          const end = log.findIndex((x, j) => j > resultAt.get(callId)! && x.type === 'step/end');
          expect(end).toBeGreaterThan(-1);
          expect(end).toBeLessThan(i);
        }
      });
    });
  });

  it('ends cancelled turns aborted and well-formed; calls not started get ABORTED_BEFORE_DISPATCH (rules 27–29)', () => {
    check(programArb, (program) => {
      const { log } = run(program);
      let turnReason = new Map<number, string>();
      turnReason = new Map(
        log.flatMap((e) => (e.type === 'turn/end' ? [[e.data.turn, e.data.reason.kind] as const] : [])),
      );
      let stepCodes: string[] = [];
      for (const e of log) {
        if (e.type === 'step/start') stepCodes = [];
        if (e.type !== 'tool/result') continue;
        const code = e.data.error?.code ?? 'ok';
        if (code === 'ABORTED_BEFORE_DISPATCH') expect(turnReason.get(e.data.turn)).toBe('aborted');
        // Once a call of a step was never dispatched, no later call of that step was.
        if (stepCodes.includes('ABORTED_BEFORE_DISPATCH')) expect(code).toBe('ABORTED_BEFORE_DISPATCH');
        stepCodes.push(code);
      }
      // An aborted turn ends with step/end (if a step was open) then turn/end: no event of the turn after it.
      log.forEach((e, i) => {
        if (e.type === 'turn/end' && e.data.reason.kind === 'aborted') {
          const next = log[i + 1];
          expect(next?.type === 'turn/start' && next.data.turn !== e.data.turn + 1).toBe(false);
        }
      });
    });
  });

  it('opens a turn only for new waking work, or right after a turn that completed (rules 8, 15, 16, 28, 30)', () => {
    check(programArb, (program) => {
      const { log, laneOf, session } = run(program);
      let previousEnd: string | undefined;
      let wakingSinceEnd = false;
      // Rule 30: a waking message that arrives after a cancel, before the turn closed, starts the next turn.
      let wakingAfterCancel = false;
      let canceledAt = Infinity;
      log.forEach((e, i) => {
        if (session.cancelsAt.includes(i)) canceledAt = Math.min(canceledAt, i);
        if (e.type === 'agent/inbox/spliced') {
          const waking = e.data.inserted.some((m) => laneOf(m.id) === 'followup' || laneOf(m.id) === 'steer');
          wakingSinceEnd ||= waking;
          if (waking && i >= canceledAt) wakingAfterCancel = true;
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
          wakingSinceEnd = e.data.reason.kind === 'aborted' && wakingAfterCancel;
          wakingAfterCancel = false;
          canceledAt = Infinity;
        }
      });
    });
  });

  it('enters every message at most once, and only messages that were accepted or added by a producer', () => {
    check(programArb, (program) => {
      const { log, laneOf } = run(program);
      const entered = log.flatMap((e) => (e.type === 'user/message' ? [e.data.message] : []));
      expect(new Set(entered.map((m) => m.id)).size).toBe(entered.length);
      for (const m of entered)
        expect(laneOf(m.id) !== undefined || /^x\d+$/.test(m.id) || m.source.kind === 'tool', m.id).toBe(
          true,
        );
    });
  });

  it('gives logs in which the checker catches any dropped structural event, even with seq renumbered', () => {
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
      { seed: FIXED_SEED, numRuns: RUNS },
    );
  });
});
