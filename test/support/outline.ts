/**
 * Readable views of a session for exact assertions: the log as short lines, the user ids of a model request.
 */
import {
  applySplice,
  EMPTY_INBOX,
  removedBy,
  spliceShape,
  type Inbox,
  type SessionEvent,
  type TranscriptEntry,
} from '../../src/domain/index';

/**
 * A log as short readable lines, for exact assertions: `insert next-step A`, `claim next-turn P`, `cancel next-step A`,
 * `turn/start 1`, `step/start 1.1`, `user/message A`, `assistant/message 1.1 [c1,c2]`, `tool/call c1`,
 * `tool/result c1` (`tool/result c1 CODE` for an error), `approval? c1` (requested), `approval c1 deny by caller`,
 * `step/end 1.1`, `turn/end 1 completed`, `session/disposed`.
 */
export function outline(log: readonly SessionEvent[], initial: Inbox = EMPTY_INBOX): string[] {
  let inbox = initial;
  return log.map((e) => {
    switch (e.type) {
      case 'agent/inbox/spliced': {
        const ids = (e.data.inserted.length ? e.data.inserted : removedBy(inbox, e.data))
          .map((m) => m.id)
          .join(',');
        inbox = applySplice(inbox, e.data);
        return `${spliceShape(e.data)} ${e.data.target} ${ids}`;
      }
      case 'turn/start':
        return `turn/start ${e.data.turn}`;
      case 'turn/end':
        return `turn/end ${e.data.turn} ${e.data.reason.kind}`;
      case 'step/start':
      case 'step/end':
        return `${e.type} ${e.data.turn}.${e.data.step}`;
      case 'user/message':
        return `user/message ${e.data.message.id}`;
      case 'assistant/message': {
        const calls = e.data.message.toolCalls?.map((c) => c.callId);
        return `assistant/message ${e.data.turn}.${e.data.step}${calls ? ` [${calls.join(',')}]` : ''}${e.data.interrupted ? ' interrupted' : ''}`;
      }
      case 'tool/call':
        return `tool/call ${e.data.callId}`;
      case 'tool/result':
        return `tool/result ${e.data.callId}${e.data.error ? ` ${e.data.error.code}` : ''}`;
      case 'tool/approval-requested':
        return `approval? ${e.data.callId}`;
      case 'tool/approval-resolved':
        return `approval ${e.data.callId} ${e.data.decision} by ${e.data.by}`;
      case 'budget/exceeded':
        return `budget/exceeded ${e.data.turn}.${e.data.step} ${e.data.over.join(',')}${e.data.waits ? '' : ' stop'}`;
      case 'budget/resolved':
        return `budget/resolved ${e.data.turn}.${e.data.step} ${e.data.decision} by ${e.data.by}`;
      case 'session/forked':
        return `session/forked ${e.data.from}@${e.data.throughSeq} ${e.data.messages.length}`;
      case 'compaction/summary':
        return `compaction/summary ${e.data.turn}.${e.data.step} through ${e.data.throughSeq}`;
      case 'subsession/started':
        return `subsession/started ${e.data.callId} ${e.data.session}`;
      case 'subsession/ended':
        return `subsession/ended ${e.data.callId} ${e.data.reason.kind}`;
      case 'session/disposed':
        return e.type;
    }
  });
}

/** Ids of the user entries of a model request. */
export function userIds(request: readonly TranscriptEntry[]): string[] {
  return request.flatMap((entry) => (entry.role === 'user' ? [entry.id] : []));
}
