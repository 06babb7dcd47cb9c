/**
 * The processes a chaos scenario runs against, all on loopback: the Temporal dev server on a SQLite file
 * (`spawnDevServer`, killed with SIGKILL and started again on the same file and port), and session workers that are
 * the real CLI (`node bin/agent-sessions.js worker`, compiled code from dist/) as child processes, killed with
 * SIGKILL. Only processes started here are ever signalled, by their pid. Not deterministic (processes, sockets).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { spawnDevServer, type DevServerProcess } from '../src/devserver';

/** Progress lines go to stderr; stdout carries only the final JSON. */
export function note(message: string): void {
  process.stderr.write(`[chaos ${new Date().toISOString().slice(11, 23)}] ${message}\n`);
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Polls `read` until `done` holds or `timeoutMs` passes; a failing read (a server restarting) counts as not done.
 * Throws naming `what` with the last value or error.
 */
export async function eventually<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  what: string,
  timeoutMs: number,
  everyMs = 200,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await read();
      if (done(value)) return value;
      last = value;
    } catch (err) {
      last = err;
    }
    await sleep(everyMs);
  }
  const shown = last instanceof Error ? last.message : JSON.stringify(last)?.slice(0, 500);
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last: ${shown}`);
}

/** Median and maximum of a list of durations (null when empty). */
export function spread(values: readonly number[]): {
  n: number;
  medianMs: number | null;
  maxMs: number | null;
} {
  if (values.length === 0) return { n: 0, medianMs: null, maxMs: null };
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return { n: sorted.length, medianMs: Math.round(median), maxMs: Math.round(sorted.at(-1)!) };
}

/** The dev server of a scenario, restartable on the same SQLite file and port. */
export class ChaosServer {
  private constructor(private proc: DevServerProcess) {}

  static async start(dataDir: string): Promise<ChaosServer> {
    return new ChaosServer(await spawnDevServer({ dataDir, readyTimeoutMs: 60_000 }));
  }

  get address(): string {
    return this.proc.address;
  }

  get pid(): number {
    return this.proc.pid;
  }

  /** SIGKILL, then wait for the process to be gone. */
  async kill(): Promise<void> {
    await this.proc.stop({ signal: 'SIGKILL' });
  }

  /** Starts the server again on the same file and port; resolves once the namespace answers. */
  async restart(): Promise<void> {
    const { port, dbFilename } = this.proc;
    this.proc = await spawnDevServer({ port, readyTimeoutMs: 60_000, ...(dbFilename ? { dbFilename } : {}) });
  }

  async stop(): Promise<void> {
    await this.proc.stop({ signal: 'SIGKILL' });
  }
}

export interface WorkerProcess {
  pid: number;
  child: ChildProcess;
  startedAt: number;
  /** Set once the worker printed its banner (it polls right after). */
  readyAt?: number;
  ready: Promise<void>;
  exited: Promise<void>;
  output(): string;
}

/**
 * A pool of CLI workers on one task queue. `kill` sends SIGKILL to one of them by pid; `replace` starts another.
 * The Temporal worker identity defaults to `<pid>@<host>`, which is how a pending activity names its worker.
 */
export class WorkerPool {
  private readonly workers = new Map<number, WorkerProcess>();
  /** Workers that exited without being killed here (a crash of ours would show up here). */
  unexpectedExits = 0;
  /** Start → polling of every worker started, in ms. */
  readonly startMs: number[] = [];
  private readonly killed = new Set<number>();

  constructor(
    private readonly root: string,
    private readonly address: () => string,
    readonly taskQueue: string,
  ) {
    // Workers never outlive the suite (run.ts turns SIGINT and SIGTERM into an exit).
    process.once('exit', () => {
      for (const w of this.workers.values()) w.child.kill('SIGKILL');
    });
  }

  live(): WorkerProcess[] {
    return [...this.workers.values()];
  }

  ready(): WorkerProcess[] {
    return this.live().filter((w) => w.readyAt !== undefined);
  }

  has(pid: number): boolean {
    return this.workers.has(pid);
  }

  /** Starts one worker; resolves once it is polling. Throws with its output if it exits or is not ready in 60 s. */
  start(): WorkerProcess {
    const child = spawn(process.execPath, [path.join(this.root, 'bin/agent-sessions.js'), 'worker'], {
      cwd: this.root,
      env: {
        ...process.env,
        TEMPORAL_ADDRESS: this.address(),
        TEMPORAL_NAMESPACE: 'default',
        TASK_QUEUE: this.taskQueue,
        AGENT_SESSIONS_TOOLSETS: 'testing',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let tail = '';
    const keep = (chunk: Buffer) => {
      tail = (tail + chunk.toString()).slice(-20_000);
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    const pid = child.pid ?? -1;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const worker: WorkerProcess = {
      pid,
      child,
      startedAt: Date.now(),
      ready: Promise.resolve(),
      exited,
      output: () => tail,
    };
    worker.ready = eventually(
      async () => {
        if (child.exitCode !== null || child.signalCode !== null)
          throw new Error(`worker ${pid} exited early:\n${tail.slice(-2000)}`);
        return tail.includes('agent-sessions worker:');
      },
      (ok) => ok,
      `worker ${pid} to start`,
      60_000,
      50,
    ).then(() => {
      worker.readyAt = Date.now();
      this.startMs.push(worker.readyAt - worker.startedAt);
    });
    this.workers.set(pid, worker);
    void exited.then(() => {
      this.workers.delete(pid);
      if (!this.killed.has(pid)) this.unexpectedExits++;
    });
    return worker;
  }

  /** Starts workers until `size` are live and waits until all of them poll. */
  async fill(size: number): Promise<void> {
    while (this.workers.size < size) this.start();
    await Promise.all(this.live().map((w) => w.ready));
  }

  /** SIGKILLs the worker with this pid and waits until it is gone. */
  async kill(pid: number): Promise<void> {
    const worker = this.workers.get(pid);
    if (!worker) throw new Error(`no live worker with pid ${pid}`);
    this.killed.add(pid);
    worker.child.kill('SIGKILL');
    await worker.exited;
  }

  /** Kills every worker of the pool (SIGKILL) and waits for them. */
  async stopAll(): Promise<void> {
    const all = this.live();
    for (const w of all) {
      this.killed.add(w.pid);
      w.child.kill('SIGKILL');
    }
    await Promise.all(all.map((w) => w.exited));
  }
}

/**
 * A one-line account of what a session's run is waiting for: its pending activities (type, attempt, state, last
 * failure, next attempt) and its pending workflow task.
 */
export async function describeWaiting(client: Client, id: string): Promise<string> {
  const d = await client.workflow.getHandle(id).describe();
  const acts = (d.raw.pendingActivities ?? []).map((a) => {
    const state = String(temporal.api.enums.v1.PendingActivityState[a.state ?? 0]).replace(
      'PENDING_ACTIVITY_STATE_',
      '',
    );
    const next = a.nextAttemptScheduleTime?.seconds
      ? ` next at ${new Date(Number(a.nextAttemptScheduleTime.seconds) * 1000).toISOString().slice(11, 19)}`
      : '';
    return `${a.activityType?.name} attempt ${a.attempt} ${state}${a.lastFailure?.message ? ` (last: ${a.lastFailure.message.slice(0, 80)})` : ''}${next} on ${a.lastWorkerIdentity ?? '-'}`;
  });
  const wft = d.raw.pendingWorkflowTask;
  const task = wft
    ? `workflow task ${String(temporal.api.enums.v1.PendingWorkflowTaskState[wft.state ?? 0]).replace('PENDING_WORKFLOW_TASK_STATE_', '')} attempt ${wft.attempt}`
    : 'no workflow task';
  return `at ${new Date().toISOString().slice(11, 19)}: ${acts.join('; ') || 'no activity'}; ${task}`;
}

/** The pid in a Temporal worker identity (`<pid>@<host>`), if it has one. */
export function pidOfIdentity(identity: string | null | undefined): number | undefined {
  const m = /^(\d+)@/.exec(identity ?? '');
  return m ? Number(m[1]) : undefined;
}
