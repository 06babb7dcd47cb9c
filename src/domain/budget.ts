/**
 * A session's budget (wire): the limits `SessionConfig.budget` sets and a person's `budget` decision extends, what
 * the ledger counts against them, and the pure check the loop makes before each model step. Pure.
 */
import { z } from 'zod';
import { lazy } from './lazy';

/** Spending limits of a session (`SessionConfig.budget`, and an `extend` decision's new limits). */
export const BudgetLimitsSchema = lazy(() =>
  z.strictObject({
    /** Input tokens the providers reported, over the whole session. */
    inputTokens: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional(),
    /** Output tokens the providers reported, over the whole session. */
    outputTokens: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional(),
    /** Model answers committed (`assistant/message` events). */
    modelCalls: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional(),
    /** Tool results committed (`tool/result` events). */
    toolCalls: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional(),
    /** Cost in millionths of the price table's currency, from the worker's prices (AGENT_SESSIONS_MODEL_PRICES). */
    costMicros: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional(),
  }),
);
export type BudgetLimits = z.infer<typeof BudgetLimitsSchema>;
export const BUDGET_LIMIT_KEYS = [
  'inputTokens',
  'outputTokens',
  'modelCalls',
  'toolCalls',
  'costMicros',
] as const;
export type BudgetKey = (typeof BUDGET_LIMIT_KEYS)[number];

/** What a session has used of each budget limit (committed results only; retries never count twice). */
export type BudgetUsed = Record<BudgetKey, number>;

/** `budget` update argument (wire): a person's decision on a session paused at its budget. */
export const BudgetDecisionSchema = lazy(() =>
  z.discriminatedUnion('decision', [
    z.strictObject({
      decision: z.literal('extend'),
      /** The new limits (the ones not named stay); each must exceed what the session has used. */
      limits: BudgetLimitsSchema.refine((l) => BUDGET_LIMIT_KEYS.some((k) => l[k] !== undefined), {
        message: `name at least one limit (${BUDGET_LIMIT_KEYS.join(', ')})`,
      }),
      reason: z.string().max(4096).optional(),
    }),
    z.strictObject({ decision: z.literal('deny'), reason: z.string().max(4096).optional() }),
  ]),
);
export type BudgetDecision = z.infer<typeof BudgetDecisionSchema>;

/** `budget` update result (wire): the decision and the limits in force after it. */
export interface BudgetReceipt {
  decision: 'extend' | 'deny';
  limits: BudgetLimits;
}

/**
 * The limits the next model step would breach, given what is used: tokens at or over their limit (any request
 * spends more), model calls when one more would pass it, tool calls once past it (a step within the limit runs; the
 * batch it asks for can take the count over, and the step after it waits). Empty when the step may run.
 */
export function budgetBreaches(used: BudgetUsed, limits: BudgetLimits): BudgetKey[] {
  return BUDGET_LIMIT_KEYS.filter((k) => {
    const limit = limits[k];
    if (limit === undefined) return false;
    if (k === 'modelCalls') return used[k] + 1 > limit;
    if (k === 'toolCalls') return used[k] > limit;
    return used[k] >= limit;
  });
}

/** The least value of a limit that lets the next model step run, given what is used. */
export function budgetFloor(key: BudgetKey, used: BudgetUsed): number {
  return key === 'toolCalls' ? used[key] : used[key] + 1;
}

/** What is left of each limit (never below 0); limits not set are absent. */
export function budgetRemaining(used: BudgetUsed, limits: BudgetLimits): Partial<BudgetUsed> {
  const left: Partial<BudgetUsed> = {};
  for (const k of BUDGET_LIMIT_KEYS) {
    const limit = limits[k];
    if (limit !== undefined) left[k] = Math.max(0, limit - used[k]);
  }
  return left;
}

/** A model's price on the worker: currency units (e.g. USD) per million input and output tokens. */
export const ModelPriceSchema = lazy(() =>
  z.strictObject({
    inputPerMillion: z.number().min(0).max(1_000_000),
    outputPerMillion: z.number().min(0).max(1_000_000),
  }),
);
export type ModelPrice = z.infer<typeof ModelPriceSchema>;

/** The worker's price table, by model label (`provider:model`, as `AgentSessionModel` shows it). */
export const ModelPricesSchema = lazy(() => z.record(z.string().min(1).max(256), ModelPriceSchema));
export type ModelPrices = z.infer<typeof ModelPricesSchema>;

/** What a model answer cost, in millionths of the price's currency (units per million tokens × tokens). */
export function costMicrosOf(
  usage: { inputTokens?: number; outputTokens?: number },
  price: ModelPrice,
): number {
  return Math.round(
    (usage.inputTokens ?? 0) * price.inputPerMillion + (usage.outputTokens ?? 0) * price.outputPerMillion,
  );
}
