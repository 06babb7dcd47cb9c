/**
 * Keeps a session's search attributes (src/contract/searchAttributes.ts) current: upserted at turn boundaries and
 * status changes — turn/start, turn/end, session/disposed — never per event, so a turn costs two upserts. Only when
 * the session was started with them (the server has them registered); otherwise it does nothing, and the session
 * runs the same without visibility. Deterministic (workflow sandbox).
 */
import { upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { SearchAttributes } from '../contract/searchAttributes';
import type { SessionEvent } from '../domain/events';
import type { SessionCore } from '../domain/session';

const BOUNDARIES = new Set<SessionEvent['type']>(['turn/start', 'turn/end', 'session/disposed']);

export class Visibility {
  private readonly enabled = workflowInfo().typedSearchAttributes.get(SearchAttributes.status) !== undefined;

  constructor(private readonly core: () => SessionCore) {}

  onEvent(event: SessionEvent): void {
    if (!this.enabled || !BOUNDARIES.has(event.type)) return;
    const core = this.core();
    upsertSearchAttributes([
      { key: SearchAttributes.status, value: core.status() },
      { key: SearchAttributes.turn, value: core.turn },
      { key: SearchAttributes.pending, value: core.inbox.nextTurn.length + core.inbox.nextStep.length },
      { key: SearchAttributes.lastActivity, value: new Date(event.time) },
    ]);
  }
}
