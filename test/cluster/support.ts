/**
 * Helpers of the cluster tier (test/cluster/): running scripts/cluster.sh, reading its `env`, starting the real
 * worker process (`node bin/agent-sessions.js worker`) and running the real CLI against the cluster, and polling
 * with a deadline (never fixed sleeps). Not deterministic: spawns processes and reads the clock.
 */
import { execFile, spawn } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { eventually } from '../support/eventually';
import { CLI, processEnv, ROOT } from '../support/workerProcess';

export { CLI, processEnv, ROOT, startWorker, type WorkerProcess } from '../support/workerProcess';
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
