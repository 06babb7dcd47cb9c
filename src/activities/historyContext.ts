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
 * (docs/reliability.md, "Known upstream defect"). Reading history runs no workflow code. Does I/O.
 */
import type { Client } from '@temporalio/client';
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow';
import type { temporal } from '@temporalio/proto';
import type { ModelContextPage } from '../contract';
import type { TranscriptEntry } from '../domain/transcript';
import type { ContextReader } from './transcriptCache';
import type { ModelStepInput } from './types';

/** The activity type whose scheduled inputs carry the transcript. */
const MODEL_STEP = 'modelStep';

/**
 * A ContextReader over the history of the session's runs, read through `client` (its data converter decodes the
 * inputs, so an encrypted history reads too). Reads newest first (`GetWorkflowExecutionHistoryReverse`) and stops
 * once the entries asked for are found: a cache that is only behind reads the last requests, not the whole run.
 * Reads oldest first where the server lacks the reverse read (the time-skipping test server).
 */
export function historyContextReader(client: () => Client): ContextReader {
  return async (sessionId, runId, from, to) => {
    const c = client();
    const entries = new Map<number, TranscriptEntry>();
    let base: number | undefined;
    let previousRunId: string | undefined;
    let sawStart = false;
    /** Positions [from, to) all found: the page can be answered without knowing the run's base. */
    const covered = () => {
      for (let i = from; i < to; i++) if (!entries.has(i)) return false;
      return true;
    };
    const take = async (events: temporal.api.history.v1.IHistoryEvent[]) => {
      for (const event of events) {
        const started = event.workflowExecutionStartedEventAttributes;
        if (started) {
          sawStart = true;
          if (started.continuedExecutionRunId) previousRunId = started.continuedExecutionRunId;
        }
        const input = await modelStepInput(c, event);
        if (!input) continue;
        base = Math.min(base ?? input.prefix.count, input.prefix.count);
        input.newEntries.forEach((entry, i) => entries.set(input.prefix.count + i, entry));
      }
    };
    const execution = { workflowId: sessionId, runId };
    const namespace = c.options.namespace;
    let nextPageToken: Uint8Array | undefined;
    let reverse = true;
    for (;;) {
      const request = { namespace, execution, ...(nextPageToken ? { nextPageToken } : {}) };
      let response;
      try {
        response = reverse
          ? await c.workflowService.getWorkflowExecutionHistoryReverse(request)
          : await c.workflowService.getWorkflowExecutionHistory(request);
      } catch (err) {
        if (!reverse || !isUnimplemented(err)) throw err;
        reverse = false; // read oldest first, from the start
        continue;
      }
      await take(response.history?.events ?? []);
      nextPageToken = response.nextPageToken?.length ? response.nextPageToken : undefined;
      if (!nextPageToken || covered()) break;
    }
    // Read to its start, the run's first request gives its base; stopped early, every entry asked for is here.
    const runBase = sawStart || !nextPageToken ? (base ?? to) : from;
    return page(entries, runBase, from, to, previousRunId);
  };
}

/** gRPC's UNIMPLEMENTED (fixed by the gRPC spec; @grpc/grpc-js is not a dependency of ours). */
const GRPC_UNIMPLEMENTED = 12;

function isUnimplemented(err: unknown): boolean {
  return (err as { code?: number } | null)?.code === GRPC_UNIMPLEMENTED;
}

async function modelStepInput(
  client: Client,
  event: temporal.api.history.v1.IHistoryEvent,
): Promise<ModelStepInput | undefined> {
  const scheduled = event.activityTaskScheduledEventAttributes;
  if (scheduled?.activityType?.name !== MODEL_STEP) return undefined;
  return decodeFromPayloadsAtIndex<ModelStepInput>(
    client.options.loadedDataConverter,
    0,
    scheduled.input?.payloads,
  );
}

/** The entries [max(from, base), to) found, as far as they run without a gap (the cache checks the hash). */
function page(
  entries: Map<number, TranscriptEntry>,
  base: number,
  from: number,
  to: number,
  previousRunId: string | undefined,
): ModelContextPage {
  const out: TranscriptEntry[] = [];
  for (let i = Math.max(from, base); i < to && entries.has(i); i++) out.push(entries.get(i)!);
  return { entries: out, base, ...(previousRunId ? { previousRunId } : {}) };
}
