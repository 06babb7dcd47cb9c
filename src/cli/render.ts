/**
 * Renders a session's watch items as a plain-ANSI transcript (used by `dev` and `watch`): user messages as bubbles,
 * non-user sources as labelled context cards, tool calls and results, turn and step boundaries, queued and discarded
 * inbox items. Tracks what the session is doing (idle, model call, tools) for the chat's prompt and spinner. Pure:
 * it returns lines; the caller writes them.
 */
import type { StreamItem, TextDelta } from '../client';
import type { InboxTarget } from '../domain/events';
import { textOf, type UserMessage } from '../domain/messages';
import { turnEndText } from '../domain/turnEnd';
import { sourceLabel } from './args';

export interface RenderOptions {
  /** Use ANSI colours (default false). */
  color?: boolean;
  /** Terminal width in columns (default 80). */
  width?: number;
}

export type Activity =
  | { kind: 'idle' }
  /** `text`: the tail of what the model has written so far in this step (when the watcher streams). */
  | { kind: 'model'; text?: string }
  | { kind: 'tools'; names: string[] }
  | { kind: 'approval'; calls: { callId: string; name: string }[] }
  | { kind: 'turn' };

const CODES = { dim: 2, bold: 1, cyan: 36, yellow: 33, green: 32, magenta: 35, red: 31, blue: 34 } as const;
type Style = keyof typeof CODES;

export class TranscriptRenderer {
  private readonly color: boolean;
  private readonly width: number;
  private turnOpen = false;
  private modelRunning = false;
  private disposed = false;
  private readonly tools = new Map<string, string>();
  /** The text the model has written so far in the running step (from `delta` items), and whether it is on screen. */
  private live: { turn: number; step: number; text: string; inline: boolean } | undefined;
  /** Calls waiting for a decision: callId → tool name. */
  private readonly approvals = new Map<string, string>();
  /** Which inbox list each message id was inserted into (followup = next-turn, steer/inject = next-step). */
  private readonly targets = new Map<string, InboxTarget>();

  constructor(opts: RenderOptions = {}) {
    this.color = opts.color ?? false;
    this.width = Math.max(30, Math.min(opts.width ?? 80, 120));
  }

  /** What the session is doing now, as far as the items seen so far tell. */
  get activity(): Activity {
    if (!this.turnOpen) return { kind: 'idle' };
    if (this.approvals.size)
      return { kind: 'approval', calls: [...this.approvals].map(([callId, name]) => ({ callId, name })) };
    if (this.tools.size) return { kind: 'tools', names: [...new Set(this.tools.values())] };
    if (!this.modelRunning) return { kind: 'turn' };
    const text = this.live?.text.replace(/\s+/g, ' ').trim();
    return text
      ? { kind: 'model', text: text.length > 60 ? `…${text.slice(-59)}` : text }
      : { kind: 'model' };
  }

  get isDisposed(): boolean {
    return this.disposed;
  }

  /**
   * What to write for a delta without a line end (`watch --stream`): `◆ ` and the text at a step's first delta, then
   * what is new; a retried attempt starts a new line. The step's `assistant/message` then only ends the line.
   */
  renderDelta(d: TextDelta): string {
    const same = this.live?.turn === d.turn && this.live.step === d.step && !d.reset;
    const wasInline = this.live?.inline === true;
    this.live = { turn: d.turn, step: d.step, text: d.text, inline: true };
    if (same && wasInline) return this.paint(d.delta, 'green');
    const head = d.reset ? `${wasInline ? '\n' : ''}◆ (attempt ${d.attempt}) ` : `${wasInline ? '\n' : ''}◆ `;
    return this.paint(head + d.text, 'green');
  }

  /** Notes a delta without writing it (the chat shows the tail in its prompt). */
  noteDelta(d: TextDelta): void {
    this.live = { turn: d.turn, step: d.step, text: d.text, inline: false };
  }

  /** The lines to print for one item (possibly none); a line the streamed text left open is ended first. */
  render(item: StreamItem): string[] {
    if (item.kind === 'delta') {
      this.noteDelta(item);
      return [];
    }
    const live = this.live;
    if (live?.inline && item.kind === 'event' && item.event.type === 'assistant/message') {
      const { data } = item.event;
      // Streamed in full already: only end its line.
      if (data.turn === live.turn && data.step === live.step && textOf(data.message.content) === live.text) {
        this.live = undefined;
        this.modelRunning = false;
        return [data.interrupted ? this.paint(' (interrupted)', 'green') : ''];
      }
    }
    const lines = this.renderItem(item);
    if (!live?.inline || lines.length === 0) return lines;
    live.inline = false;
    return ['', ...lines];
  }

  private renderItem(item: Exclude<StreamItem, TextDelta>): string[] {
    switch (item.kind) {
      case 'inserted':
        return this.inserted(item.target, item.message);
      case 'claimed':
        return [];
      case 'discarded':
        return item.messages.length
          ? [
              this.meta(
                `discarded ${item.messages.length} pending (${item.target}): ${item.messages.map((m) => quote(m)).join(', ')}`,
              ),
            ]
          : [];
      case 'event':
        return this.event(item.event);
    }
  }

  private event(event: Extract<StreamItem, { kind: 'event' }>['event']): string[] {
    switch (event.type) {
      case 'agent/inbox/spliced':
        return [];
      case 'turn/start':
        this.turnOpen = true;
        return ['', this.rule(`turn ${event.data.turn}`)];
      case 'turn/end':
        this.turnOpen = false;
        this.modelRunning = false;
        this.tools.clear();
        return [
          this.rule(
            `turn ${event.data.turn} · ${turnEndText(event.data.reason)}`,
            event.data.reason.kind === 'completed' ? 'dim' : 'red',
          ),
        ];
      case 'step/start':
        this.modelRunning = true;
        return event.data.step > 1 ? [this.meta(`step ${event.data.turn}.${event.data.step}`)] : [];
      case 'step/end':
        this.modelRunning = false;
        this.tools.clear();
        this.approvals.clear();
        return [];
      case 'user/message':
        return this.message(event.data.message);
      case 'assistant/message': {
        this.modelRunning = false;
        const text = textOf(event.data.message.content);
        this.live = undefined;
        if (!text && !event.data.interrupted) return [];
        const suffix = event.data.interrupted ? ' (interrupted)' : '';
        return this.block('◆ ', text + suffix, 'green');
      }
      case 'tool/call':
        this.tools.set(event.data.callId, event.data.name);
        return [
          this.paint(
            `  ⚙ ${event.data.name} ${clip(JSON.stringify(event.data.arguments), this.width - 8 - event.data.name.length)}`,
            'magenta',
          ),
        ];
      case 'tool/result': {
        this.tools.delete(event.data.callId);
        if (event.data.error)
          return [
            this.paint(
              `    ✗ ${event.data.error.code}: ${clip(event.data.error.message, this.width - 12)}`,
              'red',
            ),
          ];
        const text = textOf(event.data.content).replace(/\s+/g, ' ');
        return [this.paint(`    ↳ ${clip(text, this.width - 6)}`, 'magenta')];
      }
      case 'tool/approval-requested': {
        this.approvals.set(event.data.callId, event.data.name);
        const head = `  ⏸ ${event.data.name} needs approval (call ${event.data.callId}) `;
        return [
          this.paint(
            head + clip(JSON.stringify(event.data.arguments), Math.max(10, this.width - head.length)),
            'yellow',
          ),
        ];
      }
      case 'tool/approval-resolved': {
        this.approvals.delete(event.data.callId);
        const { callId, decision, by, reason } = event.data;
        if (decision === 'approve') return [this.paint(`    ✓ approved (call ${callId})`, 'yellow')];
        const why =
          by === 'timeout' ? 'no decision in time' : by === 'cancel' ? 'the turn was cancelled' : '';
        const text = `    ✗ denied (call ${callId})${reason ? `: ${reason}` : why ? `: ${why}` : ''}`;
        return [this.paint(clip(text, this.width), 'red')];
      }
      case 'budget/exceeded': {
        const { used, limits, over, waits } = event.data;
        const what = over.map((k) => `${k} ${used[k]} of ${limits[k]}`).join(', ');
        const then = waits ? 'waits for `agent-sessions budget <id> extend|deny`' : 'the turn ends';
        return [
          this.paint(
            clip(`  ⏸ budget reached before step ${event.data.step}: ${what}; ${then}`, this.width),
            'yellow',
          ),
        ];
      }
      case 'budget/resolved': {
        const { decision, by, reason, limits } = event.data;
        if (decision === 'extend')
          return [this.paint(clip(`    ✓ budget extended: ${JSON.stringify(limits)}`, this.width), 'yellow')];
        const why = reason ?? (by === 'cancel' ? 'the turn was cancelled' : '');
        return [this.paint(clip(`    ✗ budget not extended${why ? `: ${why}` : ''}`, this.width), 'red')];
      }
      case 'session/forked': {
        const { from, throughSeq, messages } = event.data;
        return [
          this.rule(`forked from ${from} at seq ${throughSeq} (${messages.length} messages)`, 'cyan'),
          ...messages.flatMap((m) =>
            m.role === 'tool' ? [] : this.block(m.role === 'user' ? '» ' : '◆ ', textOf(m.content), 'dim'),
          ),
        ];
      }
      case 'compaction/summary': {
        const { throughSeq, tokensBefore, tokensAfter, model, summary } = event.data;
        return [
          this.rule(
            `compacted through seq ${throughSeq}: ${tokensBefore} → ${tokensAfter} tokens (${model})`,
            'cyan',
          ),
          ...this.block('≡ ', summary, 'dim'),
        ];
      }
      case 'subsession/started':
        return [
          this.paint(
            clip(`    ↳ sub-session ${event.data.session} (call ${event.data.callId})`, this.width),
            'cyan',
          ),
        ];
      case 'subsession/ended': {
        const { reason, session } = event.data;
        const how = reason.kind === 'error' ? `error ${reason.error.code}` : reason.kind;
        return [
          this.paint(
            clip(`    ↳ sub-session ${session} ended: ${how}`, this.width),
            reason.kind === 'completed' ? 'cyan' : 'red',
          ),
        ];
      }
      case 'session/disposed':
        this.disposed = true;
        this.turnOpen = false;
        return [this.rule('session disposed', 'red')];
      default:
        return [];
    }
  }

  private inserted(target: InboxTarget, message: UserMessage): string[] {
    this.targets.set(message.id, target);
    const direct = message.source.kind === 'user';
    if (direct && !this.turnOpen) return [];
    const what = direct
      ? target === 'next-turn'
        ? 'followup for the next turn'
        : 'steer for the next step'
      : `context from ${sourceLabel(message.source)}`;
    return [this.meta(`queued ${what}: ${quote(message)}`)];
  }

  private message(message: UserMessage): string[] {
    const text = textOf(message.content);
    if (message.source.kind === 'user') {
      const label = this.targets.get(message.id) === 'next-step' ? 'you · steer' : 'you';
      return this.bubble(label, text);
    }
    return this.card(`context · ${sourceLabel(message.source)}`, text);
  }

  /** A rounded box around the text, labelled in its top border. */
  private bubble(label: string, text: string): string[] {
    const lines = wrap(text, this.width - 6);
    const inner = Math.max(label.length + 4, ...lines.map((l) => l.length + 2));
    const top = `╭─ ${label} ${'─'.repeat(Math.max(0, inner - label.length - 3))}╮`;
    const body = lines.map((l) => `│ ${l.padEnd(inner - 2)} │`);
    return ['', ...[top, ...body, `╰${'─'.repeat(inner)}╯`].map((l) => this.paint(l, 'cyan'))];
  }

  /** An open card with a label line and a left rule: context from a producer other than the user. */
  private card(label: string, text: string): string[] {
    const lines = wrap(text, this.width - 6);
    return [
      this.paint(`┌─ ${label}`, 'yellow'),
      ...lines.map((l) => `${this.paint('│', 'yellow')} ${l}`),
      this.paint('└─', 'yellow'),
    ];
  }

  private block(prefix: string, text: string, style: Style): string[] {
    const lines = wrap(text, this.width - prefix.length - 1);
    return lines.map((l, i) => (i === 0 ? this.paint(prefix, style) + l : ' '.repeat(prefix.length) + l));
  }

  private rule(text: string, style: Style = 'dim'): string {
    const head = `── ${text} `;
    return this.paint(head + '─'.repeat(Math.max(3, Math.min(this.width, 72) - head.length)), style);
  }

  private meta(text: string): string {
    return this.paint(`  · ${clip(text, this.width - 5)}`, 'dim');
  }

  private paint(text: string, style: Style): string {
    return this.color ? `\x1b[${CODES[style]}m${text}\x1b[0m` : text;
  }
}

function quote(message: UserMessage): string {
  return `"${clip(textOf(message.content).replace(/\s+/g, ' '), 60)}"`;
}

function clip(text: string, max: number): string {
  const n = Math.max(8, max);
  return text.length > n ? `${text.slice(0, n - 1)}…` : text;
}

/** Wraps text at word boundaries to `width` columns (long words are cut). */
export function wrap(text: string, width: number): string[] {
  const out: string[] = [];
  for (const para of text.split('\n')) {
    let line = '';
    for (const word of para.split(/\s+/).filter(Boolean)) {
      let w = word;
      while (w.length > width) {
        if (line) out.push(line);
        line = '';
        out.push(w.slice(0, width));
        w = w.slice(width);
      }
      if (!line) {
        line = w;
      } else if (line.length + 1 + w.length <= width) {
        line += ` ${w}`;
      } else {
        out.push(line);
        line = w;
      }
    }
    out.push(line);
  }
  return out.length ? out : [''];
}
