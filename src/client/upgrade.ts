/**
 * "Move now" (docs/upgrades.md): signals `upgrade` to every running session still on an old version of its Worker
 * Deployment, found through visibility (`TemporalWorkerDeploymentVersion`, which the server sets on every versioned
 * run), at most `rate` signals a second, so thousands of sessions do not continue as new in the same second. A
 * session that has no new version to move to ignores the signal. Does I/O (visibility, gRPC, signals).
 */
import type { Client } from '@temporalio/client';
import { z } from 'zod';
import { upgradeSignal, WORKFLOW_TYPE } from '../contract';
import { describeZodIssue } from '../domain/util';

/** Default signals a second of {@link upgradeSessions}. */
export const DEFAULT_UPGRADE_RATE = 50;

export const UpgradeOptionsSchema = z.strictObject({
  /** The Worker Deployment (default: the task queue's name with `.` as `-`, as the worker names it). */
  deploymentName: z.string().trim().min(1).optional(),
  /** A raw visibility query, ANDed with the rest (e.g. `WorkflowId STARTS_WITH "tenant-a-"`). */
  query: z.string().trim().min(1).optional(),
  /** Signals a second at most (default 50). */
  rate: z.number().positive('must be positive').max(10_000, 'at most 10000').optional(),
  /** Most sessions to signal (default: all found). */
  limit: z.number().int().min(1).optional(),
  /** The `reason` the signal carries (the session's worker logs it). */
  reason: z.string().max(4096).optional(),
});
export type UpgradeOptions = z.input<typeof UpgradeOptionsSchema>;

/** What {@link upgradeSessions} did. */
export interface UpgradeReport {
  deploymentName: string;
  /** Build ids no session needs to leave: the current version, and the ramping one if any. */
  targets: string[];
  /** The visibility query of the sessions signalled. */
  query: string;
  /** Sessions signalled. */
  signalled: string[];
  /** Sessions the signal did not reach (e.g. completed meanwhile), with why. */
  failed: { sessionId: string; error: string }[];
}

/**
 * Signals `upgrade` to the running sessions of `workflowType` on `taskQueue`'s deployment that run on neither its
 * current nor its ramping version, at most `rate` a second. Throws when the deployment has no current version (there
 * is nothing to move to) or an option is invalid (naming it).
 */
export async function upgradeSessions(
  client: Client,
  target: { taskQueue: string; workflowType?: string },
  options: UpgradeOptions = {},
): Promise<UpgradeReport> {
  const parsed = UpgradeOptionsSchema.safeParse(options);
  if (!parsed.success)
    throw new Error(
      `invalid upgrade option ${describeZodIssue(
        parsed.error.issues.map((i) => ({ ...i, path: ['options', ...i.path] })),
      )}`,
    );
  const opts = parsed.data;
  const deploymentName = opts.deploymentName ?? target.taskQueue.replace(/\./g, '-');
  const described = await client.workflowService
    .describeWorkerDeployment({ namespace: client.options.namespace, deploymentName })
    .catch((err: unknown) => {
      // gRPC NOT_FOUND: no versioned worker has run in this deployment.
      if ((err as { code?: unknown }).code === 5)
        throw new Error(`no Worker Deployment ${deploymentName}: no versioned worker has run in it`, {
          cause: err,
        });
      throw err;
    });
  const routing = described.workerDeploymentInfo?.routingConfig;
  const current = routing?.currentDeploymentVersion?.buildId;
  if (!current)
    throw new Error(`Worker Deployment ${deploymentName} has no current version: nothing to move to`);
  const ramping = routing?.rampingDeploymentVersion?.buildId;
  const targets = ramping ? [current, ramping] : [current];
  const quote = (s: string) => JSON.stringify(s);
  const query = [
    `WorkflowType = ${quote(target.workflowType ?? WORKFLOW_TYPE)}`,
    'ExecutionStatus = "Running"',
    `TemporalWorkerDeployment = ${quote(deploymentName)}`,
    ...targets.map((b) => `TemporalWorkerDeploymentVersion != ${quote(`${deploymentName}:${b}`)}`),
    ...(opts.query ? [`(${opts.query})`] : []),
  ].join(' AND ');
  const gap = 1000 / (opts.rate ?? DEFAULT_UPGRADE_RATE);
  const report: UpgradeReport = { deploymentName, targets, query, signalled: [], failed: [] };
  let next = Date.now();
  for await (const run of client.workflow.list({ query })) {
    if (opts.limit !== undefined && report.signalled.length + report.failed.length >= opts.limit) break;
    const wait = next - Date.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    next = Math.max(next, Date.now()) + gap;
    try {
      await client.workflow
        .getHandle(run.workflowId)
        .signal(upgradeSignal, opts.reason !== undefined ? { reason: opts.reason } : {});
      report.signalled.push(run.workflowId);
    } catch (err) {
      report.failed.push({
        sessionId: run.workflowId,
        error: err instanceof Error ? err.message : String(err),
      });
    }
  }
  return report;
}
