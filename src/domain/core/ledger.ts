/**
 * The ledger and the budget pause, in one place: reported token usage per model, committed model answers and tool
 * results, cost, what sub-sessions used — and the budget limits in force, the pause while a turn waits for a
 * person's decision, and how the last pause ended. It keeps its part of the snapshot; it never writes the log: the
 * core appends the events whose data it returns. Committed results only, so retries never count twice. Pure.
 */
import type { EventDataMap, Usage } from '../events';
import { budgetRemaining, type BudgetKey, type BudgetLimits, type BudgetUsed } from '../wire';
import type { SessionSnapshot, UsageTotals } from './snapshot';
import type { SessionStateView } from './stateView';

/** The budget's part of the `state` query. */
type BudgetView = NonNullable<SessionStateView['budget']>;

export class Ledger {
  /** `s` is the core's snapshot: the ledger reads and writes its `usage`, `ledger` and budget fields. */
  constructor(private readonly s: SessionSnapshot) {}

  // ---- counting (the four places a cost is committed) ----

  /** A model answer was logged, with the usage its provider reported (counted under `model`). */
  modelAnswer(usage: Usage | undefined, model: string): void {
    if (usage) this.countUsage(model, usage);
    this.count('modelCalls');
    if (usage?.costMicros) this.addCost(usage.costMicros);
  }

  /** A tool result was committed. */
  toolResult(): void {
    this.count('toolCalls');
  }

  /** A compaction's summary: its tokens and cost count like a model answer's; it is not a model call. */
  compaction(usage: Usage | undefined, model: string): void {
    if (!usage) return;
    this.countUsage(model, usage, { step: false });
    if (usage.costMicros) this.addCost(usage.costMicros);
  }

  /** A sub-session ended: the parent's budget counts what it used. */
  subsession(used: BudgetUsed): void {
    const ledger = this.entry();
    ledger.modelCalls += used.modelCalls;
    ledger.toolCalls += used.toolCalls;
    ledger.inputTokens = (ledger.inputTokens ?? 0) + used.inputTokens;
    ledger.outputTokens = (ledger.outputTokens ?? 0) + used.outputTokens;
    // A child's worker that predates cost accounting reports none.
    if (used.costMicros) this.addCost(used.costMicros);
  }

  private countUsage(model: string, usage: Usage, { step = true } = {}): void {
    const byModel = (this.s.usage ??= {});
    const totals = (byModel[model] ??= { inputTokens: 0, outputTokens: 0, steps: 0 });
    totals.inputTokens += usage.inputTokens ?? 0;
    totals.outputTokens += usage.outputTokens ?? 0;
    if (step) totals.steps += 1;
  }

  private count(what: 'modelCalls' | 'toolCalls'): void {
    this.entry()[what] += 1;
  }

  private addCost(micros: number): void {
    const ledger = this.entry();
    ledger.costMicros = (ledger.costMicros ?? 0) + micros;
  }

  private entry(): NonNullable<SessionSnapshot['ledger']> {
    return (this.s.ledger ??= { modelCalls: 0, toolCalls: 0 });
  }

  // ---- reading ----

  /** Reported token usage over the whole session, in total and per model label. */
  usage(): UsageTotals & { byModel: Record<string, UsageTotals> } {
    const byModel = this.s.usage ?? {};
    const total: UsageTotals = { inputTokens: 0, outputTokens: 0, steps: 0 };
    for (const u of Object.values(byModel)) {
      total.inputTokens += u.inputTokens;
      total.outputTokens += u.outputTokens;
      total.steps += u.steps;
    }
    return { ...total, byModel: { ...byModel } };
  }

  /** What the session has used of each budget limit: committed results only, so retries never count twice. */
  budgetUsed(): BudgetUsed {
    const u = this.usage();
    const ledger = this.s.ledger ?? { modelCalls: 0, toolCalls: 0 };
    // Tokens: the session's own (its usage totals) and its sub-sessions' (the ledger).
    return {
      inputTokens: u.inputTokens + (ledger.inputTokens ?? 0),
      outputTokens: u.outputTokens + (ledger.outputTokens ?? 0),
      modelCalls: ledger.modelCalls,
      toolCalls: ledger.toolCalls,
      costMicros: ledger.costMicros ?? 0,
    };
  }

  /** The budget's part of the `state` query; undefined when the session has no budget. */
  budgetView(): BudgetView | undefined {
    if (!this.s.budget) return undefined;
    const used = this.budgetUsed();
    return {
      limits: { ...this.s.budget },
      used,
      remaining: budgetRemaining(used, this.s.budget),
      ...(this.s.budgetPause ? { paused: { ...this.s.budgetPause } } : {}),
    };
  }

  // ---- the budget pause ----

  /** The limits in force; undefined when the session has no budget. */
  get limits(): BudgetLimits | undefined {
    return this.s.budget;
  }

  /** Sets the limits a session starts with (its config's); a carried session keeps the ones it had. */
  initBudget(limits: BudgetLimits): void {
    this.s.budget ??= { ...limits };
  }

  get paused(): { turn: number; step: number } | undefined {
    return this.s.budgetPause;
  }

  get lastDecision(): 'extend' | 'deny' | undefined {
    return this.s.lastBudgetDecision;
  }

  /** The `budget/exceeded` data for the step about to open; the core appends it, then `pause` if it waits. */
  exceeded(over: BudgetKey[], waits: boolean): EventDataMap['budget/exceeded'] {
    const step = this.s.step + 1;
    return { turn: this.s.turn, step, used: this.budgetUsed(), limits: { ...this.s.budget }, over, waits };
  }

  /** The turn now waits for a decision on its budget. */
  pause(at: { turn: number; step: number }): void {
    this.s.budgetPause = { turn: at.turn, step: at.step };
  }

  /**
   * Ends a budget pause (`extend` puts the new limits in force) and returns the `budget/resolved` data the core
   * appends; undefined (nothing to log) when not paused.
   */
  resolve(
    decision: 'extend' | 'deny',
    by: 'caller' | 'cancel',
    opts: { limits?: BudgetLimits; reason?: string },
  ): EventDataMap['budget/resolved'] | undefined {
    const pause = this.s.budgetPause;
    if (!pause) return undefined;
    if (decision === 'extend') this.s.budget = { ...this.s.budget, ...opts.limits };
    this.s.budgetPause = undefined;
    this.s.lastBudgetDecision = decision;
    return {
      ...pause,
      decision,
      limits: { ...this.s.budget },
      ...(opts.reason !== undefined ? { reason: opts.reason } : {}),
      by,
    };
  }
}
