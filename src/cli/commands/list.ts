/**
 * `agent-sessions list`: sessions found through Temporal visibility (their search attributes), as a table or JSON
 * lines. Filters: status, label, model, idle for more than a duration, a raw visibility query. The table is drawn
 * by cli-table3 without borders, like other operator CLIs print lists.
 */
import Table from 'cli-table3';
import { MAX_LIST_LIMIT, type SessionListFilters, type SessionRow } from '../../client';
import { boolOpt, intOpt, stringOpt, type OptionSpec, type Parsed } from '../args';
import { out, type Command } from '../command';
import { withSessions } from '../connect';
import { UsageError } from '../errors';

const STATUSES = ['idle', 'running', 'disposed'] as const;

/** The filter options `list` and `usage` share. */
export const FILTER_OPTIONS: OptionSpec = {
  status: { type: 'string' },
  label: { type: 'string' },
  model: { type: 'string' },
  tenant: { type: 'string' },
  'idle-for': { type: 'string' },
  query: { type: 'string' },
};

export const FILTER_HELP = [
  '  --status S       idle, running or disposed (default: every session not disposed)',
  '  --label L        sessions started with this label (SessionConfig.labels)',
  '  --model M        by model: scripted, local, openai:gpt-4o-mini, default (none named), …',
  '  --tenant T       sessions of this tenant (SessionConfig.tenant)',
  '  --idle-for D     idle sessions whose last activity is older than D (e.g. 90s, 15m, 2h, 1d)',
  '  --query Q        a raw Temporal visibility query, ANDed with the rest',
];

/** The visibility filters of the parsed options; throws a UsageError naming a bad one. */
export function listFilters(p: Parsed): Omit<SessionListFilters, 'limit' | 'pageToken'> {
  if (p.positionals.length) throw new UsageError(`unexpected argument "${p.positionals[0]}"`);
  const status = stringOpt(p, 'status');
  if (status !== undefined && !(STATUSES as readonly string[]).includes(status))
    throw new UsageError(`invalid --status "${status}": idle, running or disposed`);
  const idleFor = stringOpt(p, 'idle-for');
  const idleForMs = idleFor === undefined ? undefined : parseDuration(idleFor);
  return {
    ...(status !== undefined ? { status: status as (typeof STATUSES)[number] } : {}),
    ...optional('label', stringOpt(p, 'label')),
    ...optional('model', stringOpt(p, 'model')),
    ...optional('tenant', stringOpt(p, 'tenant')),
    ...optional('query', stringOpt(p, 'query')),
    ...(idleForMs !== undefined ? { idleForMs } : {}),
  };
}

export const listCommand: Command = {
  name: 'list',
  summary:
    'list sessions (Temporal visibility): id, status, turn, pending, model, tokens, last activity, age',
  usage:
    'agent-sessions list [--status S] [--label L] [--model M] [--tenant T] [--idle-for DURATION] [--query Q] [--limit N] [--page-token T] [--json]',
  details: [
    'options:',
    ...FILTER_HELP,
    '  --limit N        sessions per page, newest first (1 to 1000, default 50)',
    '  --page-token T   the next page: the token the page before printed (same filters)',
    '  --json           one JSON object per session; then {"nextPageToken": T} when there is more',
  ].join('\n'),
  options: {
    ...FILTER_OPTIONS,
    limit: { type: 'string' },
    'page-token': { type: 'string' },
    json: { type: 'boolean' },
  },
  connects: true,
  async run(p) {
    const limit = intOpt(p, 'limit', 1);
    if (limit !== undefined && limit > MAX_LIST_LIMIT)
      throw new UsageError(`invalid --limit ${limit}: at most ${MAX_LIST_LIMIT} sessions per page`);
    const pageToken = stringOpt(p, 'page-token');
    const filters = {
      ...listFilters(p),
      ...(limit !== undefined ? { limit } : {}),
      ...(pageToken !== undefined ? { pageToken } : {}),
    };
    return withSessions(p, async (sessions) => {
      const page = await sessions.list(filters);
      if (boolOpt(p, 'json')) {
        for (const row of page.sessions) out(JSON.stringify(row));
        if (page.nextPageToken) out(JSON.stringify({ nextPageToken: page.nextPageToken }));
        return 0;
      }
      if (page.sessions.length || !pageToken) out(sessionTable(page.sessions));
      if (page.nextPageToken) out(`(more: the next page with --page-token ${page.nextPageToken})`);
      else if (pageToken) out('(no more sessions)');
      return 0;
    });
  },
};

/** The rows as a borderless table with a header. */
export function sessionTable(rows: readonly SessionRow[], now = Date.now()): string {
  // A TENANT column only when a session has a tenant (a deployment without tenants prints what it always did).
  const tenants = rows.some((r) => r.tenant !== undefined);
  const table = borderlessTable([
    'ID',
    ...(tenants ? ['TENANT'] : []),
    'STATUS',
    'TURN',
    'PENDING',
    'MODEL',
    'TOKENS IN/OUT',
    'LAST ACTIVITY',
    'AGE',
  ]);
  for (const r of rows)
    table.push([
      r.id,
      ...(tenants ? [r.tenant ?? '-'] : []),
      r.status,
      r.turn ?? '-',
      r.pending ?? '-',
      r.model ?? '-',
      r.inputTokens !== undefined ? `${r.inputTokens}/${r.outputTokens ?? 0}` : '-',
      r.lastActivity ? `${ago(now - Date.parse(r.lastActivity))} ago` : '-',
      ago(now - Date.parse(r.startTime)),
    ]);
  return rows.length ? table.toString() : 'no sessions match';
}

/** A cli-table3 table without borders, columns two spaces apart, the way operator CLIs print lists. */
export function borderlessTable(head: string[]): Table.Table {
  const none = [
    'top',
    'top-mid',
    'top-left',
    'top-right',
    'bottom',
    'bottom-mid',
    'bottom-left',
    'bottom-right',
  ];
  const chars = Object.fromEntries(
    [...none, 'left', 'left-mid', 'mid', 'mid-mid', 'right', 'right-mid'].map((k) => [k, '']),
  );
  return new Table({
    head,
    chars: { ...chars, middle: '  ' },
    style: { head: [], border: [], 'padding-left': 0, 'padding-right': 0 },
  });
}

function optional<K extends string>(key: K, value: string | undefined): { [P in K]?: string } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: string };
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `90s`, `15m`, `2h`, `1d`, `500ms` → milliseconds; throws a UsageError naming the option. */
export function parseDuration(text: string, option = '--idle-for'): number {
  const m = /^(\d+)(ms|s|m|h|d)$/.exec(text.trim());
  if (!m) throw new UsageError(`invalid ${option} "${text}": a number with ms, s, m, h or d (e.g. 15m)`);
  return Number(m[1]) * UNITS[m[2]!]!;
}

/** A short age: 42s, 5m, 3h, 2d. */
function ago(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.round(s / 60)}m`;
  if (s < 172_800) return `${Math.round(s / 3600)}h`;
  return `${Math.round(s / 86_400)}d`;
}
