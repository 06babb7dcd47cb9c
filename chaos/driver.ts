/**
 * A session driven like a user drives it: one follow-up per turn, waiting for each turn to end before the next,
 * through the `deliver` update with `wait` (SessionClient.ask) or a plain signal followed by polling its state.
 * Every message has its own id, so a call that failed is sent again with the same id until it is acknowledged (the
 * session ignores ids it has seen, rule 4); what failed and why is kept for the report. Not deterministic.
 */
import type { SessionClient } from '../src/client';
import type { ScriptedStep } from '../src/domain/wire';
import { eventually, sleep } from './infra';
import type { Rng } from './rng';

/** Something a scenario wants done right before a given turn is sent (e.g. a kill at a chosen moment). */
export type BeforeSend = (driver: SessionDriver, send: () => Promise<void>) => Promise<void>;

export interface DriverOptions {
  id: string;
  rng: Rng;
  sessions: SessionClient;
  /** Whether to send another turn after `turnsSent` turns. */
  more(driver: SessionDriver): boolean;
  /** Pause between turns. */
  thinkMs: [number, number];
  /** Share of turns sent through `deliver` with `wait` (the rest: a signal, then polling `state`). */
  askShare: number;
  /** Longest wait for one turn, and for one message to be acknowledged, before the session counts as stuck. */
  turnTimeoutMs: number;
  /** What to add to the report when the session is stuck (e.g. its pending activities). */
  diagnose?: (id: string) => Promise<string>;
}

export class SessionDriver {
  readonly sentIds: string[] = [];
  turnsSent = 0;
  /** Set when a turn did not end in time (a broken promise). */
  stuck: string | undefined;
  /** Errors callers saw before a message was acknowledged (then it was sent again with its id). */
  readonly refusals: string[] = [];
  /** Turn end reasons as `ask` reported them. */
  readonly askOutcomes: string[] = [];
  /** How long each turn took, from sending its message to seeing the session idle after it. */
  readonly turnMs: number[] = [];
  /** What the driver is doing: pausing before its next turn, or sending and waiting for a turn. */
  phase: 'thinking' | 'turn' | 'done' = 'thinking';
  private hook: BeforeSend | undefined;

  constructor(readonly opts: DriverOptions) {}

  get id(): string {
    return this.opts.id;
  }

  /** Runs `hook` before the next turn is sent (instead of sending it directly); it must call `send`. */
  beforeNextSend(hook: BeforeSend): void {
    this.hook = hook;
  }

  get hasHook(): boolean {
    return this.hook !== undefined;
  }

  /** Drops a hook that has not run yet; false if it already ran (or none was set). */
  clearHook(hook: BeforeSend): boolean {
    if (this.hook !== hook) return false;
    this.hook = undefined;
    return true;
  }

  async run(): Promise<void> {
    while (this.opts.more(this) && !this.stuck) {
      this.phase = 'thinking';
      await sleep(this.opts.rng.int(...this.opts.thinkMs));
      this.phase = 'turn';
      await this.turn(this.opts.rng.chance(this.opts.askShare) ? 'ask' : 'signal');
    }
    this.phase = 'done';
  }

  /** Sends the last follow-up that makes sure nothing stays parked in the inbox, and waits for its turn. */
  async finish(): Promise<void> {
    if (!this.stuck) await this.turn('signal');
  }

  private async turn(path: 'ask' | 'signal'): Promise<void> {
    const n = this.turnsSent + 1;
    const id = `${this.id}:t${n}`;
    const send = async () => {
      if (path === 'ask') {
        const receipt = await this.acknowledged(id, () =>
          this.opts.sessions.ask(
            this.id,
            { id, content: `turn ${n}` },
            { timeoutMs: this.opts.turnTimeoutMs },
          ),
        );
        if (receipt) {
          const r = receipt.outcome.status === 'ended' ? receipt.outcome.reason : undefined;
          this.askOutcomes.push(r ? (r.kind === 'error' ? `error:${r.error.code}` : r.kind) : 'discarded');
        }
      } else {
        await this.acknowledged(id, () => this.opts.sessions.followup(this.id, { id, content: `turn ${n}` }));
      }
    };
    this.sentIds.push(id);
    this.turnsSent = n;
    const sentAt = Date.now();
    const hook = this.hook;
    this.hook = undefined;
    if (hook) await hook(this, send);
    else await send();
    if (this.stuck) return;
    try {
      await eventually(
        () => this.opts.sessions.state(this.id),
        (s) => s.turn >= n && s.status === 'idle',
        `turn ${n} of ${this.id} to end`,
        this.opts.turnTimeoutMs,
        500,
      );
      this.turnMs.push(Date.now() - sentAt);
    } catch (err) {
      this.stuck = (err as Error).message;
      if (this.opts.diagnose)
        this.stuck += `; ${await this.opts.diagnose(this.id).catch((e: Error) => `(no diagnosis: ${e.message})`)}`;
    }
  }

  /**
   * Calls `attempt` until it succeeds (same message id every time), keeping what failed; undefined if it did not
   * succeed within the turn timeout (a call still hanging then is left behind).
   */
  private async acknowledged<T>(id: string, attempt: () => Promise<T>): Promise<T | undefined> {
    const deadline = Date.now() + this.opts.turnTimeoutMs;
    for (let failures = 0; ; failures++) {
      try {
        let timer: NodeJS.Timeout | undefined;
        const timeout = new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`no answer within ${this.opts.turnTimeoutMs} ms`)),
            Math.max(0, deadline - Date.now()),
          );
        });
        try {
          return await Promise.race([attempt(), timeout]);
        } finally {
          clearTimeout(timer);
        }
      } catch (err) {
        this.refusals.push(`${(err as Error).name}: ${(err as Error).message}`.slice(0, 300));
        if (Date.now() > deadline) {
          this.stuck = `message ${id} not acknowledged within ${this.opts.turnTimeoutMs} ms: ${(err as Error).message}`;
          return undefined;
        }
        await sleep(Math.min(5_000, 250 * 2 ** failures));
      }
    }
  }
}

/**
 * A multi-step script for `turns` turns: each turn calls tools in parallel (a sleep that defers context, contexts
 * from emit_context, a self-inject, an echo), sometimes a second tool step, then answers. Delays give kills a
 * model call or a tool to land in.
 */
export function crashScript(rng: Rng, turns: number, delay: [number, number]): ScriptedStep[] {
  const steps: ScriptedStep[] = [];
  for (let n = 1; n <= turns; n++) {
    const calls: { name: string; args: Record<string, unknown> }[] = [
      { name: 'sleep', args: { ms: rng.int(...delay), context: `context of the sleep of turn ${n}` } },
    ];
    if (rng.chance(0.6))
      calls.push({
        name: 'emit_context',
        args: {
          contexts: [{ content: `first context of turn ${n}` }, { content: `second context of turn ${n}` }],
        },
      });
    if (rng.chance(0.3)) calls.push({ name: 'inject_self', args: { content: `self-inject of turn ${n}` } });
    if (rng.chance(0.3)) calls.push({ name: 'echo', args: { text: `echo of turn ${n}` } });
    steps.push({
      text: `turn ${n}: calling ${calls.length} tools`,
      toolCalls: calls,
      delayMs: rng.int(...delay),
    });
    if (rng.chance(0.4))
      steps.push({
        toolCalls: [{ name: 'sleep', args: { ms: rng.int(...delay) } }],
        delayMs: rng.int(...delay),
      });
    steps.push({ text: `turn ${n} done`, delayMs: rng.int(...delay) });
  }
  return steps;
}
