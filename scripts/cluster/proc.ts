/**
 * Process helpers of the cluster tool: its messages (`cluster: …` on stdout, `cluster: error: …` on stderr), its two
 * failures (ClusterError exits 1, UsageError exits 2), running commands (also as PostgreSQL's user), and waiting.
 * Not deterministic: spawns processes and reads the clock.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants, readFileSync, statSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/** A failure the tool reports as `cluster: error: <message>` and exit code 1. */
export class ClusterError extends Error {
  readonly exitCode: number = 1;
}

/** Bad arguments or settings: exit code 2. */
export class UsageError extends ClusterError {
  override readonly exitCode = 2;
}

export function say(message: string): void {
  console.log(`cluster: ${message}`);
}

/** Whole seconds since `start` (a Date.now()), as the tool prints them: `12 s`. */
export function elapsed(start: number): string {
  return `${Math.floor((Date.now() - start) / 1000)} s`;
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export const isRoot = (): boolean => process.getuid?.() === 0;

export interface Ran {
  /** The exit code; 127 when the command could not be started, 128 + n after signal n. */
  code: number;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Written to the command's stdin (otherwise stdin is /dev/null). */
  input?: string;
  /** `inherit`: the command prints to this tool's stdout/stderr instead of being captured. */
  stdout?: 'capture' | 'inherit' | 'ignore';
  stderr?: 'capture' | 'inherit';
}

/** Runs a command to its end; never throws (a command that cannot start gives code 127). */
export function run(command: string, args: readonly string[], opts: RunOptions = {}): Promise<Ran> {
  return new Promise((resolve) => {
    const mode = (m: 'capture' | 'inherit' | 'ignore' | undefined) =>
      m === undefined || m === 'capture' ? 'pipe' : m;
    const child = spawn(command, args, {
      cwd: opts.cwd,
      env: opts.env ?? process.env,
      stdio: [opts.input === undefined ? 'ignore' : 'pipe', mode(opts.stdout), mode(opts.stderr)],
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
    child.stdin?.end(opts.input);
    child.once('error', (err) =>
      resolve({ code: 127, stdout, stderr: `${stderr}${command}: ${err.message}\n` }),
    );
    child.once('close', (code, signal) =>
      resolve({ code: code ?? 128 + (signal ? os.constants.signals[signal] : 0), stdout, stderr }),
    );
  });
}

/**
 * Runs a command as PostgreSQL's user: as root, `runuser -u postgres` from `/` (the caller's working folder may be
 * one postgres cannot enter, and initdb, pg_ctl and psql warn or fail then); otherwise as the caller.
 */
export function asPg(command: string, args: readonly string[], opts: RunOptions = {}): Promise<Ran> {
  return isRoot()
    ? run('runuser', ['-u', 'postgres', '--', command, ...args], { ...opts, cwd: '/' })
    : run(command, args, opts);
}

/** The full path of `name` on PATH, or undefined. */
export function which(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir && isExecutable(path.join(dir, name))) return path.join(dir, name);
  }
  return undefined;
}

export function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/** Sends `sig` to `pid`; false when there is no such process. */
export function signal(pid: number, sig: NodeJS.Signals): boolean {
  try {
    process.kill(pid, sig);
    return true;
  } catch {
    return false;
  }
}

/** Whether the process exists (signal 0). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The last `n` lines of a file ('' when it cannot be read). */
export function tail(file: string, n: number): string {
  try {
    const lines = readFileSync(file, 'utf8').split('\n');
    if (lines.at(-1) === '') lines.pop();
    return lines.slice(-n).join('\n') + '\n';
  } catch {
    return '';
  }
}

/** Whether something accepts TCP connections on 127.0.0.1:`port`. */
export function portBusy(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    const done = (busy: boolean) => {
      socket.destroy();
      resolve(busy);
    };
    socket.setTimeout(5000, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/**
 * Fails when `port` is taken, naming the process that holds it when ss(8) can tell (e.g. a service of an earlier
 * cluster whose state folder was deleted while it ran).
 */
export async function failIfPortBusy(port: number, what: string): Promise<void> {
  if (!(await portBusy(port))) return;
  const ss = await run('ss', ['-ltnpH', `sport = :${port}`]);
  const holder = /users:\(\([^)]*\)\)/.exec(ss.stdout)?.[0];
  throw new ClusterError(
    `port ${port} (${what}) is taken by another program${holder ? ` (${holder})` : ''}; stop it, or set AGENT_SESSIONS_CLUSTER_PORT_OFFSET`,
  );
}

/**
 * Polls `ready` every `everyMs` until it returns true; before each new try, `check` may throw (a process died), and
 * after `deadline` (a Date.now() value) `timeout()` is thrown.
 */
export async function waitUntil(
  ready: () => Promise<boolean> | boolean,
  opts: { everyMs: number; deadline: number; timeout: () => Error; check?: () => void },
): Promise<void> {
  while (!(await ready())) {
    opts.check?.();
    if (Date.now() >= opts.deadline) throw opts.timeout();
    await sleep(opts.everyMs);
  }
}
