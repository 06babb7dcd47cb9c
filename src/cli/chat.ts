/**
 * The interactive chat of `agent-sessions dev` on one session: reads lines, sends them on the right lane, and
 * renders the session's live transcript from `watch` above the prompt. A plain line is a followup when the session
 * is idle and a steer while a turn runs (or while a message this chat sent has not been claimed yet). The prompt
 * says which, with a spinner while a model call or tools run. Plain ANSI through node:readline.
 */
import { setMaxListeners } from 'node:events';
import readline from 'node:readline';
import type { SessionClient } from '../client';
import type { StreamItem } from '../client';
import type { MessageSource } from '../domain/messages';
import type { Lane } from '../domain/wire';
import { CLI_SOURCE, parseSource } from './args';
import { TranscriptRenderer, type Activity } from './render';

export interface ChatOptions {
  sessions: SessionClient;
  sessionId: string;
  input: NodeJS.ReadStream;
  output: NodeJS.WriteStream;
  color: boolean;
  /** Poll interval of the watch (ms). */
  pollMs?: number;
}

export type ChatEnd = 'quit' | 'disposed' | 'error';

export const CHAT_HELP = [
  'a plain line          followup when idle, steer while a turn runs',
  '/followup TEXT        queue a prompt for its own turn',
  '/steer TEXT           deliver at the next step boundary (wakes the session)',
  '/inject [SOURCE] TEXT context for the next step, no wake (SOURCE like plugin:notes; default plugin:cli)',
  '/approve [CALLID]     let a tool call that waits for approval run (CALLID when several wait)',
  '/deny [CALLID] [WHY]  refuse it; the model reads DENIED and WHY',
  '/cancel [--keep-inbox] abort the running turn (and drop pending messages unless --keep-inbox)',
  '/dispose              end the session for good',
  '/quit                 leave (the session stays; run again to resume)',
];

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

export function runChat(opts: ChatOptions): Promise<ChatEnd> {
  const { sessions, sessionId, input, output } = opts;
  const tty = Boolean(output.isTTY && input.isTTY);
  const renderer = new TranscriptRenderer({ color: opts.color, width: output.columns ?? 100 });
  /** Waking messages this chat sent that the session has not claimed, entered or discarded yet. */
  const awaiting = new Set<string>();
  const abort = new AbortController();
  // SessionClient.watch adds an abort listener per idle poll (removed only on abort): do not warn about it.
  setMaxListeners(0, abort.signal);
  const rl = readline.createInterface({ input, output, terminal: tty, historySize: 200 });
  let frame = 0;
  let ended = false;
  let finish: (end: ChatEnd) => void = () => {};
  const done = new Promise<ChatEnd>((resolve) => {
    finish = (end) => {
      if (ended) return;
      ended = true;
      abort.abort();
      clearInterval(spinner);
      rl.close();
      // Let in-flight calls (the watch's last query, a send) settle before the caller closes the connection: a
      // gRPC retry that fires after the close throws out of a timer. Bounded, in case one hangs.
      const settled = Promise.allSettled([...inflight]);
      const bound = new Promise((r) => setTimeout(r, 10_000).unref());
      void Promise.race([settled, bound]).then(() => resolve(end));
    };
  });

  /** Calls to the session still running (the watch loop, sends, cancel, dispose). */
  const inflight = new Set<Promise<unknown>>();
  const inFlight = <T>(p: Promise<T>): Promise<T> => {
    inflight.add(p);
    void p.finally(() => inflight.delete(p)).catch(() => undefined);
    return p;
  };

  const busy = () => renderer.activity.kind !== 'idle' || awaiting.size > 0;
  const paint = (code: number, text: string) => (opts.color ? `\x1b[${code}m${text}\x1b[0m` : text);
  const promptText = () => {
    if (!busy()) return `${paint(36, 'followup')} › `;
    return `${paint(33, `${SPINNER[frame % SPINNER.length]} ${activityText(renderer.activity)}`)} · ${paint(36, 'steer')} › `;
  };
  const refreshPrompt = () => {
    if (ended) return;
    rl.setPrompt(promptText());
    if (tty) rl.prompt(true);
  };
  const print = (lines: string[], opts: { prompt?: boolean } = {}) => {
    if (ended || !lines.length) return;
    if (tty) output.write('\r\x1b[2K');
    output.write(`${lines.join('\n')}\n`);
    if (opts.prompt !== false) refreshPrompt();
  };
  const spinner = setInterval(() => {
    if (!busy()) return;
    frame++;
    refreshPrompt();
  }, 120);

  const settleAwaiting = (item: StreamItem) => {
    if (item.kind === 'claimed' || item.kind === 'discarded')
      for (const m of item.messages) awaiting.delete(m.id);
    if (item.kind === 'event' && item.event.type === 'user/message')
      awaiting.delete(item.event.data.message.id);
  };

  void inFlight(
    (async () => {
      try {
        for await (const item of sessions.stream(sessionId, {
          signal: abort.signal,
          pollMs: opts.pollMs ?? 150,
        })) {
          settleAwaiting(item);
          print(renderer.render(item));
          refreshPrompt();
        }
        if (renderer.isDisposed) {
          print([`session ${sessionId} is disposed; bye`], { prompt: false });
          finish('disposed');
        }
      } catch (err) {
        if (ended) return;
        print([`! watching session ${sessionId} failed: ${(err as Error).message}`], { prompt: false });
        finish('error');
      }
    })(),
  );

  const send = async (lane: Lane, text: string, source?: MessageSource) => {
    if (!text.trim()) return print([`! /${lane} needs a message`]);
    try {
      const id = await inFlight(sessions[lane](sessionId, source ? { content: text, source } : text));
      if (lane !== 'inject') awaiting.add(id);
      refreshPrompt();
    } catch (err) {
      print([`! ${(err as Error).message}`]);
    }
  };

  const command = async (line: string) => {
    const [head = '', ...rest] = line.split(/\s+/);
    const tail = line.slice(head.length).trim();
    switch (head) {
      case '/quit':
      case '/exit':
        return finish('quit');
      case '/help':
        return print(CHAT_HELP);
      case '/followup':
      case '/steer':
        return send(head.slice(1) as Lane, tail);
      case '/inject': {
        let source: MessageSource = { ...CLI_SOURCE };
        let text = tail;
        const first = rest[0];
        if (first && /^[A-Za-z0-9_.-]+:\S+$/.test(first) && rest.length > 1) {
          try {
            source = parseSource(first);
          } catch (err) {
            return print([`! ${(err as Error).message}`]);
          }
          text = tail.slice(first.length).trim();
        }
        return send('inject', text, source);
      }
      case '/cancel': {
        const extra = rest.filter((a) => a !== '--keep-inbox');
        if (extra.length) return print([`! /cancel takes only --keep-inbox (got "${extra[0]}")`]);
        const keepInbox = rest.includes('--keep-inbox');
        try {
          await inFlight(
            sessions.cancel(sessionId, { cause: { kind: 'user' }, ...(keepInbox ? { keepInbox } : {}) }),
          );
          if (!keepInbox) awaiting.clear();
        } catch (err) {
          print([`! ${(err as Error).message}`]);
        }
        return;
      }
      case '/approve':
      case '/deny': {
        const waiting = renderer.activity.kind === 'approval' ? renderer.activity.calls : [];
        // `/deny [CALLID] [WHY]`: the call named, else the only one waiting (then every word is the reason).
        const named = waiting.find((c) => c.callId === rest[0]);
        const only = !named && waiting.length === 1 ? waiting[0] : undefined;
        const callId = named?.callId ?? only?.callId ?? rest[0];
        if (!callId)
          return print([
            `! ${head} needs a call id (waiting: ${waiting.map((c) => c.callId).join(', ') || 'none'})`,
          ]);
        const reason = (only ? rest : rest.slice(1)).join(' ').trim();
        try {
          await inFlight(
            sessions.approve(
              sessionId,
              callId,
              head === '/approve' ? 'approve' : 'deny',
              reason || undefined,
            ),
          );
        } catch (err) {
          print([`! ${(err as Error).message}`]);
        }
        return;
      }
      case '/dispose':
        try {
          await inFlight(sessions.dispose(sessionId));
          print([`disposing session ${sessionId}…`]);
        } catch (err) {
          print([`! ${(err as Error).message}`]);
        }
        return;
      default:
        return print([`! unknown command ${head} (try /help)`]);
    }
  };

  rl.on('line', (raw) => {
    const line = raw.trim();
    if (tty) {
      // Replace the echoed input line: the transcript shows the message when the session logs it.
      output.write('\x1b[1A\r\x1b[2K');
    }
    if (!line) return refreshPrompt();
    if (line.startsWith('/')) void command(line);
    else void send(busy() ? 'steer' : 'followup', line);
    refreshPrompt();
  });
  rl.on('SIGINT', () => finish('quit'));
  rl.on('close', () => finish('quit'));
  refreshPrompt();
  return done;
}

function activityText(activity: Activity): string {
  switch (activity.kind) {
    case 'model':
      return activity.text ? `◆ ${activity.text}` : 'model';
    case 'tools':
      return `tool ${activity.names.join(', ')}`;
    case 'approval':
      return `waiting for approval: ${activity.calls.map((c) => `${c.name} ${c.callId}`).join(', ')} (/approve or /deny)`;
    case 'turn':
      return 'turn running';
    case 'idle':
      return 'idle';
  }
}
