/**
 * A local hook endpoint for HTTP-hook tests (node:http on 127.0.0.1, port 0). Each POST is parked until the test
 * answers it (so messages can arrive while a hook activity is in flight), unless an `auto` answer is set for it.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ParkedHookRequest {
  path: string;
  body: Record<string, unknown>;
  respond(answer: unknown, status?: number): void;
}

export class HookServer {
  /** Answers requests at once when it returns something (test-specific routing); otherwise they are parked. */
  auto:
    | ((path: string, body: Record<string, unknown>) => { status?: number; body: unknown } | undefined)
    | undefined;
  readonly seen: { path: string; body: Record<string, unknown> }[] = [];
  private parked: ParkedHookRequest[] = [];
  private waiters: ((r: ParkedHookRequest) => void)[] = [];

  private constructor(private readonly server: Server) {}

  static async start(): Promise<HookServer> {
    const server = createServer((req, res) => void self.handle(req, res));
    const self = new HookServer(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return self;
  }

  url(path: string): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${path}`;
  }

  /** The next parked request (waits for it). */
  next(): Promise<ParkedHookRequest> {
    const ready = this.parked.shift();
    if (ready) return Promise.resolve(ready);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let raw = '';
    for await (const chunk of req) raw += String(chunk);
    const body = JSON.parse(raw || '{}') as Record<string, unknown>;
    const path = req.url ?? '';
    this.seen.push({ path, body });
    const send = (answer: unknown, status = 200) => {
      if (res.writableEnded) return;
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(typeof answer === 'string' ? answer : JSON.stringify(answer));
    };
    const auto = this.auto?.(path, body);
    if (auto) return send(auto.body, auto.status);
    const parked: ParkedHookRequest = { path, body, respond: send };
    const waiter = this.waiters.shift();
    if (waiter) waiter(parked);
    else this.parked.push(parked);
  }
}
