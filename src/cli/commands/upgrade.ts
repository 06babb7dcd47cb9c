/**
 * `agent-sessions upgrade`: asks every running session still on an old version of its Worker Deployment to move to
 * the current (or ramping) one now, throttled (docs/upgrades.md). Each moves at its next quiet point: an idle one at
 * once, one in a turn after that turn.
 */
import { DEFAULT_UPGRADE_RATE, upgradeSessions } from '../../client';
import { boolOpt, intOpt, positionals, stringOpt } from '../args';
import { out, type Command } from '../command';
import { connectSessions, resolveTarget } from '../connect';
import { UsageError } from '../errors';

/** `--rate 50` or `--rate 50/s`. */
function rateOpt(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const m = /^(\d+(?:\.\d+)?)(?:\/s)?$/.exec(text.trim());
  const rate = m ? Number(m[1]) : NaN;
  if (!(rate > 0 && rate <= 10_000))
    throw new UsageError(`invalid --rate "${text}": signals a second, e.g. 50/s (at most 10000)`);
  return rate;
}

export const upgradeCommand: Command = {
  name: 'upgrade',
  summary: "move sessions still on an old version to the deployment's current one now (throttled)",
  usage: 'agent-sessions upgrade [--deployment NAME] [--query Q] [--rate N/s] [--limit N] [--json]',
  details: [
    'Signals `upgrade` to every running session whose version is neither the current nor the ramping one of its',
    'Worker Deployment. An idle session moves at once; one in a turn (or waiting for an approval) after that turn.',
    'options:',
    "  --deployment NAME   the Worker Deployment (default: the task queue's name, as the worker names it)",
    '  --query Q           a raw Temporal visibility query, ANDed with the rest',
    `  --rate N/s          signals a second at most (default ${DEFAULT_UPGRADE_RATE})`,
    '  --limit N           signal at most N sessions',
    '  --json              print the report as one JSON object',
  ].join('\n'),
  options: {
    deployment: { type: 'string' },
    query: { type: 'string' },
    rate: { type: 'string' },
    limit: { type: 'string' },
    json: { type: 'boolean' },
  },
  connects: true,
  async run(p) {
    positionals(p, []);
    const rate = rateOpt(stringOpt(p, 'rate'));
    const limit = intOpt(p, 'limit', 1);
    const deploymentName = stringOpt(p, 'deployment');
    const query = stringOpt(p, 'query');
    // The worker's deployment: next to `agent-sessions dev`, not the dev chat's queue (its worker is unversioned).
    const { sessions, close } = await connectSessions(resolveTarget(p, process.env, { devTaskQueue: false }));
    try {
      const report = await upgradeSessions(
        sessions.client,
        { taskQueue: sessions.taskQueue, workflowType: sessions.workflowType },
        {
          ...(deploymentName !== undefined ? { deploymentName } : {}),
          ...(query !== undefined ? { query } : {}),
          ...(rate !== undefined ? { rate } : {}),
          ...(limit !== undefined ? { limit } : {}),
        },
      );
      if (boolOpt(p, 'json')) out(JSON.stringify(report));
      else {
        out(
          `upgrade sent to ${report.signalled.length} session(s) of ${report.deploymentName} not on ${report.targets.join(' or ')}`,
        );
        for (const f of report.failed) out(`  not sent to ${f.sessionId}: ${f.error}`);
      }
      return report.failed.length ? 1 : 0;
    } finally {
      await close();
    }
  },
};
