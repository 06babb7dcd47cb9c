/**
 * The worker's workflow code: the bundle `npm run build` writes once (dist/workflow-bundle.js, by
 * scripts/build-workflow-bundle.js), or a bundle built at start — in development (running from src/), for a custom
 * workflows module, or when the prebuilt one is missing or older than the compiled workflow code. Bundling here is
 * quiet: webpack's report never reaches the log at INFO; warnings and errors go to the given logger. Our workflow
 * interceptor modules (log attributes, src/workflows/logging.ts) are always in the bundle.
 * Not deterministic (file system, webpack); never imported by workflow code.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode, type Logger, type WorkerOptions } from '@temporalio/worker';

/** Path of our workflows module, from src/ (tests) or dist/ (built). */
export const DEFAULT_WORKFLOWS_PATH = path.join(__dirname, '..', 'workflows', 'index');

/** The bundle `npm run build` writes beside the compiled code (absent under src/). */
export const PREBUILT_WORKFLOW_BUNDLE = path.join(__dirname, '..', 'workflow-bundle.js');

/** The same with Temporal's OpenTelemetry workflow interceptors, for workers that trace (./telemetry.ts). */
export const PREBUILT_TRACED_WORKFLOW_BUNDLE = path.join(__dirname, '..', 'workflow-bundle-traced.js');

/** Workflow interceptor modules every bundle of ours includes (they add turn and step to workflow log lines). */
export const WORKFLOW_INTERCEPTOR_MODULES: readonly string[] = [
  path.join(__dirname, '..', 'workflows', 'logging'),
];

/**
 * Our payload converter (src/contract/payloadConverter.ts), bundled into every bundle of ours unless the worker names
 * its own: a signal whose payload is not JSON is then refused and counted instead of failing the workflow task.
 * A bundle built elsewhere (`workflowBundle`) should pass this as `payloadConverterPath` to `bundleWorkflowCode`.
 */
export const SESSION_PAYLOAD_CONVERTER_PATH = path.join(__dirname, '..', 'contract', 'payloadConverter');

/**
 * Modules preloaded into the worker's shared V8 context, where one instance serves every workflow instead of one
 * instance per workflow: `src/domain` (pure, no module state; its zod schemas are lazy, so the SDK's deep freeze of
 * preloaded modules leaves them usable; src/domain/lazy.ts). This is most of what a cached session costs otherwise
 * (docs/performance.md, manySessions).
 */
export const SHARED_WORKFLOW_MODULES: readonly string[] = [path.join(__dirname, '..', 'domain', 'index')];

/** Folders whose compiled code goes into the bundle: a prebuilt bundle older than any of their files is stale. */
const BUNDLED_FOLDERS = ['workflows', 'domain', 'contract'].map((f) => path.join(__dirname, '..', f));

/**
 * The prebuilt bundle when it exists and is not older than the compiled workflow code beside it (a `tsc` run
 * without the bundle step leaves it stale); otherwise undefined.
 */
export function prebuiltWorkflowBundle(bundlePath = PREBUILT_WORKFLOW_BUNDLE): string | undefined {
  if (!existsSync(bundlePath)) return undefined;
  const built = statSync(bundlePath).mtimeMs;
  const newest = Math.max(0, ...BUNDLED_FOLDERS.flatMap((dir) => mtimes(dir)));
  return built >= newest ? bundlePath : undefined;
}

function mtimes(dir: string): number[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) return mtimes(file);
    return /\.(js|ts)$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [statSync(file).mtimeMs] : [];
  });
}

/**
 * A workflows module path the bundler can read: as given when it exists, else with `.ts` or `.js` appended (our
 * default path has no extension and is `.ts` under src/, `.js` under dist/; `require.resolve` alone misses `.ts`
 * when tests run through vitest). Throws naming the path.
 */
export function resolveWorkflowsPath(p: string): string {
  for (const candidate of [p, `${p}.ts`, `${p}.js`]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return path.resolve(candidate);
  }
  try {
    return require.resolve(p);
  } catch {
    throw new Error(`workflows module not found: ${p}`);
  }
}

/** A bundler logger that drops webpack's report (INFO and below) and passes warnings and errors on. */
export function quietBundlerLogger(forward?: Pick<Logger, 'warn' | 'error'>): Logger {
  const drop = () => undefined;
  const warn = (message: string, meta?: Record<string, unknown>) =>
    forward ? forward.warn(message, meta) : console.error(message);
  const error = (message: string, meta?: Record<string, unknown>) =>
    forward ? forward.error(message, meta) : console.error(message);
  return {
    log: (level, message, meta) =>
      (level === 'WARN' ? warn : level === 'ERROR' ? error : drop)(message, meta),
    trace: drop,
    debug: drop,
    info: drop,
    warn,
    error,
  };
}

export interface BundleOptions {
  /** The workflows module (default ours). */
  workflowsPath?: string;
  /** More workflow interceptor modules, after ours. */
  workflowInterceptorModules?: readonly string[];
  /** The worker's bundler options (ignored modules, webpack hook…). */
  bundlerOptions?: WorkerOptions['bundlerOptions'];
  /** The worker's data converter paths that run inside the sandbox (payload and failure converters). */
  dataConverter?: Pick<
    NonNullable<WorkerOptions['dataConverter']>,
    'payloadConverterPath' | 'failureConverterPath'
  >;
  /** Where bundler warnings and errors go (default stderr). */
  logger?: Pick<Logger, 'warn' | 'error'>;
}

/** Bundles the workflow code, quietly. Rejects when webpack fails (its errors go to the logger). */
export async function bundleWorkflows(opts: BundleOptions = {}): Promise<{ code: string }> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: resolveWorkflowsPath(opts.workflowsPath ?? DEFAULT_WORKFLOWS_PATH),
    workflowInterceptorModules: [
      ...WORKFLOW_INTERCEPTOR_MODULES.map(resolveWorkflowsPath),
      ...(opts.workflowInterceptorModules ?? []),
    ],
    logger: quietBundlerLogger(opts.logger),
    ...opts.bundlerOptions,
    preloadModules: [
      ...SHARED_WORKFLOW_MODULES.map(resolveWorkflowsPath),
      ...(opts.bundlerOptions?.preloadModules ?? []),
    ],
    payloadConverterPath: resolveWorkflowsPath(
      opts.dataConverter?.payloadConverterPath ?? SESSION_PAYLOAD_CONVERTER_PATH,
    ),
    ...(opts.dataConverter?.failureConverterPath
      ? { failureConverterPath: opts.dataConverter.failureConverterPath }
      : {}),
  });
  return { code };
}

/**
 * The worker option naming the workflow code, for replaying it: a bundle when given, else the build's bundle when
 * no workflows module is named and it is current, else the workflows module at `workflowsPath` (default: ours).
 * Throws when that module does not exist.
 */
export function workflowSource(opts: {
  workflowBundle?: WorkerOptions['workflowBundle'];
  workflowsPath?: string;
}): Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'> {
  if (opts.workflowBundle) return { workflowBundle: opts.workflowBundle };
  const prebuilt = opts.workflowsPath ? undefined : prebuiltWorkflowBundle();
  return prebuilt
    ? { workflowBundle: { codePath: prebuilt } }
    : { workflowsPath: resolveWorkflowsPath(opts.workflowsPath ?? DEFAULT_WORKFLOWS_PATH) };
}

/**
 * AGENT_SESSIONS_WORKFLOW_BUNDLE as worker options: `off` bundles our workflows at start, a path loads that bundle,
 * unset leaves the default (the build's bundle from dist/). Throws naming the variable when the file is missing.
 */
export function workflowCodeFromConfig(
  setting: string | undefined,
): Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'> {
  if (!setting) return {};
  if (setting.toLowerCase() === 'off') return { workflowsPath: DEFAULT_WORKFLOWS_PATH };
  if (!existsSync(setting))
    throw new Error(
      `invalid configuration: AGENT_SESSIONS_WORKFLOW_BUNDLE: no such file: ${setting} (a bundle file, or "off")`,
    );
  return { workflowBundle: { codePath: path.resolve(setting) } };
}
