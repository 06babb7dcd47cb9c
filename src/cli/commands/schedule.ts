/**
 * `agent-sessions schedule create|list|show|trigger|delete`: recurring followups to a session on Temporal
 * Schedules (src/client/schedules.ts). Each firing delivers the prompt with its own deterministic message id, so a
 * retried firing is a duplicate, and starts the session (with `start`'s options) when it does not exist.
 */
import { ScheduleAlreadyRunning } from '@temporalio/client';
import {
  OVERLAP_POLICIES,
  ScheduleNotFoundError,
  type FollowupSchedule,
  type OverlapPolicy,
} from '../../client';
import { boolOpt, positionals, sessionIdArg, stringOpt } from '../args';
import { out, type Command } from '../command';
import { withSessions } from '../connect';
import { CliError, UsageError } from '../errors';
import { parseDuration } from './list';
import { configFrom, startOptionsHelp, START_OPTIONS } from './start';

const ACTIONS = ['create', 'list', 'show', 'trigger', 'delete'] as const;

export const scheduleCommand: Command = {
  name: 'schedule',
  summary: 'recurring followups to a session (Temporal Schedules): create, list, show, trigger, delete',
  usage: [
    'agent-sessions schedule create <scheduleId> <sessionId> <text…> (--every D | --cron EXPR) [--overlap P] [--catchup D] [--paused] [start options]',
    '       agent-sessions schedule list [--json]',
    '       agent-sessions schedule show <scheduleId> [--json]',
    '       agent-sessions schedule trigger <scheduleId>',
    '       agent-sessions schedule delete <scheduleId>',
  ].join('\n'),
  details: [
    'Each firing sends <text…> to the session as a followup whose id is the firing’s workflow id',
    '(schedule:<scheduleId>-<time>): a retried firing is a duplicate, not a second turn. A session that does not',
    'exist is started with the start options below; a disposed one is not started again (the firing fails).',
    'options of create:',
    '  --every D      fire every D (e.g. 30s, 15m, 1h, 1d; at least 1s)',
    '  --cron EXPR    fire on a cron expression (e.g. "0 9 * * 1-5"; @daily, @hourly)',
    `  --overlap P    a firing while the last one still runs: ${OVERLAP_POLICIES.join(', ')} (default skip)`,
    '  --catchup D    how late a firing missed while the server was down may still run (at least 10s)',
    '  --paused       create it paused',
    startOptionsHelp,
    '--json (list, show): one JSON object per schedule.',
  ].join('\n'),
  options: {
    every: { type: 'string' },
    cron: { type: 'string' },
    overlap: { type: 'string' },
    catchup: { type: 'string' },
    paused: { type: 'boolean' },
    json: { type: 'boolean' },
    ...START_OPTIONS,
  },
  connects: true,
  async run(p) {
    const action = p.positionals[0];
    if (!action) throw new UsageError(`missing <action> (${ACTIONS.join(', ')})`);
    if (!(ACTIONS as readonly string[]).includes(action))
      throw new UsageError(`unknown schedule action "${action}" (expected: ${ACTIONS.join(', ')})`);
    if (action === 'create') return create(p);
    if (action === 'list') {
      positionals(p, ['action']);
      return withSessions(p, async (sessions) => {
        const rows = await sessions.schedules.list();
        if (boolOpt(p, 'json')) for (const row of rows) out(JSON.stringify(row));
        else if (!rows.length) out('no schedules of followups');
        else for (const row of rows) out(line(row));
        return 0;
      });
    }
    const [, scheduleId] = positionals(p, ['action', 'scheduleId']);
    return withSessions(p, async (sessions) => {
      try {
        if (action === 'show') {
          const row = await sessions.schedules.describe(scheduleId!);
          if (boolOpt(p, 'json')) out(JSON.stringify(row));
          else {
            out(line(row));
            if (row.content !== undefined) out(`  prompt: ${row.content}`);
            for (const r of row.recent) out(`  fired ${r.scheduledAt.toISOString()} as ${r.workflowId}`);
          }
        } else if (action === 'trigger') {
          await sessions.schedules.trigger(scheduleId!);
          out(`schedule ${scheduleId} fired`);
        } else {
          await sessions.schedules.delete(scheduleId!);
          out(`schedule ${scheduleId} deleted (its session and what it delivered stay)`);
        }
      } catch (err) {
        if (err instanceof ScheduleNotFoundError) throw new CliError(`no schedule ${scheduleId}`);
        throw err;
      }
      return 0;
    });
  },
};

async function create(p: Parameters<Command['run']>[0]): Promise<number> {
  const [, scheduleId, session] = p.positionals;
  if (!scheduleId) throw new UsageError('missing <scheduleId>');
  const sessionId = sessionIdArg(session);
  const words = p.positionals.slice(3);
  if (!words.length) throw new UsageError('missing <text>');
  const every = stringOpt(p, 'every');
  const cron = stringOpt(p, 'cron');
  if ((every === undefined) === (cron === undefined)) throw new UsageError('give one of --every and --cron');
  const overlap = stringOpt(p, 'overlap');
  if (overlap !== undefined && !(OVERLAP_POLICIES as readonly string[]).includes(overlap))
    throw new UsageError(`invalid --overlap "${overlap}" (one of ${OVERLAP_POLICIES.join(', ')})`);
  const catchup = stringOpt(p, 'catchup');
  const config = configFrom(p);
  return withSessions(p, async (sessions) => {
    try {
      const row = await sessions.schedules.create(scheduleId, {
        sessionId,
        content: words.join(' '),
        ...(Object.keys(config).length ? { config } : {}),
        ...(every !== undefined ? { everyMs: parseDuration(every, '--every') } : {}),
        ...(cron !== undefined ? { cron } : {}),
        ...(overlap !== undefined ? { overlap: overlap as OverlapPolicy } : {}),
        ...(catchup !== undefined ? { catchupWindowMs: parseDuration(catchup, '--catchup') } : {}),
        ...(boolOpt(p, 'paused') ? { paused: true } : {}),
      });
      out(`created ${line(row)}`);
      return 0;
    } catch (err) {
      if (err instanceof ScheduleAlreadyRunning) throw new CliError(`schedule ${scheduleId} already exists`);
      throw err;
    }
  });
}

function line(row: FollowupSchedule): string {
  const next = row.nextRuns[0];
  return [
    `schedule ${row.scheduleId} → session ${row.sessionId}: ${row.spec}`,
    row.paused ? 'paused' : next ? `next ${next.toISOString()}` : 'no next firing',
    `${row.recent.length} recent firing${row.recent.length === 1 ? '' : 's'}`,
  ].join(' · ');
}
