/**
 * The transcript projection: the model-visible messages derived from the log ("model-visible ⟺ logged", rule 14).
 * `user/message`, `assistant/message` (interrupted ones keep their visible text) and `tool/result` are visible;
 * inbox splices, turn and step boundaries are not. Direct input and context differ only by `source` (rule 35).
 * Pure; the same fold runs incrementally in the workflow and over a whole log in tests.
 */
import type { ErrorInfo, SessionEvent, ToolCallInfo } from './events';
import type { ContentBlock, MessageSource } from './messages';

export type TranscriptEntry =
  | { role: 'user'; id: string; content: ContentBlock[]; source: MessageSource }
  | { role: 'assistant'; id: string; content: ContentBlock[]; toolCalls?: ToolCallInfo[]; interrupted?: true }
  | { role: 'tool'; callId: string; name: string; content: ContentBlock[]; error?: ErrorInfo };

/** Incremental projection state: the entries plus the tool names of calls seen so far (results lack names). */
export interface TranscriptState {
  entries: TranscriptEntry[];
  callNames: Record<string, string>;
}

export function emptyTranscript(): TranscriptState {
  return { entries: [], callNames: {} };
}

/** Folds one event into the projection (mutates and returns `state`). Unknown event types are skipped. */
export function projectEvent(state: TranscriptState, event: SessionEvent): TranscriptState {
  switch (event.type) {
    case 'user/message': {
      const m = event.data.message;
      state.entries.push({ role: 'user', id: m.id, content: [...m.content], source: m.source });
      break;
    }
    case 'assistant/message': {
      const m = event.data.message;
      const entry: TranscriptEntry = { role: 'assistant', id: m.id, content: m.content };
      if (m.toolCalls?.length) entry.toolCalls = m.toolCalls;
      if (event.data.interrupted) entry.interrupted = true;
      state.entries.push(entry);
      break;
    }
    case 'tool/call':
      state.callNames[event.data.callId] = event.data.name;
      break;
    case 'tool/result': {
      const entry: TranscriptEntry = {
        role: 'tool',
        callId: event.data.callId,
        name: state.callNames[event.data.callId] ?? 'unknown',
        content: event.data.content,
      };
      if (event.data.error) entry.error = event.data.error;
      state.entries.push(entry);
      break;
    }
    default:
      break;
  }
  return state;
}

/** The model-visible messages of a whole log (or of its prefix up to a point). */
export function projectTranscript(events: Iterable<SessionEvent>): TranscriptEntry[] {
  const state = emptyTranscript();
  for (const e of events) projectEvent(state, e);
  return state.entries;
}
