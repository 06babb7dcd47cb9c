/**
 * Helpers of the cluster tier (test/cluster/): running scripts/cluster.sh, reading its `env`, starting the real
 * worker process (`node bin/agent-sessions.js worker`) and running the real CLI against the cluster, and polling
 * with a deadline (never fixed sleeps). Not deterministic: spawns processes and reads the clock.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { eventually } from '../support/eventually';

export const ROOT = path.resolve(__dirname, '../..');
export const CLI = path.join(ROOT, 'bin/agent-sessions.js');
export const SCRIPT = path.join(ROOT, 'scripts/cluster.sh');

const run = promisify(execFile);

/** Runs scripts/cluster.sh; resolves with its stdout, rejects with its output. */
export async function cluster(...args: string[]): Promise<string> {
  try {
    const { stdout } = await run('bash', [SCRIPT, ...args], { cwd: ROOT, maxBuffer: 4 << 20 });
    return stdout;
  } catch (err) {
    const e = err as Error & { stdout?: string; stderr?: string };
    throw new Error(
      `scripts/cluster.sh ${args.join(' ')} failed: ${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}`,
    );
  }
}

/** `scripts/cluster.sh env` as a record (addresses, ports, versions, the state folder). */
export async function clusterEnv(): Promise<Record<string, string>> {
  return Object.fromEntries(
    (await cluster('env'))
      .trim()
      .split('\n')
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
}

/**
 * The environment of a worker or CLI process: the test's own, without any Temporal connection or TLS variable it
 * may carry, plus `env`.
 */
export function processEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('TEMPORAL_') && name !== 'TASK_QUEUE'),
  );
  return { ...base, AGENT_SESSIONS_TOOLSETS: 'testing', ...env };
}

export interface WorkerProcess {
  child: ChildProcess;
  /** The Temporal identity of the worker (the SDK default, pid@hostname). */
  identity: string;
  exited: Promise<void>;
  output(): string;
}

/**
 * Starts `agent-sessions worker` with `env` (TEMPORAL_ADDRESS, TASK_QUEUE, TLS settings…), adds it to `workers`
 * (removed when it exits), and resolves once it polls (its banner names the task queue). Rejects with its output
 * when it exits first.
 */
export async function startWorker(
  env: Record<string, string>,
  workers: Set<WorkerProcess>,
): Promise<WorkerProcess> {
  const child = spawn(process.execPath, [CLI, 'worker'], {
    cwd: ROOT,
    env: processEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let tail = '';
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString()).slice(-20_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const worker: WorkerProcess = {
    child,
    identity: `${child.pid}@${os.hostname()}`,
    exited,
    output: () => tail,
  };
  workers.add(worker);
  void exited.then(() => workers.delete(worker));
  // The worker prints its banner (`agent-sessions worker: <address> namespace=… task-queue=…`) right before it
  // starts polling; a worker that fails prints `agent-sessions worker: <error>` and exits.
  await eventually(
    async () => {
      if (child.exitCode !== null) throw new Error(`worker exited early (code ${child.exitCode}):\n${tail}`);
      return /agent-sessions worker: .* task-queue=/.test(tail);
    },
    (ready) => ready,
    'a worker to start',
    120_000,
  );
  return worker;
}

/** What a process printed and how it ended. */
export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI (`node bin/agent-sessions.js …args`) with `env` and resolves when it exits, whatever its code. */
export function runCli(args: string[], env: Record<string, string>, timeoutMs = 60_000): Promise<Ran> {
  return runProcess(process.execPath, [CLI, ...args], env, timeoutMs);
}

/** Runs a process to its end (SIGKILL after `timeoutMs`), capturing its output. */
export function runProcess(
  file: string,
  args: string[],
  env: Record<string, string>,
  timeoutMs: number,
): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { cwd: ROOT, env: processEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Polling through restarts of the cluster's parts (test/support/eventually.ts). */
export { eventually };

/** An error and its causes, one `Name: message` each (a gRPC status is in a cause). */
export function describeError(err: unknown): string {
  const parts: string[] = [];
  for (
    let e = err as Error | undefined;
    e instanceof Error && parts.length < 4;
    e = e.cause as Error | undefined
  )
    parts.push(`${e.name}: ${e.message}`);
  return parts.join(' <- ').slice(0, 400);
}

/** The gRPC status codes by number (@grpc/grpc-js `status`), for naming the one an error carries. */
const GRPC_STATUS = [
  'OK',
  'CANCELLED',
  'UNKNOWN',
  'INVALID_ARGUMENT',
  'DEADLINE_EXCEEDED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'ABORTED',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
  'INTERNAL',
  'UNAVAILABLE',
  'DATA_LOSS',
  'UNAUTHENTICATED',
] as const;

/** The name of the first gRPC status in the error's cause chain (`UNAVAILABLE`), or undefined. */
export function grpcStatusOf(err: unknown): string | undefined {
  for (
    let e = err as (Error & { code?: unknown }) | undefined, n = 0;
    e && n < 6;
    e = e.cause as typeof e, n++
  ) {
    if (typeof e.code === 'number') return GRPC_STATUS[e.code] ?? String(e.code);
  }
  return undefined;
}
