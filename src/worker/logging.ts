/**
 * The worker's logs: one line per entry, JSON (one object per line) or pretty (a terminal), carrying the session id,
 * run id, turn and step of the workflow or activity that logged. The SDK's logger funnels three sources here: the
 * workflow `log` (with the attributes of src/workflows/logging.ts), the activity `log` (with the attributes of
 * {@link activityLogAttributes}), and the SDK's own worker and core lines. The SDK's own INFO lines (worker
 * created, state changes) count as DEBUG, so a worker start prints nothing at INFO but the one start line.
 * `installWorkerLogging` installs the SDK Runtime with this logger: once per process, in the CLI worker only.
 * Not deterministic (I/O); never imported by workflow code.
 */
import {
  makeTelemetryFilterString,
  Runtime,
  type ActivityInterceptorsFactory,
  type Logger,
  type LogLevel,
  type LogMetadata,
} from '@temporalio/worker';
import type { LogLevelName } from './config';

const RANK: Record<LogLevel, number> = { TRACE: 0, DEBUG: 1, INFO: 2, WARN: 3, ERROR: 4 };
const LOG_TIMESTAMP = Symbol.for('log_timestamp');

export interface WorkerLoggerOptions {
  /** Least severe level written (default info). */
  level?: LogLevelName;
  /** `json` (default) or `pretty`. */
  format?: 'json' | 'pretty';
  /** Where lines go (default stderr). */
  write?: (line: string) => void;
}

/** A Temporal SDK `Logger` with a `notice` that is written at every level (the worker's start line). */
export interface WorkerLogger extends Logger {
  notice(message: string, meta?: LogMetadata): void;
}

/** The logger of the CLI worker (see the file header). */
export function createWorkerLogger(opts: WorkerLoggerOptions = {}): WorkerLogger {
  const least = RANK[(opts.level ?? 'info').toUpperCase() as LogLevel];
  const write = opts.write ?? ((line: string) => process.stderr.write(line));
  const format = opts.format ?? 'json';
  const emit = (level: LogLevel, message: string, meta: LogMetadata | undefined) =>
    write(format === 'pretty' ? prettyLine(level, message, meta) : jsonLine(level, message, meta));
  const log = (level: LogLevel, message: string, meta?: LogMetadata) => {
    const sdkOwn = meta?.sdkComponent === 'worker' || meta?.sdkComponent === 'core';
    const effective = sdkOwn && level === 'INFO' ? 'DEBUG' : level;
    if (RANK[effective] >= least) emit(level, message, meta);
  };
  return {
    log,
    trace: (m, meta) => log('TRACE', m, meta),
    debug: (m, meta) => log('DEBUG', m, meta),
    info: (m, meta) => log('INFO', m, meta),
    warn: (m, meta) => log('WARN', m, meta),
    error: (m, meta) => log('ERROR', m, meta),
    notice: (m, meta) => emit('INFO', m, meta),
  };
}

/**
 * Installs the SDK Runtime with a worker logger for this process (core's own lines from WARN, or INFO at `trace`),
 * and returns the logger. When the process already has a Runtime (a program that installed its own), leaves it and
 * returns a logger that writes the worker's own lines only.
 */
export function installWorkerLogging(
  opts: WorkerLoggerOptions & {
    /** The runtime's metrics exporter (src/worker/telemetry.ts, METRICS_ADDRESS). */
    metrics?: { metrics: { prometheus: { bindAddress: string } } };
  } = {},
): WorkerLogger {
  const logger = createWorkerLogger(opts);
  try {
    Runtime.install({
      logger,
      telemetryOptions: {
        ...opts.metrics,
        logging: {
          filter: makeTelemetryFilterString({
            core: opts.level === 'trace' ? 'INFO' : 'WARN',
            other: 'ERROR',
          }),
          forward: {},
        },
      },
    });
  } catch {
    // A Runtime exists already: its logger stays in charge of the SDK's lines.
  }
  return logger;
}

/** The entry's fields: session id, run id, turn and step first (renamed from the SDK's names), then the rest. */
function fields(meta: LogMetadata | undefined): Record<string, unknown> {
  if (!meta) return {};
  // taskToken: an opaque base64 blob on every activity line, of no use to a reader.
  const {
    workflowId,
    runId,
    workflowRunId,
    turn,
    step,
    taskToken: _t,
    ...rest
  } = meta as Record<string, unknown>;
  return {
    ...(workflowId !== undefined ? { sessionId: workflowId } : {}),
    ...((runId ?? workflowRunId) !== undefined ? { runId: runId ?? workflowRunId } : {}),
    ...(turn !== undefined ? { turn } : {}),
    ...(step !== undefined ? { step } : {}),
    ...rest,
  };
}

function timeOf(meta: LogMetadata | undefined): string {
  const nanos = (meta as Record<symbol, unknown> | undefined)?.[LOG_TIMESTAMP];
  const ms = typeof nanos === 'bigint' ? Number(nanos / 1_000_000n) : Date.now();
  return new Date(ms).toISOString();
}

/** JSON.stringify that writes errors as {name, message, type?} and bigints as strings. */
function stringify(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v === 'bigint') return v.toString();
    if (v instanceof Error) {
      const type = (v as { type?: unknown }).type;
      return { name: v.name, message: v.message, ...(typeof type === 'string' ? { type } : {}) };
    }
    return v;
  });
}

function jsonLine(level: LogLevel, message: string, meta: LogMetadata | undefined): string {
  return `${stringify({ time: timeOf(meta), level: level.toLowerCase(), msg: message, ...fields(meta) })}\n`;
}

function prettyLine(level: LogLevel, message: string, meta: LogMetadata | undefined): string {
  const time = timeOf(meta).slice(11, 23);
  const { sessionId, runId, turn, step, sdkComponent: _c, ...rest } = fields(meta);
  const where = [
    sessionId !== undefined ? `session=${String(sessionId)}` : '',
    typeof runId === 'string' ? `run=${runId.slice(0, 8)}` : '',
    turn !== undefined ? `turn=${String(turn)}` : '',
    step !== undefined ? `step=${String(step)}` : '',
  ].filter(Boolean);
  const extra = Object.entries(rest).map(([k, v]) => `${k}=${typeof v === 'string' ? v : stringify(v)}`);
  return `${time} ${level.padEnd(5)} ${message}${[...where, ...extra].map((p) => ` ${p}`).join('')}\n`;
}

/**
 * Adds what a session activity's input says about where it runs — `turn`, `step`, and for tools and hooks `callId`
 * and `hook` — to every log line of that activity (the SDK adds the session id and run id). The SDK's own "Activity
 * started" line is written before the input is seen, so it carries the ids only.
 */
export const activityLogAttributes: ActivityInterceptorsFactory = () => {
  let attributes: Record<string, unknown> = {};
  return {
    inbound: {
      execute(input, next) {
        attributes = attributesOf(input.args[0]);
        return next(input);
      },
    },
    outbound: {
      getLogAttributes: (input, next) => next({ ...input, ...attributes }),
    },
  };
};

function attributesOf(arg: unknown): Record<string, unknown> {
  if (typeof arg !== 'object' || arg === null) return {};
  const a = arg as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const key of ['turn', 'step'] as const) if (typeof a[key] === 'number') out[key] = a[key];
  for (const key of ['callId', 'hook'] as const) if (typeof a[key] === 'string') out[key] = a[key];
  const call = a.call as { callId?: unknown } | undefined; // a post-tool hook's call
  if (typeof call?.callId === 'string') out.callId = call.callId;
  return out;
}
