/**
 * Invariant checker over a session log: validates every event, then commits it to a small model of the session
 * (open turn, open step, inbox, claimed and entered ids) and reports what does not fit, with expected vs actual and
 * the event's seq ("seq 7: turn/start expected turn 3, got 4"). Pure and deterministic; runs in unit tests, property
 * tests and over every log a workflow test produces.
 *
 * What it checks (rule numbers from docs/semantics.md): envelopes and core data (wire); seq contiguous (log);
 * turns numbered last+1, each closed exactly once (24); steps nested and numbered 1..n (24); user, assistant and tool
 * events inside an open step with matching numbers (14, 24); tool results after their call, once, in the model's
 * call order and before step/end (18, 29); every splice valid against the fold of the previous ones (3); claim
 * splices only at a boundary, `next-step` (all of it) before `next-turn` (exactly one, turn boundary only) (10, 11);
 * canceled splices discard whole lists, `next-step` first (27); every entered message was claimed in its turn, or is
 * a pre-step addition never seen in the inbox (2, 7, 13); no id enters twice; nothing after `session/disposed` (31);
 * a call that asked for approval starts only after its decision, is resolved once, and one not approved is answered
 * DENIED, APPROVAL_TIMEOUT or ABORTED_BEFORE_DISPATCH (by caller, timeout, cancel).
 * Plugin event types get the envelope and seq checks only.
 */
import { eventProblem } from './events';
import { isCoreEventType, type SessionEvent, type SpliceData } from './events';
import { applySplice, EMPTY_INBOX, listOf, spliceProblem, type Inbox } from './inbox';
import type { UserMessage } from './messages';
import { assertNever } from './util';
import { checkStepEvent, type StepModel } from './stepChecks';

/** Where a log (or a continued run's part of it) starts; `SessionSnapshot` fits. Must be a quiet point. */
export interface LogStart {
  nextSeq?: number;
  /** The last turn number before the log. */
  turn?: number;
  inbox?: Inbox;
  /** Ids accepted before the log (they cannot be pre-step additions). */
  recent?: readonly (readonly [string, ...unknown[]])[];
}

export interface CheckLogOptions {
  initial?: LogStart;
  /** Accept a log that ends inside a turn (a prefix read while the session runs). */
  allowOpen?: boolean;
}

export type CheckResult = { ok: true } | { ok: false; problems: string[] };

export class LogInvariantError extends Error {
  override name = 'LogInvariantError';
  constructor(readonly problems: string[]) {
    super(`session log breaks ${problems.length} invariant(s):\n- ${problems.join('\n- ')}`);
  }
}

/** Checks a whole log. Never throws. */
export function checkLog(events: readonly SessionEvent[], opts: CheckLogOptions = {}): CheckResult {
  const checker = new LogChecker(opts);
  events.forEach((event, index) => checker.event(event, index));
  checker.finish();
  return checker.problems.length ? { ok: false, problems: checker.problems } : { ok: true };
}

/** Checks a whole log. Throws LogInvariantError listing every problem. */
export function assertLogValid(events: readonly SessionEvent[], opts: CheckLogOptions = {}): void {
  const result = checkLog(events, opts);
  if (!result.ok) throw new LogInvariantError(result.problems);
}

class LogChecker {
  readonly problems: string[] = [];
  private expectedSeq: number;
  private turn: number;
  private turnOpen = false;
  private stepsInTurn = 0;
  private step: StepModel | undefined;
  /** Claims made at the current boundary (since turn/start or step/end). */
  private claimedAtBoundary = { 'next-step': false, 'next-turn': false };
  private inbox: Inbox;
  /** Every id ever inserted (or pending/accepted before the log), with the seq of its insertion (-1: before). */
  private readonly inserted = new Map<string, number>();
  /** Messages claimed in the open turn and not entered yet. */
  private readonly claimed = new Map<string, UserMessage>();
  private readonly entered = new Map<string, number>();
  private previous: SessionEvent | undefined;
  private disposedAt: number | undefined;
  /** The step a budget pause waits before (between its budget/exceeded and budget/resolved). */
  private budgetPause: number | undefined;

  constructor(private readonly opts: CheckLogOptions) {
    const initial = opts.initial ?? {};
    this.expectedSeq = initial.nextSeq ?? 0;
    this.turn = initial.turn ?? 0;
    this.inbox = initial.inbox ?? EMPTY_INBOX;
    for (const [id] of initial.recent ?? []) this.inserted.set(id, -1);
    for (const m of [...this.inbox.nextTurn, ...this.inbox.nextStep]) this.inserted.set(m.id, -1);
  }

  event(raw: SessionEvent, index: number): void {
    const problem = eventProblem(raw);
    if (problem) {
      this.problems.push(`event #${index} (seq ${describeSeq(raw)}): ${problem}`);
      this.expectedSeq += 1;
      return;
    }
    const event = raw;
    if (event.seq !== this.expectedSeq)
      this.report(event, `seq expected ${this.expectedSeq}, got ${event.seq}`);
    this.expectedSeq = event.seq + 1;
    if (this.disposedAt !== undefined) this.report(event, `after session/disposed at seq ${this.disposedAt}`);
    if (isCoreEventType(event.type)) this.core(event);
    this.previous = event;
  }

  finish(): void {
    if (this.opts.allowOpen) return;
    if (this.step) this.problems.push(`end of log: step ${this.step.turn}.${this.step.step} has no step/end`);
    if (this.step) this.unresultedCalls('end of log');
    if (this.turnOpen) this.problems.push(`end of log: turn ${this.turn} has no turn/end`);
  }

  private report(event: SessionEvent, detail: string): void {
    this.problems.push(`seq ${event.seq}: ${event.type} ${detail}`);
  }

  private core(event: SessionEvent): void {
    switch (event.type) {
      case 'agent/inbox/spliced':
        return this.splice(event, event.data);
      case 'turn/start':
        if (this.turnOpen) this.report(event, `while turn ${this.turn} is open`);
        if (event.data.turn !== this.turn + 1)
          this.report(event, `expected turn ${this.turn + 1}, got ${event.data.turn}`);
        this.turn = event.data.turn;
        this.turnOpen = true;
        this.stepsInTurn = 0;
        this.step = undefined;
        this.claimed.clear();
        this.newBoundary();
        return;
      case 'turn/end':
        if (!this.turnOpen) return this.report(event, 'without an open turn');
        if (event.data.turn !== this.turn)
          this.report(event, `expected turn ${this.turn}, got ${event.data.turn}`);
        if (this.step) {
          this.report(event, `while step ${this.step.turn}.${this.step.step} is open`);
          this.unresultedCalls(`seq ${event.seq}: turn/end`);
          this.step = undefined;
        }
        if (this.budgetPause !== undefined)
          this.report(event, `while the budget waits for a decision (before step ${this.budgetPause})`);
        this.budgetPause = undefined;
        this.turnOpen = false;
        this.claimed.clear();
        return;
      case 'step/start': {
        if (!this.turnOpen) return this.report(event, 'outside a turn');
        if (this.budgetPause !== undefined)
          this.report(event, 'while the budget waits for a decision (a budget/resolved comes first)');
        if (this.step) this.report(event, `while step ${this.step.turn}.${this.step.step} is open`);
        const { turn, step } = event.data;
        if (turn !== this.turn) this.report(event, `expected turn ${this.turn}, got ${turn}`);
        if (step !== this.stepsInTurn + 1)
          this.report(event, `expected step ${this.stepsInTurn + 1}, got ${step}`);
        this.stepsInTurn = step;
        this.step = { turn: this.turn, step, calls: new Map(), approvals: new Map(), subsessions: new Map() };
        return;
      }
      case 'step/end': {
        const step = this.requireStep(event);
        if (!step) return;
        this.unresultedCalls(`seq ${event.seq}: step/end`);
        this.step = undefined;
        this.newBoundary();
        return;
      }
      case 'user/message':
        return this.userMessage(event, event.data.message);
      case 'assistant/message':
      case 'tool/call':
      case 'tool/approval-requested':
      case 'tool/approval-resolved':
      case 'tool/result':
      case 'compaction/summary':
      case 'subsession/started':
      case 'subsession/ended': {
        const step = this.requireStep(event);
        if (step) checkStepEvent(step, event, (detail) => this.report(event, detail));
        return;
      }
      case 'budget/exceeded':
        if (!this.turnOpen) return this.report(event, 'outside a turn');
        if (this.step)
          this.report(event, `inside step ${this.step.turn}.${this.step.step}: it comes before a step`);
        if (this.budgetPause) this.report(event, 'while the budget already waits for a decision');
        if (event.data.step !== this.stepsInTurn + 1)
          this.report(event, `names step ${event.data.step}; the next step is ${this.stepsInTurn + 1}`);
        if (event.data.waits) this.budgetPause = event.data.step;
        return;
      case 'budget/resolved':
        if (this.budgetPause === undefined) return this.report(event, 'without a budget/exceeded that waits');
        if (event.data.step !== this.budgetPause)
          this.report(event, `names step ${event.data.step}; the pause was before step ${this.budgetPause}`);
        this.budgetPause = undefined;
        return;
      case 'session/forked':
        if (event.seq !== 0) this.report(event, 'after the first event: a fork starts its log');
        return;
      case 'session/disposed':
        if (this.turnOpen) this.report(event, `while turn ${this.turn} is open`);
        this.disposedAt = event.seq;
        return;
      default:
        return assertNever(event, 'event');
    }
  }

  private requireStep(event: SessionEvent): StepModel | undefined {
    if (!this.step) {
      this.report(
        event,
        this.turnOpen ? `outside an open step (turn ${this.turn})` : 'outside an open step (no turn)',
      );
      return undefined;
    }
    const data = event.data as { turn?: number; step?: number };
    if (data.turn !== undefined && data.turn !== this.step.turn)
      this.report(event, `expected turn ${this.step.turn}, got ${data.turn}`);
    if (data.step !== undefined && data.step !== this.step.step)
      this.report(event, `expected step ${this.step.step}, got ${data.step}`);
    return this.step;
  }

  private unresultedCalls(where: string): void {
    const owed = [...(this.step?.calls ?? [])].filter(([, done]) => !done).map(([id]) => id);
    if (owed.length) this.problems.push(`${where}: tool call(s) ${owed.join(', ')} without a tool/result`);
    const waiting = [...(this.step?.approvals ?? [])].filter(([, r]) => r === undefined).map(([id]) => id);
    if (waiting.length) this.problems.push(`${where}: approval of ${waiting.join(', ')} never resolved`);
    const unanswered = [...(this.step?.approvals.keys() ?? [])].filter((id) => !this.step?.calls.has(id));
    if (unanswered.length)
      this.problems.push(`${where}: ${unanswered.join(', ')} never answered after approval`);
  }

  private newBoundary(): void {
    this.claimedAtBoundary = { 'next-step': false, 'next-turn': false };
  }

  private userMessage(event: SessionEvent, message: UserMessage): void {
    const step = this.requireStep(event);
    if (!step) return;
    if (step.requested) this.report(event, `${message.id} after the step's assistant/message`);
    const firstEntry = this.entered.get(message.id);
    if (firstEntry !== undefined)
      this.report(event, `${message.id} entered twice (first at seq ${firstEntry})`);
    const claimed = this.claimed.get(message.id);
    const inserted = this.inserted.get(message.id);
    if (claimed) {
      if (!sameJson(claimed, message))
        this.report(event, `${message.id} differs from the message inserted at seq ${inserted ?? '?'}`);
      this.claimed.delete(message.id);
    } else if (inserted !== undefined && firstEntry === undefined) {
      const where = inserted < 0 ? 'before this log' : `at seq ${inserted}`;
      const pending = [...this.inbox.nextTurn, ...this.inbox.nextStep].some((m) => m.id === message.id);
      this.report(
        event,
        `${message.id} (inserted ${where}) was ${pending ? 'still pending' : `not claimed in turn ${this.turn}`}`,
      );
    }
    this.entered.set(message.id, firstEntry ?? event.seq);
  }

  private splice(event: SessionEvent, splice: SpliceData): void {
    const problem = spliceProblem(this.inbox, splice);
    if (problem) return this.report(event, problem);
    const list = listOf(this.inbox, splice.target);
    const removed = splice.removedCount ?? 0;
    const what = splice.target;
    if (removed > 0 && splice.inserted.length > 0) return this.report(event, 'both removes and inserts');
    if (splice.inserted.length > 0) {
      if (splice.start !== list.length)
        this.report(
          event,
          `insertion expected at the end of ${what} (start ${list.length}), got start ${splice.start}`,
        );
      for (const m of splice.inserted) this.inserted.set(m.id, event.seq);
    } else if (splice.outcome === 'canceled') {
      if (splice.start !== 0 || removed !== list.length)
        this.report(
          event,
          `canceled splice expected to discard all ${list.length} of ${what}, removed ${removed} from ${splice.start}`,
        );
      const prev = this.previous;
      if (
        what === 'next-step' &&
        prev?.type === 'agent/inbox/spliced' &&
        prev.data.outcome === 'canceled' &&
        prev.data.target === 'next-turn'
      )
        this.report(
          event,
          `canceled splice of next-step after next-turn's at seq ${prev.seq}: next-step is discarded first`,
        );
    } else {
      this.claim(event, splice, list.length);
      for (const m of list.slice(splice.start, splice.start + removed)) this.claimed.set(m.id, m);
    }
    this.inbox = applySplice(this.inbox, splice);
  }

  private claim(event: SessionEvent, splice: SpliceData, pending: number): void {
    const what = splice.target;
    const removed = splice.removedCount ?? 0;
    if (!this.turnOpen) return this.report(event, `claim of ${what} outside a turn`);
    if (this.step)
      return this.report(event, `claim of ${what} inside open step ${this.step.turn}.${this.step.step}`);
    if (splice.start !== 0) this.report(event, `claim of ${what} expected start 0, got ${splice.start}`);
    if (this.claimedAtBoundary[what]) this.report(event, `second claim of ${what} at one boundary`);
    if (what === 'next-step') {
      if (removed !== pending)
        this.report(event, `claim of next-step expected to take all ${pending}, took ${removed}`);
      if (this.claimedAtBoundary['next-turn'])
        this.report(event, 'claim of next-step after the next-turn claim of the same boundary');
    } else {
      if (removed !== 1)
        this.report(event, `claim of next-turn expected to remove exactly 1, removed ${removed}`);
      if (this.stepsInTurn > 0)
        this.report(
          event,
          `claim of next-turn at a step boundary (after step ${this.turn}.${this.stepsInTurn})`,
        );
    }
    this.claimedAtBoundary[what] = true;
  }
}

function describeSeq(event: unknown): string {
  const seq = (event as { seq?: unknown } | null)?.seq;
  return typeof seq === 'number' ? String(seq) : '?';
}

/** Deep equality of plain JSON values, whatever their key order. */
function sameJson(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'undefined';
}
