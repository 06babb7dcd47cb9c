/**
 * A fake OpenAI-compatible provider that enforces limits, for tests and the bench: real HTTP on 127.0.0.1 (port 0),
 * `POST …/chat/completions` answered as the real API streams (SSE chunks: role, text deltas, finish, usage, [DONE]).
 * It admits at most `requestsPerWindow` requests (and, when set, `tokensPerWindow` prompt tokens, counted as body
 * characters / 4) in any sliding window of `windowMs`; a request past either cap gets 429 with `Retry-After` (whole
 * seconds, rounded up, until the oldest admitted request leaves the window) and an OpenAI error body. `failNext(n, status)` makes the next n admitted
 * requests fail with that status (5xx) instead of answering. Every admitted request's time is kept, so a test can
 * check the rate the provider saw; the answer echoes the last user text.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface LimitedProviderOptions {
  /** Length of the rate window (default 60 s; tests use a few seconds). */
  windowMs?: number;
  /** Requests admitted per window. */
  requestsPerWindow: number;
  /** Prompt tokens admitted per window (characters / 4), unlimited when unset. */
  tokensPerWindow?: number;
  /** Pause between streamed chunks (default 20 ms). */
  chunkDelayMs?: number;
}

export class LimitedProvider {
  /** Epoch ms of every admitted request, in order. */
  readonly admitted: number[] = [];
  /** Requests answered 429. */
  limited = 0;
  /** Requests failed on demand. */
  failed = 0;
  /** Admitted requests still in the window. */
  private readonly recent: { at: number; tokens: number }[] = [];
  private failures: number[] = [];

  private constructor(
    private readonly server: Server,
    private readonly opts: Required<Omit<LimitedProviderOptions, 'tokensPerWindow'>> &
      Pick<LimitedProviderOptions, 'tokensPerWindow'>,
  ) {}

  static async start(options: LimitedProviderOptions): Promise<LimitedProvider> {
    const server = createServer((req, res) => void self.handle(req, res));
    const self = new LimitedProvider(server, { windowMs: 60_000, chunkDelayMs: 20, ...options });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return self;
  }

  /** Base URL the OpenAI-compatible provider takes (…/v1). */
  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }

  get windowMs(): number {
    return this.opts.windowMs;
  }

  /** The next `n` admitted requests fail with `status` (default 503). */
  failNext(n: number, status = 503): void {
    this.failures.push(...Array<number>(n).fill(status));
  }

  /** The most requests admitted in any `windowMs`-long span (sliding), as the provider saw them. */
  maxInAnySpan(spanMs = this.opts.windowMs): number {
    let most = 0;
    for (let i = 0, j = 0; i < this.admitted.length; i++) {
      while (this.admitted[i]! - this.admitted[j]! >= spanMs) j++;
      most = Math.max(most, i - j + 1);
    }
    return most;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let raw = '';
    for await (const chunk of req) raw += String(chunk);
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ error: { message: `no route ${req.url ?? ''}`, type: 'invalid_request_error' } }),
      );
      return;
    }
    const body = JSON.parse(raw || '{}') as { messages?: { role: string; content: unknown }[] };
    const tokens = Math.ceil(raw.length / 4);
    const now = Date.now();
    // A sliding window: what was admitted in the last windowMs counts.
    while (this.recent.length && this.recent[0]!.at <= now - this.opts.windowMs) this.recent.shift();
    const tokensInWindow = this.recent.reduce((sum, r) => sum + r.tokens, 0);
    const overTokens =
      this.opts.tokensPerWindow !== undefined &&
      this.recent.length > 0 &&
      tokensInWindow + tokens > this.opts.tokensPerWindow;
    if (this.recent.length >= this.opts.requestsPerWindow || overTokens) {
      this.limited += 1;
      const left = (this.recent[0]?.at ?? now) + this.opts.windowMs - now;
      res.writeHead(429, {
        'content-type': 'application/json',
        'retry-after': String(Math.max(1, Math.ceil(left / 1000))),
      });
      res.end(
        JSON.stringify({
          error: {
            message: `Rate limit reached: ${overTokens ? `${this.opts.tokensPerWindow} tokens` : `${this.opts.requestsPerWindow} requests`} per ${this.opts.windowMs} ms`,
            type: 'requests',
            code: 'rate_limit_exceeded',
          },
        }),
      );
      return;
    }
    this.recent.push({ at: now, tokens });
    this.admitted.push(now);
    const failure = this.failures.shift();
    if (failure !== undefined) {
      this.failed += 1;
      res.writeHead(failure, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `error ${failure}`, type: 'server_error', code: null } }));
      return;
    }
    const lastUser = [...(body.messages ?? [])].reverse().find((m) => m.role === 'user');
    const text = `ok: ${typeof lastUser?.content === 'string' ? lastUser.content : JSON.stringify(lastUser?.content ?? '')}`;
    await this.stream(res, text, tokens);
  }

  private async stream(res: ServerResponse, text: string, promptTokens: number): Promise<void> {
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
    res.flushHeaders();
    const base = {
      id: 'chatcmpl-limited',
      object: 'chat.completion.chunk',
      created: 1700000000,
      model: 'limited',
    };
    const sse = (data: unknown) => `data: ${JSON.stringify(data)}\n\n`;
    const chunk = (delta: unknown, finish: string | null = null) =>
      sse({ ...base, choices: [{ index: 0, delta, finish_reason: finish }] });
    let closed = false;
    res.on('close', () => (closed = true));
    res.write(chunk({ role: 'assistant', content: '' }));
    const words = text.match(/\S+\s*/g) ?? [text];
    for (const word of words) {
      if (closed) return;
      await new Promise((r) => setTimeout(r, this.opts.chunkDelayMs));
      res.write(chunk({ content: word }));
    }
    res.write(chunk({}, 'stop'));
    const output = words.length;
    res.write(
      sse({
        ...base,
        choices: [],
        usage: {
          prompt_tokens: promptTokens,
          completion_tokens: output,
          total_tokens: promptTokens + output,
        },
      }),
    );
    res.end('data: [DONE]\n\n');
  }
}
