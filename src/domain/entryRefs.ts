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
import type { HeldIn, RefTarget } from './refTarget';
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

// ---- what a run's history holds, and the entry a reference names from it ----

/**
 * One place a run's history holds content a reference may name: a delivery's payload (`name`: its signal or
 * update), a tool activity's result (`name`: the tool's) or a model activity's result.
 */
export interface Held {
  name: string;
  value: unknown;
}

/** The key a record of a run's history files content under, by where a reference says it is held. */
export function heldKey(
  held: Exclude<HeldIn, { in: 'model' }> | { in: 'model'; requestIndex: number },
): string {
  switch (held.in) {
    case 'delivery':
      return `delivery:${held.messageId}`;
    case 'tool':
      return `tool:${held.callId}`;
    case 'model':
      return `model:${held.requestIndex}`;
  }
}

/** The key of a delivery payload: its message's id (a payload without its own id holds no referenced entry). */
export function deliveryKey(payload: unknown): string | undefined {
  const id = (payload as { message?: { id?: unknown } } | null | undefined)?.message?.id;
  return typeof id === 'string' ? heldKey({ in: 'delivery', messageId: id }) : undefined;
}

/** The entry `ref` names, rebuilt from one place history holds with the workflow's builders; checked by its hash. */
export function rebuiltEntry(ref: RefTarget, held: Held): TranscriptEntry | undefined {
  switch (ref.in) {
    case 'delivery':
      return checked(ref, entryFromDelivery(held.name, held.value));
    case 'tool':
      return checked(ref, entryFromToolResult(ref.callId, held.name, held.value as ToolExecResult));
    case 'model':
      return checked(ref, entryFromModelResult(ref.id, held.value as ModelStepResult));
  }
}

/**
 * What one run's history holds that references may name, filed by `heldKey` in history order (the history reader
 * files delivery payloads here; the in-memory test interpreter everything its run's history would hold).
 */
export class HeldContent {
  private readonly byKey = new Map<string, Held[]>();

  add(key: string, held: Held): void {
    const list = this.byKey.get(key) ?? [];
    list.push(held);
    this.byKey.set(key, list);
  }

  /** A `followup`/`steer`/`inject` signal's or `deliver` update's payload (filed only if it names its message id). */
  delivered(name: string, payload: unknown): void {
    const key = deliveryKey(payload);
    if (key) this.add(key, { name, value: payload });
  }

  /** A tool activity's result. */
  toolCompleted(callId: string, name: string, result: ToolExecResult): void {
    this.add(heldKey({ in: 'tool', callId }), { name, value: result });
  }

  /** A model activity's result. */
  modelCompleted(requestIndex: number, result: ModelStepResult): void {
    this.add(heldKey({ in: 'model', requestIndex }), { name: '', value: result });
  }

  /** The entry a reference names, from the first place filed under its key that yields it. */
  resolve(ref: RefTarget): TranscriptEntry | undefined {
    for (const held of this.byKey.get(heldKey(ref)) ?? []) {
      const entry = rebuiltEntry(ref, held);
      if (entry) return entry;
    }
    return undefined;
  }
}
