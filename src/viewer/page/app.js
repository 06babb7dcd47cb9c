// The session viewer's page (`agent-sessions ui`): Preact + htm, served by src/viewer/server.ts from our own
// node_modules. Two views, by the address's hash: `#/` lists sessions (visibility), `#/s/<id>` shows one session live
// from /api/sessions/<id>/live (Server-Sent Events: the log, then new events and the running step's text).
import { h, render } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import htm from 'htm';
import { foldLog, sourceLabel, textOf, userLabel, viewStatus } from './log.js';

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
  const [me, setMe] = useState(undefined);
  const role = me?.role;
  useEffect(() => {
    api('/api/me').then(setMe, () => setMe({ role: 'none' }));
  }, []);
  return html`
    <header class="top">
      <a href="#/" class="brand">agent-sessions</a>
      ${route.view === 'session' && html`<span class="crumb">/ ${route.id}</span>`}
      <span class="role" data-testid="role"
        >${role === 'read' ? 'read-only' : role === 'full' ? 'full access' : ''}${me?.tenant ? ` · tenant ${me.tenant}` : ''}</span
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
                  <th>tenant</th>
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
                      <td>${s.tenant ?? ''}</td>
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
  useFollowBottom([version, live?.text]);
  // A call the log shows decided is not waiting, whatever the last state answer said (it can lag the log).
  const waiting = (state?.approvals ?? []).filter((a) => !folded.calls.get(a.callId)?.decision);
  const pendingApprovals = new Set(waiting.map((a) => a.callId));
  const canWrite = role === 'full' && conn !== 'ended';
  const status = viewStatus(state, folded);

  return html`
    <section class="session">
      <div class="bar">
        <h1 data-testid="session-id">${id}</h1>
        <span class=${`status ${status ?? ''}`} data-testid="session-status">${status ?? '…'}</span>
        <span class="muted">turn ${state?.turn ?? 0} · step ${state?.step ?? 0}</span>
        <span class=${`conn ${conn}`} data-testid="connection">${conn}</span>
        ${
          canWrite &&
          status === 'running' &&
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
            waiting.length > 0 &&
            html`<div class="panel attention" data-testid="approvals">
              <h2>Waiting for approval</h2>
              ${waiting.map((a) => html`<div class="pending-call">${a.name} <code>${a.callId}</code></div>`)}
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

/**
 * Keeps the newest entry in view: after each change the page scrolls to its end, unless the reader has scrolled up
 * (more than 80 px from the end) to read; coming back to the end follows again.
 */
function useFollowBottom(deps) {
  const follow = useRef(true);
  useEffect(() => {
    const atEnd = () => window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 80;
    const on = () => (follow.current = atEnd());
    window.addEventListener('scroll', on, { passive: true });
    return () => window.removeEventListener('scroll', on);
  }, []);
  useEffect(() => {
    if (follow.current) window.scrollTo(0, document.documentElement.scrollHeight);
  }, deps);
}

function Entry({ entry, calls, pending, canWrite, path, onError }) {
  switch (entry.kind) {
    case 'turn':
      return html`<div class="divider">turn ${entry.turn}</div>`;
    case 'turn-end':
      return html`<div class="divider end">turn ${entry.turn} ended: ${entry.text}</div>`;
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
          <div class="who">${userLabel(entry)}<code>${m.id}</code></div>
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
            <span class="muted"> ${t.end ?? 'running'}</span>
          </li>`,
      )}
    </ol>
  </div>`;
}

const root = document.getElementById('app');
root.replaceChildren(); // the static "loading…" placeholder is not Preact's to diff
render(html`<${App} />`, root);
