/**
 * `agent-sessions versions`, `promote`, `ramp` and `rollback` (docs/upgrades.md "Operator commands"): the Worker
 * Deployment's versions with their sessions by status, and its routing set through the gRPC calls Temporal's own
 * `temporal worker deployment …` commands make (no Temporal CLI needed).
 */
import {
  describeVersions,
  EXECUTION_STATUSES,
  setCurrentVersion,
  setRampingVersion,
  type DeploymentReport,
} from '../../client';
import { boolOpt, positionals, stringOpt, type Parsed } from '../args';
import { out, type Command } from '../command';
import { connectSessions, resolveTarget } from '../connect';
import { UsageError } from '../errors';
import { borderlessTable } from './list';

const DEPLOYMENT_HELP =
  "  --deployment NAME   the Worker Deployment (default: the task queue's name, as the worker names it)";

function deploymentOpt(p: Parsed, taskQueue: string): string {
  const given = stringOpt(p, 'deployment');
  // The worker's default (src/worker/versioning.ts): the task queue's name with `.` as `-`.
  if (given === undefined) return taskQueue.replace(/\./g, '-');
  const name = given.trim();
  if (!name || name.length > 255 || name.includes('.'))
    throw new UsageError(
      `invalid --deployment "${given}": 1 to 255 characters without "." (Temporal joins deployment and build id with it)`,
    );
  return name;
}

function buildIdOpt(p: Parsed, required = true): string | undefined {
  const given = stringOpt(p, 'build-id');
  if (given === undefined) {
    if (required) throw new UsageError('missing --build-id B (the build id of the version)');
    return undefined;
  }
  const buildId = given.trim();
  if (!buildId || buildId.length > 255)
    throw new UsageError(`invalid --build-id "${given}": 1 to 255 characters`);
  return buildId;
}

/** `--percent 10` or `10%`: a number from 0 to 100. */
export function percentOpt(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const m = /^(\d+(?:\.\d+)?)%?$/.exec(text.trim());
  const n = m ? Number(m[1]) : NaN;
  if (!(n >= 0 && n <= 100))
    throw new UsageError(`invalid --percent "${text}": a percentage from 0 to 100 (e.g. 10)`);
  return n;
}

/** Runs `fn` with the client of the worker's target (as `upgrade` does: not the dev chat's unversioned queue). */
async function withDeployment<T>(
  p: Parsed,
  fn: (
    client: Parameters<typeof describeVersions>[0],
    deploymentName: string,
    workflowType: string,
  ) => Promise<T>,
): Promise<T> {
  const { sessions, close } = await connectSessions(resolveTarget(p, process.env, { devTaskQueue: false }));
  try {
    return await fn(sessions.client, deploymentOpt(p, sessions.taskQueue), sessions.workflowType);
  } finally {
    await close();
  }
}

/** The report as a table: one row per version. */
export function renderVersions(report: DeploymentReport): string {
  const table = borderlessTable(['BUILD ID', 'ROLE', 'DRAINAGE', 'SESSIONS']);
  for (const v of report.versions) {
    const sessions = EXECUTION_STATUSES.flatMap((s) =>
      v.sessions[s] ? [`${s.toLowerCase()} ${v.sessions[s]}`] : [],
    );
    const role = v.role === 'ramping' ? `ramping ${report.rampingPercent}%` : v.role;
    table.push([v.buildId, role, v.drainage, sessions.join(', ') || '-']);
  }
  const head = `Worker Deployment ${report.deploymentName}: current ${report.current ?? 'none'}${
    report.ramping ? `, ramping ${report.ramping} at ${report.rampingPercent}%` : ''
  }`;
  return report.versions.length ? `${head}\n${table.toString()}` : `${head}\nno versions`;
}

const JSON_HELP = '  --json              print the result as one JSON object';

export const versionsCommand: Command = {
  name: 'versions',
  summary: "the Worker Deployment's versions (current, ramping, draining) and their sessions by status",
  usage: 'agent-sessions versions [--deployment NAME] [--json]',
  details: [
    'Lists the versions Temporal knows for the deployment and counts the sessions on each by status (visibility',
    'query on TemporalWorkerDeploymentVersion="<deployment>:<build id>").',
    'options:',
    DEPLOYMENT_HELP,
    JSON_HELP,
  ].join('\n'),
  options: { deployment: { type: 'string' }, json: { type: 'boolean' } },
  connects: true,
  async run(p) {
    positionals(p, []);
    const report = await withDeployment(p, (client, name, type) => describeVersions(client, name, type));
    out(boolOpt(p, 'json') ? JSON.stringify(report) : renderVersions(report));
    return 0;
  },
};

/** `promote` and `rollback`: both set the current version; a rollback also removes the ramp. */
function currentCommand(
  name: 'promote' | 'rollback',
  summary: string,
  details: string[],
  done: (deployment: string, buildId: string, previous: string | undefined) => string,
): Command {
  return {
    name,
    summary,
    usage: `agent-sessions ${name} --build-id B [--deployment NAME]`,
    details: [
      ...details,
      'options:',
      `  --build-id B        the version (its workers must run)`,
      DEPLOYMENT_HELP,
    ].join('\n'),
    options: { 'build-id': { type: 'string' }, deployment: { type: 'string' } },
    connects: true,
    async run(p) {
      positionals(p, []);
      const buildId = buildIdOpt(p)!;
      await withDeployment(p, async (client, deployment) => {
        const clearRamp = name === 'rollback';
        const { previous } = await setCurrentVersion(client, deployment, buildId, { clearRamp });
        out(done(deployment, buildId, previous));
      });
      return 0;
    },
  };
}

export const promoteCommand = currentCommand(
  'promote',
  'make a version the current one of its Worker Deployment (new sessions start on it, others move)',
  [
    'Sets the current version (Temporal: set-current-version). New sessions start on it; each running session moves',
    'at its next quiet point; `agent-sessions upgrade` moves idle ones now. Check the build first: `agent-sessions check`.',
  ],
  (d, b, previous) => `${d}: current version is now ${b} (was ${previous ?? 'none'})`,
);

export const rollbackCommand = currentCommand(
  'rollback',
  'set the current version back to an older build, removing any ramp',
  [
    'Removes the ramping version, if any, and makes B current again. Sessions still on B stay; sessions already on',
    'the newer build move back at their next quiet point; new sessions start on B.',
  ],
  (d, b, previous) => `${d}: rolled back to ${b} (was ${previous ?? 'none'}); no version ramps`,
);

export const rampCommand: Command = {
  name: 'ramp',
  summary: 'send a percentage of sessions to a version before it becomes current (--off removes the ramp)',
  usage: 'agent-sessions ramp --build-id B --percent P [--deployment NAME] | ramp --off [--deployment NAME]',
  details: [
    'Sets the ramping version (Temporal: set-ramping-version): P % of session ids start on B, and running sessions of',
    'those ids move to it at their next quiet point. `--off` removes the ramp.',
    'options:',
    '  --build-id B        the version to ramp',
    '  --percent P         the share of sessions, 0 to 100',
    '  --off               remove the ramping version',
    DEPLOYMENT_HELP,
  ].join('\n'),
  options: {
    'build-id': { type: 'string' },
    percent: { type: 'string' },
    off: { type: 'boolean' },
    deployment: { type: 'string' },
  },
  connects: true,
  async run(p) {
    positionals(p, []);
    const off = boolOpt(p, 'off');
    const buildId = buildIdOpt(p, !off);
    const percent = percentOpt(stringOpt(p, 'percent'));
    if (off && (buildId !== undefined || percent !== undefined))
      throw new UsageError('--off takes no --build-id or --percent');
    if (!off && percent === undefined) throw new UsageError('missing --percent P (0 to 100)');
    await withDeployment(p, async (client, name) => {
      await setRampingVersion(client, name, off ? undefined : buildId, percent ?? 0);
      out(off ? `${name}: no version ramps` : `${name}: ${buildId} ramps at ${percent}%`);
    });
    return 0;
  },
};
