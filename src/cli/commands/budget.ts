/**
 * `agent-sessions budget <id> extend [--model-calls N] [--tool-calls N] [--input-tokens N] [--output-tokens N]` and
 * `agent-sessions budget <id> deny` (the `budget` update): a person's decision on a session waiting at its budget.
 */
import { BudgetRefusedError } from '../../client';
import type { BudgetDecision, BudgetLimits } from '../../domain/wire';
import { intOpt, positionals, sessionIdArg, stringOpt } from '../args';
import { out, type Command } from '../command';
import { withSessions } from '../connect';
import { CliError, UsageError } from '../errors';

const LIMIT_OPTIONS = {
  'model-calls': 'modelCalls',
  'tool-calls': 'toolCalls',
  'input-tokens': 'inputTokens',
  'output-tokens': 'outputTokens',
  'cost-micros': 'costMicros',
} as const satisfies Record<string, keyof BudgetLimits>;

export const budgetCommand: Command = {
  name: 'budget',
  summary:
    'decide a session waiting at its budget: extend its limits, or deny (the turn ends BUDGET_EXCEEDED)',
  usage:
    'agent-sessions budget <id> extend [--model-calls N] [--tool-calls N] [--input-tokens N] [--output-tokens N] [--cost-micros N] [--reason TEXT]\n       agent-sessions budget <id> deny [--reason TEXT]',
  details: [
    'A session started with a budget (`start --budget`) logs budget/exceeded before a model step that would pass it',
    'and waits; `state` shows what is used. extend sets new limits (the others stay); each must let the step run.',
    'options:',
    '  --model-calls N, --tool-calls N, --input-tokens N, --output-tokens N, --cost-micros N   new limits (extend)',
    '  --reason TEXT  why (at most 4096 characters)',
  ].join('\n'),
  options: {
    'model-calls': { type: 'string' },
    'tool-calls': { type: 'string' },
    'input-tokens': { type: 'string' },
    'output-tokens': { type: 'string' },
    'cost-micros': { type: 'string' },
    reason: { type: 'string' },
  },
  connects: true,
  async run(p) {
    const [id, action] = positionals(p, ['id', 'decision']);
    const sessionId = sessionIdArg(id);
    const reason = stringOpt(p, 'reason');
    let decision: BudgetDecision;
    if (action === 'extend') {
      const limits: BudgetLimits = {};
      for (const [option, key] of Object.entries(LIMIT_OPTIONS)) {
        const value = intOpt(p, option, 1);
        if (value !== undefined) limits[key] = value;
      }
      if (!Object.keys(limits).length)
        throw new UsageError(`extend needs a new limit: --${Object.keys(LIMIT_OPTIONS).join(', --')}`);
      decision = { decision: 'extend', limits, ...(reason !== undefined ? { reason } : {}) };
    } else if (action === 'deny') {
      const named = Object.keys(LIMIT_OPTIONS).find((o) => stringOpt(p, o) !== undefined);
      if (named) throw new UsageError(`--${named} is for extend, not deny`);
      decision = { decision: 'deny', ...(reason !== undefined ? { reason } : {}) };
    } else throw new UsageError(`unknown budget decision "${action}" (expected: extend, deny)`);
    return withSessions(p, async (sessions) => {
      try {
        const receipt = await sessions.budget(sessionId, decision);
        out(
          receipt.decision === 'extend'
            ? `budget of session ${sessionId} extended: ${JSON.stringify(receipt.limits)}`
            : `budget of session ${sessionId} not extended: its turn ends BUDGET_EXCEEDED`,
        );
        return 0;
      } catch (err) {
        if (err instanceof BudgetRefusedError) throw new CliError(err.message);
        throw err;
      }
    });
  },
};
