/**
 * The inbox: two ordered lists, `next-turn` (follow-ups) and `next-step` (steering and injected context).
 * Every mutation is a normalized splice record (`agent/inbox/spliced` data), validated against the current lists
 * before it is applied; the inbox at any point is the fold of the splices before it. Pure and deterministic.
 */
import type { InboxTarget, SpliceData } from './events';
import type { UserMessage } from './messages';

export interface Inbox {
  readonly nextTurn: readonly UserMessage[];
  readonly nextStep: readonly UserMessage[];
}

export const EMPTY_INBOX: Inbox = Object.freeze({ nextTurn: [], nextStep: [] });

export class InboxSpliceError extends Error {
  override name = 'InboxSpliceError';
}

export function listOf(inbox: Inbox, target: InboxTarget): readonly UserMessage[] {
  return target === 'next-turn' ? inbox.nextTurn : inbox.nextStep;
}

/** The three splice shapes the session writes. */
export type SpliceShape = 'insert' | 'claim' | 'cancel';

export function spliceShape(splice: SpliceData): SpliceShape {
  if (splice.outcome === 'canceled') return 'cancel';
  return splice.inserted.length > 0 ? 'insert' : 'claim';
}

/**
 * Checks a splice against the inbox it applies to. Returns a problem ("expected …, got …") or undefined.
 * Splices that change nothing are invalid: rule 3 says a change that changes nothing appends nothing.
 */
export function spliceProblem(inbox: Inbox, splice: SpliceData): string | undefined {
  const list = listOf(inbox, splice.target);
  const removed = splice.removedCount ?? 0;
  if (!Number.isInteger(splice.start) || splice.start < 0 || splice.start > list.length) {
    return `splice start expected 0..${list.length} for ${splice.target}, got ${splice.start}`;
  }
  if (!Number.isInteger(removed) || removed < 0 || splice.start + removed > list.length) {
    return `splice removes ${removed} from ${splice.start} but ${splice.target} has ${list.length}`;
  }
  if (removed === 0 && splice.inserted.length === 0) return 'splice changes nothing';
  if (splice.outcome === 'canceled' && splice.inserted.length > 0) return 'a canceled splice inserts nothing';
  const ids = new Set([...inbox.nextTurn, ...inbox.nextStep].map((m) => m.id));
  for (const m of splice.inserted) {
    if (ids.has(m.id)) return `splice inserts id ${m.id} that is already pending`;
    ids.add(m.id);
  }
  return undefined;
}

/** Applies one splice (after validating it). Throws InboxSpliceError on an invalid splice. */
export function applySplice(inbox: Inbox, splice: SpliceData): Inbox {
  const problem = spliceProblem(inbox, splice);
  if (problem) throw new InboxSpliceError(problem);
  const list = listOf(inbox, splice.target).slice();
  list.splice(splice.start, splice.removedCount ?? 0, ...splice.inserted);
  return splice.target === 'next-turn'
    ? { nextTurn: list, nextStep: inbox.nextStep }
    : { nextTurn: inbox.nextTurn, nextStep: list };
}

/** The inbox after a sequence of splices, from an initial inbox (empty by default). */
export function foldInbox(splices: Iterable<SpliceData>, initial: Inbox = EMPTY_INBOX): Inbox {
  let inbox = initial;
  for (const s of splices) inbox = applySplice(inbox, s);
  return inbox;
}

/** The messages a splice removes from the inbox it applies to (for claimed / discarded notifications). */
export function removedBy(inbox: Inbox, splice: SpliceData): UserMessage[] {
  return listOf(inbox, splice.target).slice(splice.start, splice.start + (splice.removedCount ?? 0));
}

// ---- builders for the three shapes ----

export function insertSplice(inbox: Inbox, target: InboxTarget, message: UserMessage): SpliceData {
  return { target, start: listOf(inbox, target).length, inserted: [message] };
}

/** A claim of the first `count` items of a list; undefined when there is nothing to claim. */
export function claimSplice(inbox: Inbox, target: InboxTarget, count: number): SpliceData | undefined {
  const n = Math.min(count, listOf(inbox, target).length);
  return n > 0 ? { target, start: 0, removedCount: n, inserted: [] } : undefined;
}

/** A canceled splice of a whole list; undefined when the list is empty. */
export function cancelSplice(inbox: Inbox, target: InboxTarget): SpliceData | undefined {
  const n = listOf(inbox, target).length;
  return n > 0 ? { target, start: 0, removedCount: n, inserted: [], outcome: 'canceled' } : undefined;
}
