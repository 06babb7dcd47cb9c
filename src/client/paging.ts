/**
 * Reads that page through a session's log and transcript across the runs of its continue-as-new chain
 * (`SessionClient.allEvents`, `transcript`): a run holds only what it added itself and names the run before it
 * (`previousRunId`), so a whole read walks back through the chain. Does I/O only through the readers it is given.
 */
import type { EventsPage, TranscriptView } from '../contract';
import type { SessionEvent } from '../domain/events';
import { readEventsOfRun } from '../domain/pages';

/** One `events` page of a run (the latest when `runId` is undefined). */
export type EventsReader = (
  afterSeq: number,
  limit: number | undefined,
  runId?: string,
) => Promise<EventsPage>;

/** Every event after `afterSeq`, paging to the end of the log and back through earlier runs when needed. */
export function readAllEvents(page: EventsReader, afterSeq: number): Promise<SessionEvent[]> {
  return readEventsOfRun(page, afterSeq, undefined, Infinity);
}

/** The whole model-visible transcript, assembled from the `transcript` answers of the runs of the chain. */
export async function readTranscript(
  transcriptOf: (runId?: string) => Promise<TranscriptView>,
): Promise<TranscriptView> {
  const current = await transcriptOf();
  const messages = [...current.messages];
  let view = current;
  while (view.base > 0 && view.previousRunId) {
    const runId = view.previousRunId;
    const later = view.base;
    view = await transcriptOf(runId);
    // A run also carries the entries no model request had sent when it began, which the run before holds too.
    messages.unshift(...view.messages.slice(0, Math.max(0, later - view.base)));
  }
  return { ...(current.system !== undefined ? { system: current.system } : {}), messages, base: 0 };
}
