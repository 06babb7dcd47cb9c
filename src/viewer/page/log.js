// The session viewer's log fold (src/viewer/page/app.js imports it): what the page shows of a session's events, and
// the words for them. Plain functions, no rendering.

/** Folds the log into what the page shows: transcript entries, tool calls by id, and the turn/step timeline. */
export function foldLog(events) {
  const entries = [];
  const calls = new Map();
  const turns = [];
  // The lane each message was inserted into, by id: a person's message in `next-step` is a steer.
  const lanes = new Map();
  let disposed = false;
  for (const ev of events) {
    const d = ev.data;
    switch (ev.type) {
      case 'turn/start':
        turns.push({ turn: d.turn, steps: [], end: undefined });
        entries.push({ kind: 'turn', seq: ev.seq, turn: d.turn });
        break;
      case 'turn/end': {
        const t = turns.find((x) => x.turn === d.turn);
        // The words of the end come with the event (`endText`, from the server: src/domain/turnEnd.ts).
        if (t) t.end = ev.endText;
        entries.push({ kind: 'turn-end', seq: ev.seq, turn: d.turn, text: ev.endText });
        break;
      }
      case 'step/start': {
        const t = turns.find((x) => x.turn === d.turn);
        if (t) t.steps.push({ step: d.step, ended: false, tools: 0 });
        break;
      }
      case 'step/end': {
        const s = turns.find((x) => x.turn === d.turn)?.steps.find((x) => x.step === d.step);
        if (s) s.ended = true;
        break;
      }
      case 'agent/inbox/spliced':
        for (const m of d.inserted) lanes.set(m.id, d.target);
        break;
      case 'user/message':
        entries.push({ kind: 'user', seq: ev.seq, message: d.message, lane: lanes.get(d.message.id) });
        break;
      case 'assistant/message': {
        if (d.message.content.some((b) => b.text))
          entries.push({ kind: 'assistant', seq: ev.seq, turn: d.turn, step: d.step, message: d.message });
        // The model's calls, in its order: each is shown from here (a call that waits for approval has no
        // tool/call event until it is dispatched).
        const s = turns.find((x) => x.turn === d.turn)?.steps.find((x) => x.step === d.step);
        for (const c of d.message.toolCalls ?? []) {
          calls.set(c.callId, {
            ...c,
            dispatched: false,
            result: undefined,
            approval: undefined,
            decision: undefined,
          });
          entries.push({ kind: 'tool', seq: `${ev.seq}:${c.callId}`, callId: c.callId });
          if (s) s.tools++;
        }
        break;
      }
      case 'tool/call': {
        const call = calls.get(d.callId);
        if (call) call.dispatched = true;
        break;
      }
      case 'tool/approval-requested': {
        const call = calls.get(d.callId);
        if (call) call.approval = d;
        break;
      }
      case 'tool/approval-resolved': {
        const call = calls.get(d.callId);
        if (call) call.decision = d;
        break;
      }
      case 'tool/result': {
        const call = calls.get(d.callId);
        if (call) call.result = d;
        break;
      }
      case 'session/forked':
        entries.push({ kind: 'forked', seq: ev.seq, data: d });
        d.messages.forEach((m, i) => {
          if (m.role === 'user') entries.push({ kind: 'user', seq: `${ev.seq}:${i}`, message: m });
          if (m.role === 'assistant' && m.content.some((b) => b.text))
            entries.push({
              kind: 'assistant',
              seq: `${ev.seq}:${i}`,
              turn: 0,
              step: 0,
              message: m,
              forked: true,
            });
        });
        break;
      case 'compaction/summary':
        entries.push({ kind: 'compaction', seq: ev.seq, data: d });
        break;
      case 'session/disposed':
        entries.push({ kind: 'disposed', seq: ev.seq });
        disposed = true;
        break;
    }
  }
  return { entries, calls, turns, disposed };
}

const formatBytes = (n) =>
  n < 1024
    ? `${n} byte${n === 1 ? '' : 's'}`
    : n < 1048576
      ? `${(n / 1024).toFixed(1)} KB`
      : `${(n / 1048576).toFixed(1)} MB`;
const base64Bytes = (data) => {
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  return Math.floor(((data.length - padding) * 3) / 4);
};
// Images, audio and resources of tool results as one line each (`[image image/png, 12.3 KB]`), never their base64.
const blockText = (b) => {
  if (b.type === 'text' || b.type === undefined) return b.text ?? '';
  if (b.type === 'image' || b.type === 'audio')
    return `[${b.type} ${b.mimeType}, ${formatBytes(base64Bytes(b.data ?? ''))}]`;
  if (b.type === 'resource') {
    const about = `${b.uri}${b.name ? ` "${b.name}"` : ''}${b.mimeType ? ` ${b.mimeType}` : ''}`;
    if (b.text !== undefined) return `[resource ${about}]\n${b.text}`;
    if (b.data !== undefined) return `[resource ${about}, ${formatBytes(base64Bytes(b.data))}]`;
    return `[resource link ${about}]`;
  }
  return `[${b.type} content]`;
};
// Text blocks run together (as the model wrote them); a described block gets its own line.
export const textOf = (blocks) =>
  blocks.map(blockText).join(blocks.some((b) => b.type !== undefined && b.type !== 'text') ? '\n' : '');

// The field that names the producer of each kind of source: `plugin clock`, `hook audit`, `tool call-1`.
const NAME_FIELD = { tool: 'callId', 'session-ref': 'session' };

/** A source in words: its kind with the producer's name, then its other fields (`session-ref s1 · throughSeq: 4`). */
export function sourceLabel(source) {
  const nameKey = NAME_FIELD[source.kind] ?? source.kind;
  const name = typeof source[nameKey] === 'string' ? source[nameKey] : undefined;
  const extra = Object.entries(source)
    .filter(([k, v]) => k !== 'kind' && k !== nameKey && (typeof v === 'string' || typeof v === 'number'))
    .map(([k, v]) => `${k}: ${v}`);
  return [name === undefined ? source.kind : `${source.kind} ${name}`, ...extra].join(' · ');
}

/** Who wrote a person's message, with its lane when the log says it (`steer`, `follow-up`). */
export function userLabel(entry) {
  const lane = entry.lane === 'next-step' ? 'steer' : entry.lane === 'next-turn' ? 'follow-up' : undefined;
  return lane ? `you · ${lane} · ` : 'you · ';
}

/**
 * The session's status for the header. The state is read a moment after each event (and may answer late); the log is
 * the newer word when it knows the state's turn: once that turn's `turn/end` is in, the session is idle.
 */
export function viewStatus(state, folded) {
  if (folded.disposed) return 'disposed';
  const last = folded.turns[folded.turns.length - 1];
  const fromLog = last && (last.end ? 'idle' : 'running');
  if (!state || (state.status !== 'disposed' && last && last.turn >= state.turn)) return fromLog;
  return state.status;
}
