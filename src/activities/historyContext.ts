/**
 * Reads a session's model-visible entries from its workflow history instead of asking the workflow: every model
 * request the session scheduled is an `ActivityTaskScheduled` event whose input holds the entries new since the
 * request before (`newEntries`, at position `prefix.count`), so the history of a run holds, in order, every entry
 * its requests sent — and its `WorkflowExecutionStarted` event names the run before it (continue-as-new).
 *
 * Why not the `__modelContext` query: a query sent while the session's sticky worker is gone is answered by another
 * worker from a fresh replay, and Temporal's core SDK (1.24.0) then applies events that no workflow task has
 * processed yet and keeps that state in its cache; a signal arriving next is processed in a different order than
 * a replay will process it, and the session fails every later workflow task with a nondeterminism error
 * (docs/reliability.md, "Known upstream defect"). Reading history runs no workflow code.
 *
 * Since requests send entries by reference (src/domain/entryRefs.ts), a request's input may name, instead of an
 * entry, the place in the same run's history that holds it: a delivery's payload, a tool activity's result, a model
 * activity's result. The reader rebuilds such an entry from there with the workflow's own builders and keeps it only
 * if its hash matches. The same scan answers a model activity's own references on a store miss. Does I/O.
 */
import type { Client } from '@temporalio/client';
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow';
import type { temporal } from '@temporalio/proto';
import {
  heldKey,
  HeldContent,
  isEntryRef,
  rebuiltEntry,
  type RefTarget,
  type WireEntry,
} from '../domain/entryRefs';
import type { TranscriptEntry } from '../domain/transcript';
import type { RefReader } from './entryStore';
import type { ContextReader } from './transcriptCache';
import type { ModelStepInput, ToolExecInput } from './types';

/** The activity type whose scheduled inputs carry the transcript. */
const MODEL_STEP = 'modelStep';
const EXECUTE_TOOL = 'executeTool';
/** Signals and the update whose payloads deliver messages. */
const DELIVERIES = new Set(['followup', 'steer', 'inject', 'deliver']);

type Payloads = temporal.api.common.v1.IPayload[] | null | undefined;

/**
 * What one run's history holds, as far as it has been read (pages come newest first or oldest first, in any
 * order): the entries its model requests sent, by transcript position, and the places references point at.
 */
class RunRecord {
  /** Transcript position → the entry a request's input sent there (inline or a reference). */
  readonly sent = new Map<number, WireEntry>();
  /** Lowest `prefix.count` of the requests read. */
  base: number | undefined;
  previousRunId: string | undefined;
  sawStart = false;
  /** Delivery payloads by their message's id. */
  private readonly deliveries = new HeldContent();
  /** Scheduled activities by `heldKey` (`tool:<callId>`, `model:<requestIndex>`): event id and tool name. */
  private readonly scheduled = new Map<string, { eventId: string; name?: string }[]>();
  /** Completed activities' results by their scheduled event id (decoded when a reference needs one). */
  private readonly completed = new Map<string, Payloads>();
  private readonly resolved = new Map<number, TranscriptEntry>();

  constructor(
    private readonly client: Client,
    /** The projection generation whose requests are read (./transcriptCache.ts). */
    private readonly generation = 0,
  ) {}

  async take(events: temporal.api.history.v1.IHistoryEvent[]): Promise<void> {
    for (const event of events) {
      const started = event.workflowExecutionStartedEventAttributes;
      if (started) {
        this.sawStart = true;
        if (started.continuedExecutionRunId) this.previousRunId = started.continuedExecutionRunId;
      }
      const signaled = event.workflowExecutionSignaledEventAttributes;
      if (signaled && DELIVERIES.has(signaled.signalName ?? ''))
        await this.delivery(signaled.signalName!, signaled.input?.payloads);
      const update = event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input;
      if (update && DELIVERIES.has(update.name ?? ''))
        await this.delivery(update.name!, update.args?.payloads);
      const completed = event.activityTaskCompletedEventAttributes;
      if (completed) this.completed.set(String(completed.scheduledEventId), completed.result?.payloads);
      const scheduled = event.activityTaskScheduledEventAttributes;
      const type = scheduled?.activityType?.name;
      if (type === MODEL_STEP) {
        const input = await this.decode<ModelStepInput>(scheduled?.input?.payloads);
        if (!input) continue;
        this.schedule(heldKey({ in: 'model', requestIndex: input.requestIndex }), String(event.eventId));
        if ((input.generation ?? 0) !== this.generation) continue;
        this.base = Math.min(this.base ?? input.prefix.count, input.prefix.count);
        input.newEntries.forEach((entry, i) => this.sent.set(input.prefix.count + i, entry));
      } else if (type === EXECUTE_TOOL) {
        const input = await this.decode<ToolExecInput>(scheduled?.input?.payloads);
        if (input)
          this.schedule(heldKey({ in: 'tool', callId: input.callId }), String(event.eventId), input.name);
      }
    }
  }

  /** The entry at transcript position `i`, if the history read so far holds it (a reference resolved). */
  async entryAt(i: number): Promise<TranscriptEntry | undefined> {
    const e = this.sent.get(i);
    if (!e) return undefined;
    return isEntryRef(e) ? this.resolve(e.ref) : e;
  }

  /** The entry a reference names, rebuilt from where the history read so far holds it; checked by its hash. */
  async resolve(ref: RefTarget): Promise<TranscriptEntry | undefined> {
    const known = this.resolved.get(ref.seq);
    if (known) return known;
    const entry = await this.rebuild(ref);
    if (entry) this.resolved.set(ref.seq, entry);
    return entry;
  }

  /** A delivery from its payload; a tool's or model's entry from its activity's result, decoded on demand. */
  private async rebuild(ref: RefTarget): Promise<TranscriptEntry | undefined> {
    if (ref.in === 'delivery') return this.deliveries.resolve(ref);
    for (const s of this.scheduled.get(heldKey(ref)) ?? []) {
      const value = await this.result(s.eventId);
      const entry = value ? rebuiltEntry(ref, { name: s.name ?? '', value }) : undefined;
      if (entry) return entry;
    }
    return undefined;
  }

  private async delivery(name: string, payloads: Payloads): Promise<void> {
    this.deliveries.delivered(name, await this.decode<unknown>(payloads));
  }

  private schedule(key: string, eventId: string, name?: string): void {
    const list = this.scheduled.get(key) ?? [];
    list.push({ eventId, ...(name !== undefined ? { name } : {}) });
    this.scheduled.set(key, list);
  }

  private async result(scheduledEventId: string): Promise<unknown> {
    const payloads = this.completed.get(scheduledEventId);
    return payloads ? this.decode<unknown>(payloads) : undefined;
  }

  private async decode<T>(payloads: Payloads): Promise<T | undefined> {
    if (!payloads?.length) return undefined;
    return decodeFromPayloadsAtIndex<T>(this.client.options.loadedDataConverter, 0, payloads);
  }
}

/**
 * Reads one run's history newest first (`GetWorkflowExecutionHistoryReverse`) until `done` says the record holds
 * what is wanted, or oldest first where the server lacks the reverse read (the time-skipping test server). Says
 * whether the read stopped early (the record may then lack the run's older events).
 */
async function readRun(
  client: Client,
  sessionId: string,
  runId: string,
  done: (run: RunRecord) => Promise<boolean>,
  generation = 0,
): Promise<{ run: RunRecord; stoppedEarly: boolean }> {
  const run = new RunRecord(client, generation);
  const execution = { workflowId: sessionId, runId };
  const namespace = client.options.namespace;
  let nextPageToken: Uint8Array | undefined;
  let reverse = true;
  for (;;) {
    const request = { namespace, execution, ...(nextPageToken ? { nextPageToken } : {}) };
    let response;
    try {
      response = reverse
        ? await client.workflowService.getWorkflowExecutionHistoryReverse(request)
        : await client.workflowService.getWorkflowExecutionHistory(request);
    } catch (err) {
      if (!reverse || !isUnimplemented(err)) throw err;
      reverse = false; // read oldest first, from the start
      continue;
    }
    await run.take(response.history?.events ?? []);
    nextPageToken = response.nextPageToken?.length ? response.nextPageToken : undefined;
    if (!nextPageToken) return { run, stoppedEarly: false };
    if (await done(run)) return { run, stoppedEarly: true };
  }
}

/**
 * A ContextReader over the history of the session's runs, read through `client` (its data converter decodes the
 * inputs, so an encrypted history reads too). Stops once the entries asked for are found: a cache that is only
 * behind reads the last requests, not the whole run.
 */
export function historyContextReader(client: () => Client): ContextReader {
  return async (sessionId, runId, from, to, generation) => {
    /** Positions [from, to) all found: the page can be answered without knowing the run's base. */
    const covered = async (run: RunRecord) => {
      for (let i = from; i < to; i++) if (!(await run.entryAt(i))) return false;
      return true;
    };
    const { run, stoppedEarly } = await readRun(client(), sessionId, runId, covered, generation ?? 0);
    // Read to its start, the run's first request gives its base; stopped early, every entry asked for is here.
    const runBase = run.sawStart || !stoppedEarly ? (run.base ?? to) : from;
    const out: TranscriptEntry[] = [];
    for (let i = Math.max(from, runBase); i < to; i++) {
      const entry = await run.entryAt(i);
      if (!entry) break; // a gap: the caller checks the length (and the cache the hash)
      out.push(entry);
    }
    return {
      entries: out,
      base: runBase,
      ...(run.previousRunId ? { previousRunId: run.previousRunId } : {}),
    };
  };
}

/** A RefReader over the run's history: reads newest first until every reference asked for is resolved. */
export function historyRefReader(client: () => Client): RefReader {
  return async (sessionId, runId, refs) => {
    const found = new Map<number, TranscriptEntry>();
    const all = async (run: RunRecord) => {
      for (const ref of refs) {
        if (found.has(ref.seq)) continue;
        const entry = await run.resolve(ref);
        if (!entry) return false;
        found.set(ref.seq, entry);
      }
      return true;
    };
    const { run } = await readRun(client(), sessionId, runId, all);
    await all(run);
    return found;
  };
}

/** gRPC's UNIMPLEMENTED (fixed by the gRPC spec; @grpc/grpc-js is not a dependency of ours). */
const GRPC_UNIMPLEMENTED = 12;

function isUnimplemented(err: unknown): boolean {
  return (err as { code?: number } | null)?.code === GRPC_UNIMPLEMENTED;
}
