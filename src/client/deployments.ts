/**
 * Operator view and routing of a Worker Deployment (docs/upgrades.md "Operator commands"): the versions Temporal
 * knows with how many sessions of each status run on each (visibility counts on `TemporalWorkerDeploymentVersion`),
 * and promote / ramp / roll back through the same gRPC calls `temporal worker deployment …` makes, each guarded by
 * the deployment's conflict token. Does I/O (gRPC, visibility).
 */
import type { Client } from '@temporalio/client';
import { WORKFLOW_TYPE } from '../contract';

/** Visibility's `ExecutionStatus` values, in the order they are shown. */
export const EXECUTION_STATUSES = [
  'Running',
  'Completed',
  'ContinuedAsNew',
  'Failed',
  'Canceled',
  'Terminated',
  'TimedOut',
] as const;
export type ExecutionStatusName = (typeof EXECUTION_STATUSES)[number];

/** One version of a deployment as {@link describeVersions} reports it. */
export interface VersionReport {
  buildId: string;
  /** `current`, `ramping` or `-` (neither). */
  role: 'current' | 'ramping' | '-';
  /** Temporal's drainage status of a version that is neither current nor ramping: `draining`, `drained` or `-`. */
  drainage: string;
  /** Runs of the deployment's workflow type on this version, by status (statuses with none left out). */
  sessions: Partial<Record<ExecutionStatusName, number>>;
}

export interface DeploymentReport {
  deploymentName: string;
  current: string | undefined;
  ramping: string | undefined;
  /** The ramping version's share of new sessions, 0–100 (0 when none ramps). */
  rampingPercent: number;
  versions: VersionReport[];
}

const NOT_FOUND = 5;
const quote = (s: string) => JSON.stringify(s);

async function describeDeployment(client: Client, deploymentName: string) {
  try {
    return await client.workflowService.describeWorkerDeployment({
      namespace: client.options.namespace,
      deploymentName,
    });
  } catch (err) {
    if ((err as { code?: unknown }).code === NOT_FOUND)
      throw new Error(`no Worker Deployment ${deploymentName}: no versioned worker has run in it`, {
        cause: err,
      });
    throw err;
  }
}

/** `VERSION_DRAINAGE_STATUS_DRAINING` (or its number) → `draining`. */
function drainageName(status: unknown): string {
  const names = ['-', 'draining', 'drained'];
  if (typeof status === 'number') return names[status] ?? String(status);
  if (typeof status === 'string') return status.replace(/^VERSION_DRAINAGE_STATUS_/, '').toLowerCase();
  return '-';
}

/**
 * The deployment's versions (current first, then ramping, then the others newest first) with the count of runs of
 * `workflowType` on each by status. Throws when the deployment does not exist.
 */
export async function describeVersions(
  client: Client,
  deploymentName: string,
  workflowType: string = WORKFLOW_TYPE,
): Promise<DeploymentReport> {
  const described = await describeDeployment(client, deploymentName);
  const info = described.workerDeploymentInfo;
  const routing = info?.routingConfig;
  const current = routing?.currentDeploymentVersion?.buildId || undefined;
  const ramping = routing?.rampingDeploymentVersion?.buildId || undefined;
  const summaries = [...(info?.versionSummaries ?? [])].sort(
    (a, b) => Number(b.createTime?.seconds ?? 0) - Number(a.createTime?.seconds ?? 0),
  );
  const versions: VersionReport[] = [];
  for (const s of summaries) {
    const buildId = s.deploymentVersion?.buildId ?? s.version?.split('.').slice(1).join('.') ?? '';
    const role = buildId === current ? 'current' : buildId === ramping ? 'ramping' : '-';
    const sessions: VersionReport['sessions'] = {};
    for (const status of EXECUTION_STATUSES) {
      const { count } = await client.workflow.count(
        [
          `WorkflowType = ${quote(workflowType)}`,
          `TemporalWorkerDeploymentVersion = ${quote(`${deploymentName}:${buildId}`)}`,
          `ExecutionStatus = ${quote(status)}`,
        ].join(' AND '),
      );
      if (count > 0) sessions[status] = count;
    }
    versions.push({
      buildId,
      role,
      drainage: role === '-' ? drainageName(s.drainageStatus ?? s.drainageInfo?.status) : '-',
      sessions,
    });
  }
  const rank = (v: VersionReport) => (v.role === 'current' ? 0 : v.role === 'ramping' ? 1 : 2);
  versions.sort((a, b) => rank(a) - rank(b));
  return {
    deploymentName,
    current,
    ramping,
    rampingPercent: ramping ? (routing?.rampingVersionPercentage ?? 0) : 0,
    versions,
  };
}

/** The deployment's known build ids; throws naming the build id when it is not one of them. */
async function knownVersion(client: Client, deploymentName: string, buildId: string) {
  const described = await describeDeployment(client, deploymentName);
  const known = (described.workerDeploymentInfo?.versionSummaries ?? []).map(
    (s) => s.deploymentVersion?.buildId,
  );
  if (!known.includes(buildId))
    throw new Error(
      `build id ${buildId} is not a version of Worker Deployment ${deploymentName} (its versions: ${known.join(', ') || 'none'}); start a worker of that build first`,
    );
  return described;
}

/**
 * Makes `buildId` the deployment's current version (promote, or roll back to an older one), as `temporal worker
 * deployment set-current-version` does. With `clearRamp`, a ramping version is removed first (a rollback should send
 * no share of new sessions to the build rolled back from). Returns the previous current build id.
 */
export async function setCurrentVersion(
  client: Client,
  deploymentName: string,
  buildId: string,
  options: { clearRamp?: boolean; identity?: string } = {},
): Promise<{ previous: string | undefined }> {
  let described = await knownVersion(client, deploymentName, buildId);
  const routing = described.workerDeploymentInfo?.routingConfig;
  const previous = routing?.currentDeploymentVersion?.buildId || undefined;
  if (options.clearRamp && routing?.rampingDeploymentVersion?.buildId) {
    await setRampingVersion(client, deploymentName, undefined, 0, options);
    described = await describeDeployment(client, deploymentName);
  }
  await client.workflowService.setWorkerDeploymentCurrentVersion({
    namespace: client.options.namespace,
    deploymentName,
    buildId,
    conflictToken: described.conflictToken,
    identity: options.identity ?? client.options.identity ?? 'agent-sessions',
  });
  return { previous };
}

/**
 * Ramps `buildId` to `percent` (0–100) of new sessions (and of running ones, which move at their quiet points), as
 * `temporal worker deployment set-ramping-version` does; `buildId` undefined removes the ramp (`--delete`).
 */
export async function setRampingVersion(
  client: Client,
  deploymentName: string,
  buildId: string | undefined,
  percent: number,
  options: { identity?: string } = {},
): Promise<void> {
  if (!(Number.isFinite(percent) && percent >= 0 && percent <= 100))
    throw new Error(`invalid ramp percentage ${percent}: must be between 0 and 100`);
  const described =
    buildId === undefined
      ? await describeDeployment(client, deploymentName)
      : await knownVersion(client, deploymentName, buildId);
  const current = described.workerDeploymentInfo?.routingConfig?.currentDeploymentVersion?.buildId;
  if (buildId !== undefined && buildId === current)
    throw new Error(`build id ${buildId} is the current version of ${deploymentName}: it cannot also ramp`);
  await client.workflowService.setWorkerDeploymentRampingVersion({
    namespace: client.options.namespace,
    deploymentName,
    buildId: buildId ?? '',
    percentage: buildId === undefined ? 0 : percent,
    conflictToken: described.conflictToken,
    identity: options.identity ?? client.options.identity ?? 'agent-sessions',
  });
}
