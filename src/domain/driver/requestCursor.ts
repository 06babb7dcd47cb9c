/**
 * The request cursor: what the next model request sends. History grows with new content only (decision
 * 2026-12-02): a request carries the transcript entries added since the previous one, with the count and hash of
 * what came before. It also keeps the held references — entries whose content this run's history already holds (a
 * delivery, a tool activity's result, a model activity's answer) go by reference (../entryRefs.ts). Pure.
 */
import { EMPTY_TRANSCRIPT_HASH, entryHash, type TranscriptEntry } from '../entry';
import type { ModelCall } from '../effects';
import type { UserMessage } from '../messages';
import type { HeldIn, RefTarget } from '../refTarget';
import type { SessionCore } from '../session';
import { transcriptLength } from '../transcript';
import type { ModelSpec, SessionConfig } from '../wire';

export class RequestCursor {
  /** Count and hash of the transcript prefix the last model request saw (history grows with new content only). */
  private sentPrefix: { count: number; hash: string };
  /**
   * Messages this run accepted from a delivery that named their id, until they enter: their `user/message` entry is
   * then held by that signal or update in this run's history (../entryRefs.ts).
   */
  private readonly delivered = new Map<string, UserMessage>();
  /** Entries of this run no request has sent yet whose content this run's history holds, and where. */
  private readonly held = new Map<TranscriptEntry, HeldIn & { seq: number }>();

  constructor(
    private readonly core: SessionCore,
    sent: { count: number; hash: string },
  ) {
    this.sentPrefix = sent;
  }

  /** Count and hash of the transcript prefix the last model request saw. */
  get sent(): { count: number; hash: string } {
    return this.sentPrefix;
  }

  /** The entries no request has sent yet (a compaction request sends them inline). */
  unsentEntries(): TranscriptEntry[] {
    const t = this.core.transcript;
    return t.entries.slice(Math.max(0, this.sentPrefix.count - t.base));
  }

  /** After a compaction: the next request carries the new projection from position 0. */
  restart(): void {
    this.sentPrefix = { count: 0, hash: EMPTY_TRANSCRIPT_HASH };
  }

  /**
   * The model request: only the transcript entries added since the previous request, with the count and hash of
   * what came before; the interpreter's model call assembles the rest (rule 14: exactly what the log holds).
   */
  modelCall(config: SessionConfig, tools: string[]): ModelCall {
    const core = this.core;
    const requestIndex = core.nextModelRequest();
    const t = core.transcript;
    const prefix = this.sentPrefix;
    const newEntries = this.unsentEntries();
    const refs = newEntries.map((entry): RefTarget | null => {
      const held = this.held.get(entry);
      if (!held) return null;
      this.held.delete(entry);
      return { ...held, hash: entryHash(entry) };
    });
    this.sentPrefix = { count: transcriptLength(t), hash: t.hash };
    return {
      turn: core.turn,
      step: core.step,
      requestIndex,
      ...modelForRequest(config.model, requestIndex),
      ...(config.system !== undefined ? { system: config.system } : {}),
      tools,
      prefix,
      newEntries,
      refs,
      hash: t.hash,
      ...(t.generation ? { generation: t.generation } : {}),
    };
  }

  /** A message accepted from a delivery that named its id: its entry will be held where it was delivered. */
  delivery(message: UserMessage): void {
    this.delivered.set(message.id, message);
  }

  /** Marks the entry just added (by the last event) as held in this run's history. */
  hold(where: HeldIn): void {
    const entries = this.core.transcript.entries;
    const entry = entries[entries.length - 1];
    if (entry) this.held.set(entry, { ...where, seq: this.core.lastSeq });
  }

  /** Marks the `user/message` entries just added for `messages` held where they were delivered, if they were. */
  holdDelivered(messages: readonly UserMessage[]): void {
    const entries = this.core.transcript.entries;
    const first = entries.length - messages.length;
    const firstSeq = this.core.lastSeq - messages.length + 1;
    messages.forEach((m, i) => {
      const entry = entries[first + i];
      if (!entry || this.delivered.get(m.id) !== m) return;
      this.delivered.delete(m.id);
      this.held.set(entry, { in: 'delivery', messageId: m.id, seq: firstSeq + i });
    });
  }
}

/**
 * The session's model for one request. A scripted model's script can be long; the request carries only the step
 * it answers with (and that step's index), so history does not grow with the script's length.
 */
export function modelForRequest(
  model: ModelSpec | undefined,
  requestIndex: number,
): { model?: ModelSpec; stepsFrom?: number } {
  if (!model) return {};
  if (model.provider !== 'scripted') return { model };
  return {
    model: { ...model, steps: model.steps.slice(requestIndex, requestIndex + 1) },
    stepsFrom: requestIndex,
  };
}
