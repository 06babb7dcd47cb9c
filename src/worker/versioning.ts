/**
 * Worker Versioning (docs/upgrades.md): a worker runs as one version of a Temporal Worker Deployment — the
 * deployment the option or AGENT_SESSIONS_DEPLOYMENT names (default: the task queue's name), the build id a hash of
 * the workflow bundle it runs (or AGENT_SESSIONS_BUILD_ID) — and sessions are pinned to the version they run on. A
 * worker whose deployment has no current version makes its own current once it runs, so a first worker on an empty
 * namespace needs no extra step; it never takes current from another version. Servers without Worker Deployments
 * (the time-skipping test server) run the worker unversioned. Not deterministic (hashing, gRPC); never imported by
 * workflow code; loads no Temporal package (types only), so ./config can use its schemas.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import type { Logger, NativeConnection, Worker, WorkerOptions } from '@temporalio/worker';
import { describeZodIssue } from '../domain/util';

/** How a worker runs as a version of a Worker Deployment (`SessionWorkerOptions.versioning`). */
export interface WorkerVersioningOptions {
  /** The Worker Deployment (default: the task queue's name, with `.` as `-`). */
  deploymentName?: string;
  /** This build's id (default: a hash of the workflow bundle the worker runs, `wf-` and 16 hex digits). */
  buildId?: string;
}

/** A version of a Worker Deployment: what Temporal calls `deploymentName` and `buildId`. */
export interface DeploymentVersion {
  deploymentName: string;
  buildId: string;
}

/** A deployment name: Temporal writes a version as `<deployment>.<build id>`, so the name has no dot. */
export const DeploymentNameSchema = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(255, 'at most 255 characters')
  .refine((s) => !s.includes('.'), 'must not contain "." (Temporal joins deployment and build id with it)');

export const BuildIdSchema = z.string().trim().min(1, 'must not be empty').max(255, 'at most 255 characters');

const VersioningSchema = z.union([
  z.literal(false),
  z.strictObject({ deploymentName: DeploymentNameSchema.optional(), buildId: BuildIdSchema.optional() }),
]);

/** The deployment a task queue's workers belong to when none is named. */
export function defaultDeploymentName(taskQueue: string): string {
  return taskQueue.replace(/\./g, '-');
}

/** The build id of a workflow bundle: changes exactly when the bundled workflow code changes. */
export function bundleBuildId(bundle: NonNullable<WorkerOptions['workflowBundle']>): string {
  const code = 'code' in bundle ? bundle.code : readFileSync(bundle.codePath);
  return `wf-${createHash('sha256').update(code).digest('hex').slice(0, 16)}`;
}

/**
 * The version a worker runs as, or undefined when versioning is off. Throws naming the field of an invalid option
 * (`versioning.deploymentName: …`).
 */
export function resolveVersion(
  option: false | WorkerVersioningOptions | undefined,
  taskQueue: string,
  bundle: NonNullable<WorkerOptions['workflowBundle']>,
): DeploymentVersion | undefined {
  const parsed = VersioningSchema.safeParse(option ?? {});
  if (!parsed.success)
    throw new Error(
      `invalid worker option ${describeZodIssue(
        parsed.error.issues.map((i) => ({ ...i, path: ['versioning', ...i.path] })),
      )}`,
    );
  if (parsed.data === false) return undefined;
  return {
    deploymentName: parsed.data.deploymentName ?? defaultDeploymentName(taskQueue),
    buildId: parsed.data.buildId ?? bundleBuildId(bundle),
  };
}

/** The Temporal worker options of a version: sessions are pinned to the version they run on. */
export function deploymentOptions(version: DeploymentVersion): WorkerOptions['workerDeploymentOptions'] {
  return { version, useWorkerVersioning: true, defaultVersioningBehavior: 'PINNED' };
}

/** gRPC status codes read here. */
const NOT_FOUND = 5;
const UNIMPLEMENTED = 12;
const code = (err: unknown) => (err as { code?: unknown } | undefined)?.code;

type Described = Awaited<ReturnType<NativeConnection['workflowService']['describeWorkerDeployment']>>;

/** The deployment as the server has it; undefined when it has none yet. Throws when the server has no deployments. */
async function describe(
  connection: NativeConnection,
  namespace: string,
  deploymentName: string,
): Promise<Described | undefined> {
  try {
    return await connection.workflowService.describeWorkerDeployment({ namespace, deploymentName });
  } catch (err) {
    if (code(err) === NOT_FOUND) return undefined;
    throw err;
  }
}

/**
 * Whether the server has Worker Deployments (the time-skipping test server has not: it answers UNIMPLEMENTED). Other
 * failures (unreachable, not allowed) are thrown, naming the deployment.
 */
export async function serverHasDeployments(
  connection: NativeConnection,
  namespace: string,
  deploymentName: string,
): Promise<boolean> {
  try {
    await describe(connection, namespace, deploymentName);
    return true;
  } catch (err) {
    if (code(err) === UNIMPLEMENTED) return false;
    const why = err instanceof Error ? err.message : String(err);
    throw new Error(
      `cannot read Worker Deployment ${deploymentName}: ${why} (versioning: false, or AGENT_SESSIONS_VERSIONING=off, runs the worker unversioned)`,
      { cause: err },
    );
  }
}

/** The build id of the deployment's current version (undefined: none is current). */
function currentBuildId(described: Described | undefined): string | undefined {
  return described?.workerDeploymentInfo?.routingConfig?.currentDeploymentVersion?.buildId || undefined;
}

/**
 * Once the worker runs, makes its version the deployment's current one if none is (a first worker on an empty
 * namespace), guarded by the deployment's conflict token so a version made current meanwhile is never replaced.
 * When another version is current, logs how to promote this one. Retries for up to `waitMs` while the server does
 * not know the version yet. Never throws: a failure is logged.
 */
export async function takeCurrentIfNone(
  worker: Pick<Worker, 'getState'>,
  connection: NativeConnection,
  namespace: string,
  version: DeploymentVersion,
  logger: Pick<Logger, 'info' | 'warn' | 'debug'>,
  waitMs = 30_000,
): Promise<'took' | 'other' | 'own' | 'failed'> {
  const { deploymentName, buildId } = version;
  const until = Date.now() + waitMs;
  const pause = () => new Promise((resolve) => setTimeout(resolve, 200));
  while (worker.getState() === 'INITIALIZED') await pause();
  for (;;) {
    if (worker.getState() !== 'RUNNING') return 'failed';
    try {
      const described = await describe(connection, namespace, deploymentName);
      const current = currentBuildId(described);
      if (current === buildId) return 'own';
      if (current !== undefined) {
        logger.info(
          `Worker Deployment ${deploymentName}: current version is ${current}, this worker is ${buildId}; it runs the sessions pinned to ${buildId}. ` +
            `Promote it with: temporal worker deployment set-current-version --deployment-name ${deploymentName} --build-id ${buildId} --yes`,
          { deploymentName, buildId, current },
        );
        return 'other';
      }
      await connection.workflowService.setWorkerDeploymentCurrentVersion({
        namespace,
        deploymentName,
        buildId,
        ...(described?.conflictToken?.length ? { conflictToken: described.conflictToken } : {}),
        allowNoPollers: true,
      });
      logger.debug(
        `Worker Deployment ${deploymentName}: no version was current; ${buildId} (this worker) is now`,
        {
          deploymentName,
          buildId,
        },
      );
      return 'took';
    } catch (err) {
      if (Date.now() > until) {
        logger.warn(
          `Worker Deployment ${deploymentName}: could not make ${buildId} current: ${err instanceof Error ? err.message : String(err)}`,
          { deploymentName, buildId },
        );
        return 'failed';
      }
      await pause();
    }
  }
}

/**
 * The version a worker runs as on this server: undefined when versioning is off or the server has no Worker
 * Deployments (said at INFO when the caller asked for a version explicitly). Throws naming an invalid option.
 */
export async function versionOnServer(
  opts: { connection: NativeConnection; versioning?: false | WorkerVersioningOptions },
  namespace: string,
  taskQueue: string,
  bundle: NonNullable<WorkerOptions['workflowBundle']>,
  logger: Pick<Logger, 'info' | 'debug'>,
): Promise<DeploymentVersion | undefined> {
  const version = resolveVersion(opts.versioning, taskQueue, bundle);
  if (!version) return undefined;
  if (await serverHasDeployments(opts.connection, namespace, version.deploymentName)) return version;
  (opts.versioning ? logger.info : logger.debug).call(
    logger,
    'this Temporal server has no Worker Deployments: the worker runs unversioned',
    { ...version },
  );
  return undefined;
}

/** Makes the worker's version current when the deployment has none, once `worker.run()` has started. */
export function takeCurrentOnRun(
  worker: Worker,
  connection: NativeConnection,
  namespace: string,
  version: DeploymentVersion,
  logger: Pick<Logger, 'info' | 'warn' | 'debug'>,
): void {
  const run = worker.run.bind(worker);
  worker.run = () => {
    const running = run();
    void takeCurrentIfNone(worker, connection, namespace, version, logger);
    return running;
  };
}

/** AGENT_SESSIONS_VERSIONING, AGENT_SESSIONS_DEPLOYMENT and AGENT_SESSIONS_BUILD_ID as the worker option. */
export function versioningFromConfig(config: {
  versioning: 'on' | 'off';
  deploymentName?: string | undefined;
  buildId?: string | undefined;
}): false | WorkerVersioningOptions {
  if (config.versioning === 'off') return false;
  return {
    ...(config.deploymentName ? { deploymentName: config.deploymentName } : {}),
    ...(config.buildId ? { buildId: config.buildId } : {}),
  };
}

/** `<deployment>:<build id>` of a worker that runs versioned (as the search attribute spells it), else `off`. */
export function versionLabel(worker: Pick<Worker, 'options'>): string {
  const deployment = worker.options.workerDeploymentOptions;
  if (!deployment?.useWorkerVersioning) return 'off';
  return `${deployment.version.deploymentName}:${deployment.version.buildId}`;
}
