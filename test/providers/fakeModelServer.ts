/**
 * Local model servers for provider tests: real HTTP on 127.0.0.1 (node:http, port 0), answering streamed
 * completions (SSE) in the OpenAI chat-completions format (`/chat/completions`, used by the `openai` and
 * `openai-compatible` providers) or the Anthropic messages format (`/messages`). Each request takes the next
 * scripted reply: streamed text and tool calls with usage, an HTTP error with headers (Retry-After), or a stream
 * that stops after some chunks and holds until the client goes away, or one that never ends (a text chunk sent again
 * and again until the client goes away). Every request is recorded.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeToolCall {
  id: string;
  name: string;
  /** Raw argument text as the model "writes" it (may be malformed JSON on purpose). */
  arguments: string;
}

export type FakeReply =
  | {
      /** Streamed text, one SSE chunk per element. */
      chunks?: string[];
      toolCalls?: FakeToolCall[];
      usage?: { input: number; output: number };
      /** Pause between chunks. */
      chunkDelayMs?: number;
      /** After the chunks, keep the stream open (no finish) until the client disconnects. */
      hold?: boolean;
      /** After the chunks, send this text chunk again and again, as fast as the client reads, until it goes away. */
      endless?: string;
    }
  | {
      status: number;
      headers?: Record<string, string>;
      body?: unknown;
      /** The error message repeats the Authorization header the request carried (a server that echoes the key). */
      echoAuth?: boolean;
    };

export interface RecordedRequest {
  path: string;
  headers: IncomingMessage['headers'];
  body: Record<string, unknown>;
}

export class FakeModelServer {
  readonly requests: RecordedRequest[] = [];
  /** Chunks written by the reply now streaming (tests wait on it before cancelling). */
  streamed: string[] = [];
  /** Set when a held or endless stream saw its client go away. */
  clientGone = false;
  /** Bytes of SSE written by the reply now streaming. */
  bytesSent = 0;
  private replies: FakeReply[] = [];
  private constructor(
    readonly format: 'openai' | 'anthropic',
    private readonly server: Server,
  ) {}

  static async start(format: 'openai' | 'anthropic'): Promise<FakeModelServer> {
    const server = createServer((req, res) => void self.handle(req, res));
    const self = new FakeModelServer(format, server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return self;
  }

  /** Base URL the SDK providers take (…/v1). */
  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }

  /** Replaces the scripted replies (and forgets earlier requests). */
  script(...replies: FakeReply[]): void {
    this.replies = [...replies];
    this.requests.length = 0;
    this.streamed = [];
    this.clientGone = false;
    this.bytesSent = 0;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let raw = '';
    for await (const chunk of req) raw += String(chunk);
    this.requests.push({
      path: req.url ?? '',
      headers: req.headers,
      body: JSON.parse(raw || '{}') as Record<string, unknown>,
    });
    const reply = this.replies.shift() ?? { chunks: ['(no scripted reply)'] };
    if ('status' in reply) {
      res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
      const echoed = reply.echoAuth
        ? String(req.headers.authorization ?? req.headers['x-api-key'])
        : undefined;
      res.end(JSON.stringify(reply.body ?? this.errorBody(reply.status, echoed)));
      return;
    }
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
    res.flushHeaders();
    const events = this.format === 'openai' ? openaiEvents(reply) : anthropicEvents(reply);
    this.streamed = [];
    this.bytesSent = 0;
    let closed = false;
    res.on('close', () => {
      closed = true;
      this.clientGone = true;
    });
    const write = async (data: string) => {
      this.bytesSent += Buffer.byteLength(data);
      if (!res.write(data) && !closed)
        await new Promise((resolve) => res.once('drain', resolve).once('close', resolve));
    };
    for (const e of events.head) {
      if (e.text !== undefined) {
        if (reply.chunkDelayMs) await sleep(reply.chunkDelayMs);
        this.streamed.push(e.text);
      }
      await write(e.data);
    }
    if (reply.endless !== undefined) {
      const data = events.textChunk(reply.endless);
      while (!closed) {
        await write(data);
        if (reply.chunkDelayMs) await sleep(reply.chunkDelayMs);
      }
      return;
    }
    if (reply.hold) {
      await new Promise<void>((resolve) => res.on('close', resolve));
      this.clientGone = true;
      return;
    }
    for (const e of events.tail) res.write(e);
    res.end();
  }

  private errorBody(status: number, echoed?: string) {
    const message =
      status === 401
        ? `Incorrect API key provided${echoed !== undefined ? `: ${echoed}. You can find your API key in your account settings` : ''}`
        : status === 429
          ? 'Rate limit reached'
          : `error ${status}`;
    return this.format === 'openai'
      ? { error: { message, type: status === 401 ? 'invalid_request_error' : 'server_error', code: null } }
      : { type: 'error', error: { type: status === 401 ? 'authentication_error' : 'api_error', message } };
  }
}

type Events = {
  head: { data: string; text?: string }[];
  tail: string[];
  /** One more text chunk, as the head's are written. */
  textChunk(text: string): string;
};
const sse = (data: unknown, event?: string) =>
  `${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** OpenAI chat-completions chunks: role, text deltas, tool-call deltas (arguments in two pieces), finish, usage. */
function openaiEvents(reply: Extract<FakeReply, { chunks?: unknown }>): Events {
  const base = {
    id: 'chatcmpl-fake',
    object: 'chat.completion.chunk',
    created: 1700000000,
    model: 'fake-model',
  };
  const chunk = (delta: unknown, finish: string | null = null) =>
    sse({ ...base, choices: [{ index: 0, delta, finish_reason: finish }] });
  const head: Events['head'] = [{ data: chunk({ role: 'assistant', content: '' }) }];
  for (const text of reply.chunks ?? []) head.push({ data: chunk({ content: text }), text });
  (reply.toolCalls ?? []).forEach((c, index) => {
    const cut = Math.floor(c.arguments.length / 2);
    head.push({
      data: chunk({
        tool_calls: [
          {
            index,
            id: c.id,
            type: 'function',
            function: { name: c.name, arguments: c.arguments.slice(0, cut) },
          },
        ],
      }),
    });
    head.push({ data: chunk({ tool_calls: [{ index, function: { arguments: c.arguments.slice(cut) } }] }) });
  });
  const usage = reply.usage ?? { input: 10, output: 5 };
  const tail = [
    chunk({}, reply.toolCalls?.length ? 'tool_calls' : 'stop'),
    sse({
      ...base,
      choices: [],
      usage: {
        prompt_tokens: usage.input,
        completion_tokens: usage.output,
        total_tokens: usage.input + usage.output,
      },
    }),
    'data: [DONE]\n\n',
  ];
  return { head, tail, textChunk: (text) => chunk({ content: text }) };
}

/** Anthropic messages events: message_start, a text block, tool_use blocks (input_json_delta), message_delta, stop. */
function anthropicEvents(reply: Extract<FakeReply, { chunks?: unknown }>): Events {
  const usage = reply.usage ?? { input: 10, output: 5 };
  const head: Events['head'] = [
    {
      data: sse(
        {
          type: 'message_start',
          message: {
            id: 'msg_fake',
            type: 'message',
            role: 'assistant',
            content: [],
            model: 'fake-model',
            stop_reason: null,
            stop_sequence: null,
            usage: { input_tokens: usage.input, output_tokens: 1 },
          },
        },
        'message_start',
      ),
    },
  ];
  let index = 0;
  if (reply.chunks?.length) {
    head.push({
      data: sse(
        { type: 'content_block_start', index, content_block: { type: 'text', text: '' } },
        'content_block_start',
      ),
    });
    for (const text of reply.chunks) {
      head.push({
        data: sse(
          { type: 'content_block_delta', index, delta: { type: 'text_delta', text } },
          'content_block_delta',
        ),
        text,
      });
    }
    head.push({ data: sse({ type: 'content_block_stop', index }, 'content_block_stop') });
    index += 1;
  }
  for (const c of reply.toolCalls ?? []) {
    head.push({
      data: sse(
        {
          type: 'content_block_start',
          index,
          content_block: { type: 'tool_use', id: c.id, name: c.name, input: {} },
        },
        'content_block_start',
      ),
    });
    head.push({
      data: sse(
        {
          type: 'content_block_delta',
          index,
          delta: { type: 'input_json_delta', partial_json: c.arguments },
        },
        'content_block_delta',
      ),
    });
    head.push({ data: sse({ type: 'content_block_stop', index }, 'content_block_stop') });
    index += 1;
  }
  const tail = [
    sse(
      {
        type: 'message_delta',
        delta: { stop_reason: reply.toolCalls?.length ? 'tool_use' : 'end_turn', stop_sequence: null },
        usage: { output_tokens: usage.output },
      },
      'message_delta',
    ),
    sse({ type: 'message_stop' }, 'message_stop'),
  ];
  return {
    head,
    tail,
    textChunk: () => {
      throw new Error('endless replies are written in the OpenAI format only');
    },
  };
}
