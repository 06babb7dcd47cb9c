/**
 * Finding the two Temporal binaries the project runs locally: the Temporal CLI (`temporal server start-dev`) and the
 * time-skipping test server (`temporal-test-server`). Not deterministic (reads the file system and the environment);
 * never import from workflow code. Importing this module does no I/O.
 *
 * Order, for each binary: its env variable (`TEMPORAL_CLI_PATH` / `TEMPORAL_TEST_SERVER_PATH`), the tools venv that
 * setup fills (`<venv>/bin/<name>`: the checkout's `.venv`, or the per-user cache for an installed package; see
 * ./home.ts), `PATH`, and last — only with `allowDownload` — the SDK's
 * own download. The result is usable as-is as `server.executable` of `@temporalio/testing` (the SDK reads only `type`
 * and `path`/download fields; `source` and `binary` are for logs).
 */
import { accessSync, constants, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { toolsVenv } from './home';

export type BinaryName = 'temporal' | 'temporal-test-server';

/** Where a binary came from. */
export type BinarySource = 'env' | 'venv' | 'path' | 'download';

/** A resolved binary; assignable to the SDK's `EphemeralServerExecutable`. */
export type ResolvedExecutable =
  | { type: 'existing-path'; path: string; binary: BinaryName; source: 'env' | 'venv' | 'path' }
  | { type: 'cached-download'; binary: BinaryName; source: 'download' };

export interface ResolveOptions {
  /** Fall back to the SDK's automatic download when nothing is found (needs internet). Default true. */
  allowDownload?: boolean;
  /** Environment to read (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  /** Package root whose tools venv (./home.ts) is searched; `null` skips the venv. Default: found from this file. */
  projectRoot?: string | null;
}

const ENV_VAR: Record<BinaryName, string> = {
  temporal: 'TEMPORAL_CLI_PATH',
  'temporal-test-server': 'TEMPORAL_TEST_SERVER_PATH',
};

const LABEL: Record<BinaryName, string> = {
  temporal: 'Temporal CLI',
  'temporal-test-server': 'Temporal test server',
};

/** The Temporal CLI (dev server). Throws when nothing is found and download is not allowed, or when the env variable is bad. */
export function resolveTemporalCli(options: ResolveOptions = {}): ResolvedExecutable {
  return resolveBinary('temporal', options);
}

/** The time-skipping test server. Throws like {@link resolveTemporalCli}. */
export function resolveTestServer(options: ResolveOptions = {}): ResolvedExecutable {
  return resolveBinary('temporal-test-server', options);
}

/** One line for logs: which binary, from where. */
export function describeResolution(resolved: ResolvedExecutable): string {
  const label = LABEL[resolved.binary];
  switch (resolved.source) {
    case 'env':
      return `${label} from ${ENV_VAR[resolved.binary]}: ${resolved.path}`;
    case 'venv':
      return `${label} from the project venv: ${resolved.path}`;
    case 'path':
      return `${label} from PATH: ${resolved.path}`;
    case 'download':
      return `${label}: not found locally, the Temporal SDK will download it`;
  }
}

/** The nearest folder at or above `start` whose package.json is named "agent-sessions" (works from src/ and dist/). */
export function findProjectRoot(start: string = __dirname): string | undefined {
  for (let dir = path.resolve(start); ; dir = path.dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: unknown };
      if (pkg.name === 'agent-sessions') return dir;
    } catch {
      // no (readable) package.json here: keep walking up
    }
    if (path.dirname(dir) === dir) return undefined;
  }
}

function resolveBinary(binary: BinaryName, options: ResolveOptions): ResolvedExecutable {
  const env = options.env ?? process.env;
  const envVar = ENV_VAR[binary];
  const fromEnv = env[envVar]?.trim();
  if (fromEnv) {
    const full = path.resolve(fromEnv);
    if (!isExecutableFile(full)) {
      throw new Error(`${envVar} is set to ${fromEnv}, which is not an executable file`);
    }
    return { type: 'existing-path', path: full, binary, source: 'env' };
  }

  const root = options.projectRoot === undefined ? findProjectRoot() : options.projectRoot;
  if (root !== null) {
    const inVenv = path.join(toolsVenv(root, env), 'bin', binary);
    if (isExecutableFile(inVenv)) return { type: 'existing-path', path: inVenv, binary, source: 'venv' };
  }

  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.resolve(dir, binary);
    if (isExecutableFile(candidate))
      return { type: 'existing-path', path: candidate, binary, source: 'path' };
  }

  if (options.allowDownload ?? true) return { type: 'cached-download', binary, source: 'download' };
  throw new Error(
    `${LABEL[binary]} (${binary}) not found: run \`npx agent-sessions setup\` (\`npm run setup\` in a checkout; ` +
      `installs it into ${toolsVenv(root ?? undefined, env)}), put it on PATH, or set ${envVar} to its path`,
  );
}

function isExecutableFile(file: string): boolean {
  try {
    if (!statSync(file).isFile()) return false;
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
