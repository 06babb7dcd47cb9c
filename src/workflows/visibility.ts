/**
 * Keeps a session's search attributes (src/contract/searchAttributes.ts) current: upserted at turn boundaries and
 * status changes — turn/start, turn/end, session/disposed — never per event, so a turn costs two upserts; the token
 * totals ride on the turn-end one. Only when
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
  /** Token totals only for sessions started with them (a namespace registered before they existed lacks them). */
  private readonly tokens =
    this.enabled && workflowInfo().typedSearchAttributes.get(SearchAttributes.inputTokens) !== undefined;

  constructor(private readonly core: () => SessionCore) {}

  onEvent(event: SessionEvent): void {
    if (!this.enabled || !BOUNDARIES.has(event.type)) return;
    const core = this.core();
    const usage = this.tokens && event.type !== 'turn/start' ? core.usage() : undefined;
    // At turn/start the turn is about to claim all of next-step and the head of next-turn: count what stays.
    const pending =
      event.type === 'turn/start'
        ? Math.max(0, core.inbox.nextTurn.length - 1)
        : core.inbox.nextTurn.length + core.inbox.nextStep.length;
    upsertSearchAttributes([
      { key: SearchAttributes.status, value: core.status() },
      { key: SearchAttributes.turn, value: core.turn },
      { key: SearchAttributes.pending, value: pending },
      { key: SearchAttributes.lastActivity, value: new Date(event.time) },
      ...(usage
        ? [
            { key: SearchAttributes.inputTokens, value: usage.inputTokens },
            { key: SearchAttributes.outputTokens, value: usage.outputTokens },
          ]
        : []),
    ]);
  }
}
