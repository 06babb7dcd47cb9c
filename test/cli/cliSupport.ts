/** Running the built CLI (`node bin/agent-sessions.js`) as a child process, with a controlled environment. */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';

export const ROOT = path.resolve(__dirname, '../..');
export const BIN = path.join(ROOT, 'bin/agent-sessions.js');

/** Fails clearly when the CLI has not been built (the tests run the compiled dist/, like users do). */
export function assertBuilt(): void {
  if (!existsSync(path.join(ROOT, 'dist/cli/main.js')))
    throw new Error('dist/ is missing: run `npm run build` before the CLI tests');
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The environment of a CLI child: PATH and HOME, no Temporal or provider settings of the machine, plus `extra`. */
export function cliEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', NO_COLOR: '1', ...extra };
}

/** Runs the CLI to completion. */
export function cli(
  args: string[],
  env: NodeJS.ProcessEnv,
  opts: { input?: string; timeoutMs?: number } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: ROOT,
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(
          `agent-sessions ${args.join(' ')} did not finish in ${opts.timeoutMs ?? 60_000} ms\n${stdout}\n${stderr}`,
        ),
      );
    }, opts.timeoutMs ?? 60_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(opts.input ?? '');
  });
}

/** A long-running CLI child (watch, worker) whose output accumulates. */
export interface LiveCli {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  exited: Promise<number | null>;
}

export function spawnCli(args: string[], env: NodeJS.ProcessEnv): LiveCli {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

/** Polls `read` until `done` holds (bounded attempts; no fixed sleeps in assertions). */
export async function until<T>(
  read: () => T | Promise<T>,
  done: (value: T) => boolean,
  what: string,
  attempts = 600,
  everyMs = 50,
): Promise<T> {
  let last: T | undefined;
  for (let i = 0; i < attempts; i++) {
    last = await read();
    if (done(last)) return last;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(
    `timed out waiting for ${what}; last value:\n${typeof last === 'string' ? last : JSON.stringify(last)?.slice(0, 4000)}`,
  );
}
