/**
 * Derived notifications over a session's log: besides every event, `inserted`, `claimed` and `discarded` items
 * computed by folding the inbox splices (the splice records carry positions, not the removed messages). Pure.
 */
import type { InboxTarget, SessionEvent } from '../domain/events';
import { applySplice, EMPTY_INBOX, removedBy, spliceShape, type Inbox } from '../domain/inbox';
import type { UserMessage } from '../domain/messages';

export type WatchItem =
  | { kind: 'event'; event: SessionEvent }
  | { kind: 'inserted'; seq: number; target: InboxTarget; message: UserMessage }
  | { kind: 'claimed'; seq: number; target: InboxTarget; messages: UserMessage[] }
  | { kind: 'discarded'; seq: number; target: InboxTarget; messages: UserMessage[] };

/** Folds events in order and yields, for each, the event and its derived notifications. */
export class WatchFold {
  private inbox: Inbox = EMPTY_INBOX;

  /** Items for one event; `emit` false folds without yielding (catching up on events the caller already has). */
  next(event: SessionEvent, emit = true): WatchItem[] {
    const items: WatchItem[] = [];
    if (event.type === 'agent/inbox/spliced') {
      const splice = event.data;
      const removed = removedBy(this.inbox, splice);
      this.inbox = applySplice(this.inbox, splice);
      const shape = spliceShape(splice);
      if (shape === 'insert') {
        for (const message of splice.inserted)
          items.push({ kind: 'inserted', seq: event.seq, target: splice.target, message });
      } else {
        items.push({
          kind: shape === 'claim' ? 'claimed' : 'discarded',
          seq: event.seq,
          target: splice.target,
          messages: removed,
        });
      }
    }
    return emit ? [{ kind: 'event', event }, ...items] : [];
  }
}
