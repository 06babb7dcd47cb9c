/**
 * `agent-sessions usage`: token usage summed over the sessions a visibility query matches (the `list` filters), in
 * total and per model, from the sessions' AgentSessionInputTokens / AgentSessionOutputTokens attributes.
 */
import type { UsageSummary } from '../../client';
import { boolOpt } from '../args';
import { out, type Command } from '../command';
import { withSessions } from '../connect';
import { borderlessTable, FILTER_HELP, FILTER_OPTIONS, listFilters } from './list';

export const usageCommand: Command = {
  name: 'usage',
  summary: 'token usage summed over sessions (Temporal visibility), in total and per model',
  usage:
    'agent-sessions usage [--status S] [--label L] [--model M] [--tenant T] [--idle-for DURATION] [--query Q] [--json]',
  details: ['options:', ...FILTER_HELP, '  --json           the sums as one JSON object'].join('\n'),
  options: { ...FILTER_OPTIONS, json: { type: 'boolean' } },
  connects: true,
  async run(p) {
    const filters = listFilters(p);
    return withSessions(p, async (sessions) => {
      const summary = await sessions.usage(filters);
      out(boolOpt(p, 'json') ? JSON.stringify(summary) : usageTable(summary));
      return 0;
    });
  },
};

/** Per-model rows and a total, borderless like `list`. */
export function usageTable(summary: UsageSummary): string {
  if (summary.sessions === 0) return 'no sessions match';
  const table = borderlessTable(['MODEL', 'SESSIONS', 'INPUT TOKENS', 'OUTPUT TOKENS']);
  const models = Object.entries(summary.byModel).sort(([a], [b]) => a.localeCompare(b));
  for (const [model, u] of models) table.push([model, u.sessions, u.inputTokens, u.outputTokens]);
  table.push(['total', summary.sessions, summary.inputTokens, summary.outputTokens]);
  return table.toString();
}
