/** `agent-sessions events|state|transcript <id>`: the session's queries, readable or as JSON. */
import type { SessionEvent } from '../../domain/events';
import { textOf } from '../../domain/messages';
import { turnEndText } from '../../domain/turnEnd';
import type { TranscriptEntry } from '../../domain/transcript';
import { boolOpt, intOpt, positionals, sessionIdArg, sourceLabel } from '../args';
import { out, type Command } from '../command';
import { withSessions } from '../connect';
import { sessionTable } from './list';

export const eventsCommand: Command = {
  name: 'events',
  summary: 'print the session log (all runs of its continue-as-new chain)',
  usage: 'agent-sessions events <id> [--json] [--after SEQ]',
  details:
    'options:\n  --json         one JSON event per line ({seq, type, time, data})\n  --after SEQ    only events with seq > SEQ',
  options: { json: { type: 'boolean' }, after: { type: 'string' } },
  connects: true,
  async run(p) {
    const [id] = positionals(p, ['id']);
    const sessionId = sessionIdArg(id);
    const after = intOpt(p, 'after', -1) ?? -1;
    const json = boolOpt(p, 'json');
    return withSessions(p, async (sessions) => {
      for (const event of await sessions.allEvents(sessionId, after))
        out(json ? JSON.stringify(event) : eventLine(event));
      return 0;
    });
  },
};

export const stateCommand: Command = {
  name: 'state',
  summary:
    'print the session state: status, turn, step, pending ids, refused signals, token usage, approvals',
  usage: 'agent-sessions state <id> [--json]',
  details: 'options:\n  --json         the `state` query result as JSON',
  options: { json: { type: 'boolean' } },
  connects: true,
  async run(p) {
    const [id] = positionals(p, ['id']);
    const sessionId = sessionIdArg(id);
    return withSessions(p, async (sessions) => {
      const state = await sessions.state(sessionId);
      if (boolOpt(p, 'json')) {
        out(JSON.stringify(state));
        return 0;
      }
      // The same row `list` shows, when the session has its search attributes.
      const row = await sessions.row(sessionId);
      if (row.turn !== undefined) out(sessionTable([row]));
      out(`status: ${state.status}`);
      out(`turn: ${state.turn}  step: ${state.step}`);
      out(`pending next-turn: ${list(state.pending.nextTurn)}`);
      out(`pending next-step: ${list(state.pending.nextStep)}`);
      out(`refused signals: ${state.refused}${state.lastRefusal ? ` (last: ${state.lastRefusal})` : ''}`);
      // Absent from sessions whose worker predates tool approval.
      for (const a of state.approvals ?? [])
        out(
          `awaiting approval: ${a.callId} ${a.name} ${JSON.stringify(a.arguments)} (step ${a.turn}.${a.step})`,
        );
      if (state.budget) {
        const { limits, used, paused } = state.budget;
        const parts = (Object.keys(limits) as (keyof typeof limits)[]).map(
          (k) => `${k} ${used[k]}/${limits[k]}`,
        );
        out(
          `budget: ${parts.join(', ')}${paused ? ` — waiting before step ${paused.turn}.${paused.step}: agent-sessions budget ${sessionId} extend|deny` : ''}`,
        );
      }
      if (state.context) {
        const { tokens, maxTokens, compactions, messages } = state.context;
        out(
          `context: ~${tokens}/${maxTokens} tokens in ${messages} messages, ${compactions} compaction${compactions === 1 ? '' : 's'}`,
        );
      }
      // Absent from sessions whose worker predates usage accounting.
      if (state.usage) {
        const models = Object.entries(state.usage.byModel).map(
          ([model, u]) => `${model} ${u.inputTokens}/${u.outputTokens}`,
        );
        out(
          `tokens in/out: ${state.usage.inputTokens}/${state.usage.outputTokens}${models.length ? ` (${models.join(', ')})` : ''}`,
        );
      }
      return 0;
    });
  },
};

export const transcriptCommand: Command = {
  name: 'transcript',
  summary: 'print the model-visible transcript with each message’s source',
  usage: 'agent-sessions transcript <id> [--json]',
  details: 'options:\n  --json         the whole transcript ({system?, messages}) as JSON',
  options: { json: { type: 'boolean' } },
  connects: true,
  async run(p) {
    const [id] = positionals(p, ['id']);
    const sessionId = sessionIdArg(id);
    return withSessions(p, async (sessions) => {
      const view = await sessions.transcript(sessionId);
      if (boolOpt(p, 'json')) {
        out(JSON.stringify(view));
        return 0;
      }
      if (view.system) out(`[system] ${view.system}`);
      for (const m of view.messages) out(entryLine(m));
      return 0;
    });
  },
};

function list(ids: readonly string[]): string {
  return ids.length ? ids.join(', ') : '(none)';
}

/** One line of a transcript entry. */
function entryLine(m: TranscriptEntry): string {
  const content = textOf(m.content);
  switch (m.role) {
    case 'user':
      return `[user ${sourceLabel(m.source)}] ${content}`;
    case 'assistant': {
      const calls = m.toolCalls?.map((c) => c.name) ?? [];
      return `[assistant] ${content}${calls.length ? ` (calls ${calls.join(', ')})` : ''}${m.interrupted ? ' (interrupted)' : ''}`;
    }
    case 'tool':
      return `[tool ${m.name} ${m.callId}] ${m.error ? `error ${m.error.code}: ${m.error.message}` : content}`;
  }
}

/** One readable line per event. */
export function eventLine(e: SessionEvent): string {
  const head = `${String(e.seq).padStart(4)} ${e.type}`;
  switch (e.type) {
    case 'agent/inbox/spliced': {
      const d = e.data;
      const what = d.inserted.length
        ? `insert ${d.inserted.map((m) => `${m.id} (${sourceLabel(m.source)}) "${textOf(m.content)}"`).join(', ')}`
        : `remove ${d.removedCount ?? 0}${d.outcome ? ` ${d.outcome}` : ''}`;
      return `${head} ${d.target} ${what}`;
    }
    case 'turn/start':
      return `${head} ${e.data.turn}`;
    case 'turn/end':
      return `${head} ${e.data.turn} ${turnEndText(e.data.reason)}`;
    case 'step/start':
    case 'step/end':
      return `${head} ${e.data.turn}.${e.data.step}`;
    case 'user/message':
      return `${head} ${e.data.message.id} (${sourceLabel(e.data.message.source)}) "${textOf(e.data.message.content)}"`;
    case 'assistant/message':
      return `${head} "${textOf(e.data.message.content)}"${e.data.message.toolCalls?.length ? ` +${e.data.message.toolCalls.length} tool calls` : ''}${e.data.interrupted ? ' (interrupted)' : ''}`;
    case 'tool/call':
      return `${head} ${e.data.callId} ${e.data.name} ${JSON.stringify(e.data.arguments)}`;
    case 'tool/result':
      return `${head} ${e.data.callId} ${e.data.error ? `error ${e.data.error.code}: ${e.data.error.message}` : `"${textOf(e.data.content)}"`}`;
    case 'tool/approval-requested':
      return `${head} ${e.data.callId} ${e.data.name} ${JSON.stringify(e.data.arguments)}`;
    case 'tool/approval-resolved':
      return `${head} ${e.data.callId} ${e.data.decision} by ${e.data.by}${e.data.reason ? `: ${e.data.reason}` : ''}`;
    case 'budget/exceeded':
      return `${head} ${e.data.turn}.${e.data.step} ${e.data.over.map((k) => `${k} ${e.data.used[k]} of ${e.data.limits[k]}`).join(', ')}${e.data.waits ? ' (waits)' : ''}`;
    case 'budget/resolved':
      return `${head} ${e.data.turn}.${e.data.step} ${e.data.decision} by ${e.data.by} ${JSON.stringify(e.data.limits)}${e.data.reason ? `: ${e.data.reason}` : ''}`;
    case 'session/forked':
      return `${head} from ${e.data.from} at seq ${e.data.throughSeq} with ${e.data.messages.length} messages`;
    case 'compaction/summary':
      return `${head} ${e.data.turn}.${e.data.step} through seq ${e.data.throughSeq}: ${e.data.tokensBefore} → ${e.data.tokensAfter} tokens by ${e.data.model} "${e.data.summary}"`;
    case 'subsession/started':
      return `${head} ${e.data.turn}.${e.data.step} ${e.data.callId} ${e.data.session}`;
    case 'subsession/ended':
      return `${head} ${e.data.turn}.${e.data.step} ${e.data.callId} ${e.data.session} ${e.data.reason.kind}${e.data.reason.kind === 'error' ? ` ${e.data.reason.error.code}: ${e.data.reason.error.message}` : ''}`;
    case 'session/disposed':
      return head;
    default:
      return `${head} ${JSON.stringify((e as { data?: unknown }).data)}`;
  }
}
