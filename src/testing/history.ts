/**
 * History export and replay (semantics rule 34, scenario 26; STYLE.md 12): fetch a session's Temporal history as the
 * JSON that Temporal's own tools write, and replay a corpus of such files against workflow code, failing loudly on
 * any determinism error. Not deterministic (network, files); never import from workflow code.
 *
 * Files are plain Temporal history JSON (`{"events": [...]}`, as `temporal workflow show --output json` and the
 * SDK's `historyToJSON` write them). A history does not name its workflow id; replay uses the file's name (the
 * agentSession workflow reads its id only to pass it to activities, which replay does not run).
 */
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { historyFromJSON, historyToJSON, type History } from '@temporalio/common/lib/proto-utils';
import * as proto from '@temporalio/proto';
import { patchProtobufRoot } from '@temporalio/proto/lib/patch-protobuf-root';
import {
  Worker,
  type InjectedSinks,
  type ReplayWorkerOptions,
  type WorkflowBundleOption,
} from '@temporalio/worker';
import type { TranscriptRefSinks } from '../contract';
import { workflowSource } from '../worker';

export type { History };

export interface ExportHistoryOptions {
  /** A run of the session's continue-as-new chain; default the latest run. */
  runId?: string;
}

/**
 * Fetches the history of one run of a session (default: its latest run) and returns it as history JSON; with
 * `file`, also writes it there (creating the folder). Throws the client's error when the session does not exist.
 */
export async function exportHistory(
  client: Client,
  sessionId: string,
  file?: string,
  options: ExportHistoryOptions = {},
): Promise<string> {
  const history = await client.workflow.getHandle(sessionId, options.runId).fetchHistory();
  const json = historyJson(history);
  if (file) {
    mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
    writeFileSync(file, `${json}\n`);
  }
  return json;
}

/** Reads a history JSON file (as written by {@link exportHistory} or the Temporal CLI). Throws naming the file. */
export function readHistoryFile(file: string): History {
  try {
    return parseHistoryJson(JSON.parse(readFileSync(file, 'utf8')));
  } catch (err) {
    throw new Error(`${file}: not a Temporal history JSON file: ${(err as Error).message}`);
  }
}

/**
 * A History as history JSON: the SDK's `historyToJSON`, or the same ProtoJSON conversion done with the protobufjs
 * copy that `@temporalio/proto` uses when the SDK's own fails (see {@link protoJson}).
 */
export function historyJson(history: History): string {
  try {
    return historyToJSON(history);
  } catch (err) {
    if (!isForeignTypeError(err)) throw err;
    const { toJson, historyType } = protoJson();
    return JSON.stringify(
      toJson(historyType, proto.temporal.api.history.v1.History.fromObject(history)),
      null,
      2,
    );
  }
}

/** Parsed history JSON as a History (the SDK's `historyFromJSON`, with the same fallback as {@link historyJson}). */
export function parseHistoryJson(json: unknown): History {
  try {
    return historyFromJSON(json);
  } catch (err) {
    if (!isForeignTypeError(err)) throw err;
    const events = (json as { events?: unknown } | null)?.events;
    if (!Array.isArray(events)) throw new TypeError('expected an object with an array of events');
    const { fromJson, historyType } = protoJson();
    // Event types written the old way ("WorkflowExecutionStarted") get their ProtoJSON name; other enums of the
    // files we write are already ProtoJSON names.
    const fixed = events.map((e: Record<string, unknown>) =>
      typeof e.eventType === 'string' && !e.eventType.startsWith('EVENT_TYPE_')
        ? { ...e, eventType: `EVENT_TYPE_${e.eventType.replace(/(?<!^)([A-Z])/g, '_$1').toUpperCase()}` }
        : e,
    );
    return fromJson(historyType, { events: fixed }, { ignoreUnknownFields: true }) as History;
  }
}

/**
 * `historyToJSON` / `historyFromJSON` of @temporalio/common check `type instanceof Type` against the protobufjs copy
 * that @temporalio/common resolves, while the type comes from the copy @temporalio/proto resolves. When npm does not
 * hoist one shared protobufjs 8 (e.g. because @grpc/proto-loader keeps protobufjs 7 at the top of node_modules),
 * those are two copies and the SDK functions throw "type must be a Type". This is that failure.
 */
function isForeignTypeError(err: unknown): boolean {
  return err instanceof TypeError && err.message === 'type must be a Type';
}

interface ProtoJsonModule {
  toJson(type: unknown, message: unknown, options?: object): unknown;
  fromJson(type: unknown, json: unknown, options?: object): unknown;
}

let protoJsonCache: (ProtoJsonModule & { historyType: unknown }) | undefined;

/** ProtoJSON functions of the protobufjs copy @temporalio/proto uses, and the History type of its root. */
function protoJson(): ProtoJsonModule & { historyType: unknown } {
  if (protoJsonCache) return protoJsonCache;
  const fromProto = createRequire(require.resolve('@temporalio/proto'));
  const mod = fromProto('protobufjs/ext/protojson') as ProtoJsonModule;
  // The module object itself (its root namespaces), not an ES namespace wrapper of it.
  const root = patchProtobufRoot(fromProto('@temporalio/proto') as Record<string, unknown>) as unknown as {
    lookupType(name: string): unknown;
  };
  protoJsonCache = {
    toJson: mod.toJson,
    fromJson: mod.fromJson,
    historyType: root.lookupType('temporal.api.history.v1.History'),
  };
  return protoJsonCache;
}

export interface ReplayOptions {
  /** Workflows module to bundle (default: ours, `agentSession`). Point it at your module if you wrap ours. */
  workflowsPath?: string;
  /** A prebuilt bundle (e.g. `{codePath}`); wins over `workflowsPath` and skips bundling. */
  workflowBundle?: WorkflowBundleOption;
  /** Extra replay worker options (interceptors, sinks, logger-related options…). */
  worker?: Partial<ReplayWorkerOptions>;
}

export interface ReplaySummary {
  /** Number of histories replayed without error. */
  replayed: number;
  /** The files replayed, in replay order (absolute paths). */
  files: string[];
}

/** One file that did not replay and why. */
export interface ReplayFailure {
  file: string;
  error: Error;
}

/** Thrown by {@link replayHistories} when any history fails; the message names every failing file and its error. */
export class HistoryReplayError extends Error {
  override name = 'HistoryReplayError';
  constructor(
    readonly failures: ReplayFailure[],
    readonly summary: ReplaySummary,
  ) {
    super(
      `${failures.length} of ${summary.files.length} histor${summary.files.length === 1 ? 'y' : 'ies'} failed to replay:\n` +
        failures.map((f) => `- ${f.file}: ${f.error.name}: ${f.error.message}`).join('\n'),
    );
  }
}

/**
 * The session's transcript sink on a replay worker: registered so a replay does not log it as unknown, and not
 * called (a replay worker runs no model activity that would read what it is given).
 */
const REPLAY_SINKS: InjectedSinks<TranscriptRefSinks> = {
  transcriptRefs: { remember: { fn: () => undefined, callDuringReplay: false } },
};

/**
 * Replays every `*.json` history in `dir` (not recursive, sorted by name) with the current workflow code. Returns
 * the summary when all replay; throws {@link HistoryReplayError} naming each file that fails with its determinism
 * (or other replay) error, and an Error when the folder holds no history.
 */
export async function replayHistories(dir: string, opts: ReplayOptions = {}): Promise<ReplaySummary> {
  return replayHistoryFiles([dir], opts);
}

/**
 * Like {@link replayHistories} for a list of paths, each a history file or a folder of `*.json` histories (the
 * `agent-sessions replay <files…>` command). All histories replay on one replay worker (one bundle).
 */
export async function replayHistoryFiles(
  paths: readonly string[],
  opts: ReplayOptions = {},
): Promise<ReplaySummary> {
  const files = paths.flatMap(historyFilesAt);
  if (files.length === 0)
    throw new Error(`no history files (*.json) in ${paths.join(', ') || '(no paths given)'}`);
  const source = workflowSource(opts);
  const byId = new Map<string, string>();
  const histories = files.map((file, index) => {
    const history = readHistoryFile(file);
    // Unique per file even when two folders hold the same name: results come back keyed by this id. A session that
    // started sub-sessions replays under its own id, which their ids (`<id>/sub/<callId>`) derive from.
    const own = sessionIdOf(history);
    const workflowId = own && !byId.has(own) ? own : `${path.basename(file, '.json')}#${index}`;
    byId.set(workflowId, file);
    return { workflowId, history };
  });
  const failures: ReplayFailure[] = [];
  const seen = new Set<string>();
  const results = Worker.runReplayHistories(
    {
      replayName: 'agent-sessions-replay',
      ...opts.worker,
      sinks: { ...REPLAY_SINKS, ...opts.worker?.sinks },
      ...source,
    },
    histories,
  );
  for await (const result of results) {
    const file = byId.get(result.workflowId) ?? result.workflowId;
    seen.add(file);
    if (result.error) failures.push({ file, error: result.error });
  }
  for (const file of files) {
    if (!seen.has(file))
      failures.push({ file, error: new Error('the replay worker returned no result for it') });
  }
  const summary: ReplaySummary = { replayed: files.length - failures.length, files };
  if (failures.length) throw new HistoryReplayError(failures, summary);
  return summary;
}

/**
 * The session id a history's workflow ran under, when the history shows it: the parent part of the id of a
 * sub-session it started (docs/protocol.md "Sub-sessions"). Undefined otherwise (the id then does not matter).
 */
function sessionIdOf(history: History): string | undefined {
  for (const event of history.events ?? []) {
    const child = event.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId;
    const match = child ? /^(.+)\/sub\/[^/]+$/.exec(child) : null;
    if (match) return match[1];
  }
  return undefined;
}

/** A file itself, or the sorted `*.json` files directly in a folder. Throws naming a path that does not exist. */
function historyFilesAt(p: string): string[] {
  const full = path.resolve(p);
  let stat;
  try {
    stat = statSync(full);
  } catch {
    throw new Error(`${p}: no such file or folder`);
  }
  if (!stat.isDirectory()) return [full];
  return readdirSync(full)
    .filter((name) => name.endsWith('.json'))
    .sort()
    .map((name) => path.join(full, name));
}
