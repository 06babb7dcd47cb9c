/**
 * Command hooks: an argv fixed by the worker's configuration runs without a shell; the hook input is written to
 * its stdin as JSON and its stdout is the JSON decision. Bounded by a timeout and an output size cap (the process
 * is killed past either); a non-zero exit is a failure (retryable), unparseable output is not retryable. The
 * command gets a small environment (PATH, HOME, LANG, TMPDIR and what the hook's config adds), not the worker's
 * secrets, unless `inheritEnv` says otherwise. Does I/O.
 */
import { spawn } from 'node:child_process';
import { parseAnswer } from './http';
import { checkHookName, HookError, type HookDefinition, type HookKind } from './types';
import { maskSecrets } from '../secrets';

export interface CommandHookSpec {
  name: string;
  kind: HookKind;
  /** Program and arguments; argv[0] is run directly (no shell, no expansion). */
  argv: string[];
  cwd?: string;
  /** Variables added to the command's environment. */
  env?: Record<string, string>;
  /** Pass the worker's whole environment (keys included) instead of the small default one. */
  inheritEnv?: boolean;
  /** Longest run (default 10 s); the process is killed after it. */
  timeoutMs?: number;
  /** Largest stdout (default 1 MiB); the process is killed past it. */
  maxOutputBytes?: number;
}

export const COMMAND_HOOK_DEFAULTS = { timeoutMs: 10_000, maxOutputBytes: 1024 * 1024 } as const;
const BASE_ENV = ['PATH', 'HOME', 'LANG', 'TMPDIR', 'SYSTEMROOT'];
const STDERR_TAIL = 2000;

/** A hook answered by a command. Throws when the name or argv is invalid. */
export function commandHook(spec: CommandHookSpec): HookDefinition {
  checkHookName(spec.name);
  const [program, ...args] = spec.argv;
  if (!program) throw new Error(`hook ${spec.name}: argv must name a program`);
  const timeoutMs = spec.timeoutMs ?? COMMAND_HOOK_DEFAULTS.timeoutMs;
  const maxBytes = spec.maxOutputBytes ?? COMMAND_HOOK_DEFAULTS.maxOutputBytes;
  const env: NodeJS.ProcessEnv = spec.inheritEnv
    ? { ...process.env, ...spec.env }
    : {
        ...Object.fromEntries(
          BASE_ENV.flatMap((k) => (process.env[k] !== undefined ? [[k, process.env[k]]] : [])),
        ),
        ...spec.env,
      };
  return {
    name: spec.name,
    kind: spec.kind,
    describe: `command ${program}`,
    call: (input, ctx) =>
      run(program, args, {
        cwd: spec.cwd,
        env,
        timeoutMs,
        maxBytes,
        stdin: JSON.stringify(input),
        signal: ctx.signal,
      }),
  };
}

interface RunOptions {
  cwd: string | undefined;
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
  maxBytes: number;
  stdin: string;
  signal: AbortSignal;
}

function run(program: string, args: string[], opts: RunOptions): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, {
      cwd: opts.cwd,
      env: opts.env,
      shell: false,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    let outBytes = 0;
    let err = '';
    let failure: HookError | Error | undefined;
    const stop = (why: HookError | Error) => {
      failure ??= why;
      child.kill('SIGKILL');
    };
    const timer = setTimeout(
      () => stop(new HookError(`did not finish within ${opts.timeoutMs} ms`, true)),
      opts.timeoutMs,
    );
    const onAbort = () =>
      stop(opts.signal.reason instanceof Error ? opts.signal.reason : new Error('cancelled'));
    if (opts.signal.aborted) onAbort();
    opts.signal.addEventListener('abort', onAbort, { once: true });

    child.stdout.on('data', (chunk: Buffer) => {
      outBytes += chunk.byteLength;
      if (outBytes > opts.maxBytes)
        return stop(new HookError(`wrote more than ${opts.maxBytes} bytes to stdout`, false));
      out.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      err = (err + chunk.toString('utf8')).slice(-STDERR_TAIL);
    });
    // A command that exits without reading its input closes the pipe: not an error of ours.
    child.stdin.on('error', () => {});
    child.stdin.end(opts.stdin);

    let settled = false;
    const settle = () => {
      if (settled) return false;
      settled = true;
      clearTimeout(timer);
      opts.signal.removeEventListener('abort', onAbort);
      return true;
    };
    child.on('error', (e: NodeJS.ErrnoException) => {
      failure ??= new HookError(
        `cannot run ${program}: ${e.code ?? e.message}`,
        e.code !== 'ENOENT' && e.code !== 'EACCES',
      );
      // A process that never started emits no 'close' we can count on.
      if (child.pid === undefined && settle()) reject(failure);
    });
    child.on('close', (code, signal) => {
      if (!settle()) return;
      if (failure) return reject(failure);
      // What the command printed goes into history: anything shaped like a key is masked (../secrets.ts).
      const stderr = err.trim() ? `: ${maskSecrets(err.trim())}` : '';
      if (code !== 0)
        return reject(
          new HookError(`exited with ${code === null ? `signal ${signal}` : `code ${code}`}${stderr}`, true),
        );
      try {
        resolve(parseAnswer(Buffer.concat(out).toString('utf8')));
      } catch (e) {
        reject(e as Error);
      }
    });
  });
}
