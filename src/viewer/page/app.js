// The session viewer's page (`agent-sessions ui`): Preact + htm, served by src/viewer/server.ts from our own
// node_modules. Two views, by the address's hash: `#/` lists sessions (visibility), `#/s/<id>` shows one session live
// from /api/sessions/<id>/live (Server-Sent Events: the log, then new events and the running step's text).
import { h, render } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import htm from 'htm';

const html = htm.bind(h);

async function api(path, init) {
  const res = await fetch(path, {
    ...init,
    headers: { 'content-type': 'application/json', ...(init && init.headers) },
  });
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(body.error || `${res.status} ${res.statusText}`);
  return body;
}

const post = (path, body) => api(path, { method: 'POST', body: JSON.stringify(body) });

function useRoute() {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    window.addEventListener('hashchange', on);
    // Effects run after the first paint: a hash that changed before the listener was added is read here.
    on();
    return () => window.removeEventListener('hashchange', on);
  }, []);
  const m = /^#\/s\/(.+)$/.exec(hash);
  return m ? { view: 'session', id: decodeURIComponent(m[1]) } : { view: 'list' };
}

function App() {
  const route = useRoute();
  const [role, setRole] = useState(undefined);
  useEffect(() => {
    api('/api/me').then(
      (me) => setRole(me.role),
      () => setRole('none'),
    );
  }, []);
  return html`
    <header class="top">
      <a href="#/" class="brand">agent-sessions</a>
      ${route.view === 'session' && html`<span class="crumb">/ ${route.id}</span>`}
      <span class="role" data-testid="role"
        >${role === 'read' ? 'read-only' : role === 'full' ? 'full access' : ''}</span
      >
    </header>
    <main>
      ${
        route.view === 'session'
          ? html`<${SessionView} key=${route.id} id=${route.id} role=${role} />`
          : html`<${SessionList} />`
      }
    </main>
  `;
}

// ---- the list ----

function SessionList() {
  const [status, setStatus] = useState('');
  const [page, setPage] = useState(undefined);
  const [error, setError] = useState(undefined);
  useEffect(() => {
    let stop = false;
    const load = () =>
      api(`/api/sessions${status ? `?status=${status}` : ''}`).then(
        (p) => !stop && (setPage(p), setError(undefined)),
        (e) => !stop && setError(e.message),
      );
    load();
    const timer = setInterval(load, 3000);
    return () => {
      stop = true;
      clearInterval(timer);
    };
  }, [status]);
  return html`
    <section class="list">
      <div class="bar">
        <h1>Sessions</h1>
        <label
          >show
          <select
            value=${status}
            onChange=${(e) => setStatus(e.currentTarget.value)}
            data-testid="status-filter"
          >
            <option value="">live (idle and running)</option>
            <option value="running">running</option>
            <option value="idle">idle</option>
            <option value="disposed">ended</option>
          </select></label
        >
      </div>
      ${error && html`<p class="error">${error}</p>`}
      ${page === undefined && !error && html`<p class="muted">loading…</p>`}
      ${
        page &&
        (page.sessions.length === 0
          ? html`<p class="muted">No sessions match.</p>`
          : html`<table data-testid="sessions">
              <thead>
                <tr>
                  <th>session</th>
                  <th>status</th>
                  <th>turn</th>
                  <th>pending</th>
                  <th>model</th>
                  <th>labels</th>
                  <th>last activity</th>
                </tr>
              </thead>
              <tbody>
                ${page.sessions.map(
                  (s) =>
                    html`<tr key=${s.id}>
                      <td><a class="session-link" href=${`#/s/${encodeURIComponent(s.id)}`}>${s.id}</a></td>
                      <td><span class=${`status ${s.status}`}>${s.status}</span></td>
                      <td>${s.turn ?? ''}</td>
                      <td>${s.pending ?? ''}</td>
                      <td>${s.model ?? ''}</td>
                      <td>${s.labels.join(', ')}</td>
                      <td>${s.lastActivity ? new Date(s.lastActivity).toLocaleString() : ''}</td>
                    </tr>`,
                )}
              </tbody>
            </table>`)
      }
    </section>
  `;
}

// ---- one session ----

/** Folds the log into what the page shows: transcript entries, tool calls by id, and the turn/step timeline. */
function foldLog(events) {
  const entries = [];
  const calls = new Map();
  const turns = [];
  for (const ev of events) {
    const d = ev.data;
    switch (ev.type) {
      case 'turn/start':
        turns.push({ turn: d.turn, steps: [], end: undefined });
        entries.push({ kind: 'turn', seq: ev.seq, turn: d.turn });
        break;
      case 'turn/end': {
        const t = turns.find((x) => x.turn === d.turn);
        if (t) t.end = d.reason;
        entries.push({ kind: 'turn-end', seq: ev.seq, turn: d.turn, reason: d.reason });
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
      case 'user/message':
        entries.push({ kind: 'user', seq: ev.seq, message: d.message });
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
        break;
    }
  }
  return { entries, calls, turns };
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
const textOf = (blocks) =>
  blocks.map(blockText).join(blocks.some((b) => b.type !== undefined && b.type !== 'text') ? '\n' : '');

function sourceLabel(source) {
  const extra = Object.entries(source)
    .filter(([k, v]) => k !== 'kind' && (typeof v === 'string' || typeof v === 'number'))
    .map(([k, v]) => `${k}: ${v}`);
  return [source.kind, ...extra].join(' · ');
}

function endLabel(reason) {
  if (reason.kind === 'aborted') return `aborted (${reason.reason.kind})`;
  if (reason.kind === 'error') return `error ${reason.error.code}: ${reason.error.message}`;
  if (reason.kind === 'blocked') return `blocked${reason.message ? `: ${reason.message}` : ''}`;
  return reason.kind;
}

function SessionView({ id, role }) {
  const log = useRef([]);
  const [version, setVersion] = useState(0);
  const [live, setLive] = useState(undefined);
  const [state, setState] = useState(undefined);
  const [conn, setConn] = useState('connecting');
  const [error, setError] = useState(undefined);
  const path = `/api/sessions/${encodeURIComponent(id)}`;

  useEffect(() => {
    let stateTimer;
    const refreshState = () => {
      clearTimeout(stateTimer);
      stateTimer = setTimeout(
        () =>
          api(path).then(
            (s) => setState(s.state),
            (e) => setError(e.message),
          ),
        150,
      );
    };
    refreshState();
    const source = new EventSource(`${path}/live`);
    source.onopen = () => setConn('live');
    source.onerror = () => setConn((c) => (c === 'ended' ? c : 'reconnecting'));
    source.addEventListener('item', (e) => {
      const item = JSON.parse(e.data);
      if (item.kind === 'delta') {
        setLive({ turn: item.turn, step: item.step, attempt: item.attempt, text: item.text });
        return;
      }
      if (item.kind !== 'event') return;
      const ev = item.event;
      log.current.push(ev);
      if (['assistant/message', 'step/end', 'turn/end'].includes(ev.type)) setLive(undefined);
      setVersion((v) => v + 1);
      refreshState();
    });
    source.addEventListener('end', () => {
      source.close();
      setConn('ended');
      refreshState();
    });
    source.addEventListener('failure', (e) => {
      source.close();
      setConn('ended');
      setError(JSON.parse(e.data).error);
    });
    return () => {
      clearTimeout(stateTimer);
      source.close();
    };
  }, [id]);

  const folded = useMemo(() => foldLog(log.current), [version]);
  const pendingApprovals = new Set((state?.approvals ?? []).map((a) => a.callId));
  const canWrite = role === 'full' && conn !== 'ended';

  return html`
    <section class="session">
      <div class="bar">
        <h1 data-testid="session-id">${id}</h1>
        <span class=${`status ${state?.status ?? ''}`} data-testid="session-status"
          >${state?.status ?? '…'}</span
        >
        <span class="muted">turn ${state?.turn ?? 0} · step ${state?.step ?? 0}</span>
        <span class=${`conn ${conn}`} data-testid="connection">${conn}</span>
        ${
          canWrite &&
          state?.status === 'running' &&
          html`<button
            class="ghost"
            onClick=${() => post(`${path}/cancel`, {}).catch((e) => setError(e.message))}
          >
            Cancel turn
          </button>`
        }
      </div>
      ${error && html`<p class="error" data-testid="error">${error}</p>`}
      <div class="columns">
        <div class="transcript" data-testid="transcript">
          ${folded.entries.length === 0 && html`<p class="muted">No events yet.</p>`}
          ${folded.entries.map(
            (entry) =>
              html`<${Entry}
                key=${entry.seq}
                entry=${entry}
                calls=${folded.calls}
                pending=${pendingApprovals}
                canWrite=${canWrite}
                path=${path}
                onError=${setError}
              />`,
          )}
          ${
            live &&
            html`<div class="msg assistant streaming" data-testid="live-text">
              <div class="who">
                ${`assistant · turn ${live.turn} step ${live.step}${live.attempt > 1 ? ` · attempt ${live.attempt}` : ''} · writing…`}
              </div>
              <div class="text">${live.text}<span class="caret"></span></div>
            </div>`
          }
        </div>
        <aside>
          ${
            (state?.approvals?.length ?? 0) > 0 &&
            html`<div class="panel attention" data-testid="approvals">
              <h2>Waiting for approval</h2>
              ${state.approvals.map((a) => html`<div class="pending-call">${a.name} <code>${a.callId}</code></div>`)}
            </div>`
          }
          <${Lanes} state=${state} />
          <${Composer} path=${path} canWrite=${canWrite} role=${role} onError=${setError} />
          <${Timeline} turns=${folded.turns} />
        </aside>
      </div>
    </section>
  `;
}

function Entry({ entry, calls, pending, canWrite, path, onError }) {
  switch (entry.kind) {
    case 'turn':
      return html`<div class="divider">turn ${entry.turn}</div>`;
    case 'turn-end':
      return html`<div class="divider end">turn ${entry.turn} ended: ${endLabel(entry.reason)}</div>`;
    case 'disposed':
      return html`<div class="divider end">session disposed</div>`;
    case 'compaction':
      return html`<details class="card context" data-testid="compaction">
        <summary>
          compacted through seq ${entry.data.throughSeq}: ${entry.data.tokensBefore} →
          ${entry.data.tokensAfter} tokens · ${entry.data.model}
        </summary>
        <div class="text">${entry.data.summary}</div>
      </details>`;
    case 'forked':
      return html`<div class="divider forked" data-testid="forked">
        forked from <a href=${`#/s/${encodeURIComponent(entry.data.from)}`}>${entry.data.from}</a>
        ${` at seq ${entry.data.throughSeq} · ${entry.data.messages.length} messages`}
      </div>`;
    case 'user': {
      const m = entry.message;
      if (m.source.kind === 'user')
        return html`<div class="msg user" data-id=${m.id}>
          <div class="who">you · <code>${m.id}</code></div>
          <div class="text">${textOf(m.content)}</div>
        </div>`;
      return html`<div class="card context" data-id=${m.id}>
        <div class="source">context · ${sourceLabel(m.source)}</div>
        <div class="text">${textOf(m.content)}</div>
      </div>`;
    }
    case 'assistant':
      return html`<div class="msg assistant">
        <div class="who">
          ${entry.forked ? 'assistant · before the fork' : `assistant · turn ${entry.turn} step ${entry.step}`}
        </div>
        <div class="text">${textOf(entry.message.content)}</div>
      </div>`;
    case 'tool':
      return html`<${ToolCall}
        call=${calls.get(entry.callId)}
        waiting=${pending.has(entry.callId)}
        canWrite=${canWrite}
        path=${path}
        onError=${onError}
      />`;
    default:
      return null;
  }
}

const decisionLabel = (d) =>
  `${d.decision === 'approve' ? 'approved' : 'denied'} by ${d.by}${d.reason ? `: ${d.reason}` : ''}`;

const resultText = (r) => (r.error ? `${r.error.code}: ${r.error.message}\n` : '') + textOf(r.content);

function ToolCall({ call, waiting, canWrite, path, onError }) {
  const [busy, setBusy] = useState(false);
  const decide = (decision) => {
    setBusy(true);
    post(`${path}/approve`, { callId: call.callId, decision })
      .catch((e) => onError(e.message))
      .finally(() => setBusy(false));
  };
  const r = call.result;
  return html`<div class="card tool" data-testid=${`tool-${call.callId}`}>
    <div class="source">tool · <b>${call.name}</b> <code>${call.callId}</code></div>
    <pre class="args">${call.arguments ? JSON.stringify(call.arguments, null, 2) : call.rawArguments}</pre>
    ${
      call.approval &&
      html`<div class="approval" data-testid=${`approval-${call.callId}`}>
        ${
          call.decision
            ? html`<span class=${`decision ${call.decision.decision}`}>${decisionLabel(call.decision)}</span>`
            : waiting
              ? html`<span class="ask">needs approval</span> ${
                    canWrite &&
                    html`<button disabled=${busy} onClick=${() => decide('approve')}>Approve</button>
                      <button class="ghost" disabled=${busy} onClick=${() => decide('deny')}>Deny</button>`
                  }`
              : html`<span class="ask">approval requested</span>`
        }
      </div>`
    }
    ${
      r
        ? html`<pre class=${`result ${r.error ? 'failed' : ''}`} data-testid="tool-result">
${resultText(r)}</pre>`
        : html`<div class="muted">
            ${call.approval && !call.decision ? 'waiting' : call.dispatched ? 'running…' : 'queued'}
          </div>`
    }
  </div>`;
}

function Lanes({ state }) {
  const lane = (name, ids) =>
    html`<div class="lane">
      <div class="lane-name">${name}</div>
      ${
        ids.length === 0
          ? html`<span class="muted">empty</span>`
          : ids.map((id) => html`<code class="pending-id">${id}</code>`)
      }
    </div>`;
  return html`<div class="panel" data-testid="lanes">
    <h2>Inbox</h2>
    ${
      state
        ? html`${lane('next turn (follow-ups)', state.pending.nextTurn)}
          ${lane('next step (steers, context)', state.pending.nextStep)}`
        : html`<span class="muted">…</span>`
    }
  </div>`;
}

const LANE_HELP = {
  followup: 'queued: its own turn, after the running one',
  steer: 'enters at the next step boundary and wakes the session',
  inject: 'context for the next step; does not wake the session',
};

function Composer({ path, canWrite, role, onError }) {
  const [lane, setLane] = useState('followup');
  const [text, setText] = useState('');
  const [sent, setSent] = useState(undefined);
  const [busy, setBusy] = useState(false);
  if (role === 'read')
    return html`<div class="panel">
      <h2>Send</h2>
      <p class="muted">This token can only watch.</p>
    </div>`;
  const send = (e) => {
    e.preventDefault();
    if (!text.trim()) return;
    setBusy(true);
    post(`${path}/messages`, { lane, content: text })
      .then((receipt) => {
        setSent(
          `${receipt.lane} ${receipt.messageId} ${receipt.duplicate ? 'was already delivered' : 'delivered'}`,
        );
        setText('');
      })
      .catch((err) => onError(err.message))
      .finally(() => setBusy(false));
  };
  return html`<form class="panel composer" onSubmit=${send} data-testid="composer">
    <h2>Send</h2>
    <div class="lanes-pick">
      ${['followup', 'steer', 'inject'].map(
        (l) =>
          html`<label title=${LANE_HELP[l]}>
            <input type="radio" name="lane" value=${l} checked=${lane === l} onChange=${() => setLane(l)} />
            ${l}
          </label>`,
      )}
    </div>
    <p class="muted small">${LANE_HELP[lane]}</p>
    <textarea
      rows="3"
      placeholder="message"
      value=${text}
      onInput=${(e) => setText(e.currentTarget.value)}
      disabled=${!canWrite}
      data-testid="composer-text"
    ></textarea>
    <button type="submit" disabled=${!canWrite || busy}>Send ${lane}</button>
    ${sent && html`<p class="muted small" data-testid="sent">${sent}</p>`}
  </form>`;
}

function Timeline({ turns }) {
  return html`<div class="panel" data-testid="timeline">
    <h2>Turns</h2>
    ${turns.length === 0 && html`<span class="muted">none yet</span>`}
    <ol>
      ${turns.map(
        (t) =>
          html`<li key=${t.turn}>
            turn ${t.turn}: ${t.steps.length} step${t.steps.length === 1 ? '' : 's'}
            ${t.steps.map(
              (s) =>
                html`<span class=${`step ${s.ended ? 'done' : 'open'}`} title=${`${s.tools} tool calls`}
                  >${s.step}</span
                >`,
            )}
            <span class="muted"> ${t.end ? endLabel(t.end) : 'running'}</span>
          </li>`,
      )}
    </ol>
  </div>`;
}

const root = document.getElementById('app');
root.replaceChildren(); // the static "loading…" placeholder is not Preact's to diff
render(html`<${App} />`, root);
