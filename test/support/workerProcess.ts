/**
 * The real worker process (`node bin/agent-sessions.js worker`) for tests that kill it, restart it or run it against
 * a cluster. Not deterministic: spawns processes and reads the clock.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { eventually } from './eventually';

export const ROOT = path.resolve(__dirname, '../..');
export const CLI = path.join(ROOT, 'bin/agent-sessions.js');

/**
 * The environment of a worker or CLI process: the test's own, without any Temporal connection or TLS variable it
 * may carry, plus `env` (the `testing` toolset unless `env` names others).
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
  /** The last 20,000 characters it printed (stdout and stderr). */
  output(): string;
}

/**
 * Starts `agent-sessions worker` with `env` (TEMPORAL_ADDRESS, TASK_QUEUE, toolsets, TLS settings…), adds it to
 * `workers` (removed when it exits), and resolves once it polls (its banner names the task queue). Rejects with its
 * output when it exits first or does not start within `readyMs` (default 120 s).
 */
export async function startWorker(
  env: Record<string, string>,
  workers: Set<WorkerProcess>,
  readyMs = 120_000,
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
  // The worker prints its banner (`agent-sessions worker: <address> namespace=… task-queue=…`) after the workflow
  // bundle is built, right before it starts polling; a worker that fails prints `agent-sessions worker: <error>` and
  // exits.
  await eventually(
    async () => {
      if (child.exitCode !== null) throw new Error(`worker exited early (code ${child.exitCode}):\n${tail}`);
      return /agent-sessions worker: .* task-queue=/.test(tail);
    },
    (ready) => ready,
    'a worker to start',
    readyMs,
  );
  return worker;
}

/** SIGKILLs a worker and resolves once it has exited. */
export async function killWorker(worker: WorkerProcess): Promise<void> {
  worker.child.kill('SIGKILL');
  await worker.exited;
}
