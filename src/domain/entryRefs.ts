/**
 * Transcript entries sent as references (issue 15, part 3; docs/decisions/2026-12-03-transcript-refs.md). Most
 * entries a model request sends are content the run's Temporal history already holds: the user message in the
 * signal or update that delivered it, the tool result in the tool activity's result, the last answer in the
 * previous model activity's result. Such an entry travels as `{ref}`: the log seq of the event that added it, the
 * entry's own hash, and where the history holds it. A reader rebuilds the entry from that place with the builders
 * below — the same code the workflow built it with — and checks it against the hash; anything else stays inline.
 * Pure and deterministic (the workflow, the activities and the tests share it).
 */
import type { ModelCall } from './effects';
import type { RefTarget } from './refTarget';
import type { ModelStepResult, ToolExecResult } from './results';
import type { AssistantMessage } from './events';
import type { UserMessage } from './messages';
import { deliveredUserMessage } from './driver/inputs';
import { assistantEntry, entryHash, toolEntry, userEntry, type TranscriptEntry } from './entry';
import { DeliverInputSchema, LaneSignalSchema } from './wire';

export { entryHash } from './entry';
export type { HeldIn, RefTarget } from './refTarget';

/** A transcript entry a request sends by reference. */
export interface EntryRef {
  ref: RefTarget;
}

/** A transcript entry as a model activity's input carries it: inline, or a reference. */
export type WireEntry = TranscriptEntry | EntryRef;

export function isEntryRef(entry: WireEntry): entry is EntryRef {
  return 'ref' in entry;
}

/** A request's new entries as its activity input carries them: references where the call has them, else inline. */
export function wireEntries(call: Pick<ModelCall, 'newEntries' | 'refs'>): WireEntry[] {
  return call.newEntries.map((entry, i) => {
    const ref = call.refs[i];
    return ref ? { ref } : entry;
  });
}

/** The entries a request sends by reference, by seq (what the worker's store is given). */
export function referencedEntries(
  call: Pick<ModelCall, 'newEntries' | 'refs'>,
): { seq: number; entry: TranscriptEntry }[] {
  return call.newEntries.flatMap((entry, i) => {
    const ref = call.refs[i];
    return ref ? [{ seq: ref.seq, entry }] : [];
  });
}

// ---- rebuilding an entry from what the history holds (each as the workflow builds it) ----

/**
 * The message a delivery payload delivers, as the driver builds it from the same payload; undefined for a payload
 * the session refuses or one without its own id (the workflow made that id, the history does not hold it).
 */
export function deliveredMessage(name: string, payload: unknown): UserMessage | undefined {
  const parsed =
    name === 'deliver'
      ? DeliverInputSchema.safeParse(payload)
      : name === 'followup' || name === 'steer' || name === 'inject'
        ? LaneSignalSchema.safeParse(payload)
        : undefined;
  if (!parsed?.success || parsed.data.message.id === undefined) return undefined;
  // As the driver builds it (the same function): a direct message's references travel in its source.
  return deliveredUserMessage(parsed.data.message, () => {
    throw new Error('unreachable: the message has an id');
  });
}

/** The entry of a delivered message. */
export function entryFromDelivery(name: string, payload: unknown): TranscriptEntry | undefined {
  const message = deliveredMessage(name, payload);
  return message ? userEntry(message) : undefined;
}

/** The entry of a tool call's result, as a tool activity returned it. */
export function entryFromToolResult(callId: string, name: string, result: ToolExecResult): TranscriptEntry {
  return toolEntry(callId, name, result.content, result.error);
}

/** The entry of a model activity's answer (not an interrupted one: those stay inline). */
export function entryFromModelResult(id: string, result: ModelStepResult): TranscriptEntry {
  return assistantEntry(assistantMessage(id, result));
}

/** The assistant message the driver logs for a model answer. */
export function assistantMessage(
  id: string,
  result: Pick<ModelStepResult, 'text' | 'toolCalls'>,
): AssistantMessage {
  return {
    id,
    role: 'assistant',
    content: result.text ? [{ type: 'text', text: result.text }] : [],
    ...(result.toolCalls.length ? { toolCalls: result.toolCalls } : {}),
  };
}

/** `entry` if it is the one `ref` names (its hash matches), else undefined. */
export function checked(ref: RefTarget, entry: TranscriptEntry | undefined): TranscriptEntry | undefined {
  return entry && entryHash(entry) === ref.hash ? entry : undefined;
}
