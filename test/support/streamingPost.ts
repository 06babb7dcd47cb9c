/**
 * A raw HTTP POST for the body-limit tests of our servers (viewer, codec server, MCP over HTTP): it sends the headers
 * (any Host, optionally a Content-Length announcing the whole body), then the body in chunks, each after the one
 * before has left, and stops sending as soon as the answer arrives. It reports the answer and how many bytes had been
 * sent by then, so a test tells a server that refused early from one that read the whole body before answering.
 * The body is spaces (JSON whitespace): a server that reads all of it finds no JSON in it. Socket buffers take a few
 * MiB on loopback before a server reads anything, so `total` should pass the cap by more than that (the tests send
 * 32 MiB).
 */
import http from 'node:http';

export interface StreamedAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** Bytes of the body written to the socket when the answer's head arrived. */
  sent: number;
  /** Bytes the whole body has. */
  total: number;
}

export interface StreamingPostOptions {
  headers?: Record<string, string>;
  /** The whole body's size in bytes. */
  total: number;
  /** Send `Content-Length: total` (true) or a chunked body (false). */
  announce: boolean;
  /** Default 64 KiB. */
  chunkBytes?: number;
}

/** POSTs to `url` as described above; rejects only when the connection fails before any answer arrives. */
export function streamingPost(url: string, opts: StreamingPostOptions): Promise<StreamedAnswer> {
  const chunkBytes = opts.chunkBytes ?? 64 * 1024;
  const chunk = Buffer.alloc(chunkBytes, 0x20);
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answered = false;
    const req = http.request({
      host: target.hostname,
      port: target.port,
      path: `${target.pathname}${target.search}`,
      method: 'POST',
      headers: {
        ...(opts.announce ? { 'Content-Length': String(opts.total) } : {}),
        ...opts.headers,
      },
    });
    req.on('response', (res) => {
      answered = true;
      const sentThen = sent;
      const parts: Buffer[] = [];
      res.on('data', (part: Buffer) => parts.push(part));
      res.on('close', () => {
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(parts).toString('utf8'),
          sent: sentThen,
          total: opts.total,
        });
        req.destroy();
      });
    });
    // Once the answer is in, a server that refused the body may close while we still write: that is expected.
    req.on('error', (err) => {
      if (!answered) reject(err);
    });
    req.flushHeaders();
    const pump = (): void => {
      if (answered) return;
      if (sent >= opts.total) {
        req.end();
        return;
      }
      const n = Math.min(chunkBytes, opts.total - sent);
      req.write(chunk.subarray(0, n), (err) => {
        if (err) return;
        sent += n;
        pump();
      });
    };
    pump();
  });
}

/** A raw request with any Host header (fetch does not let a caller set Host). Resolves the status and body. */
export function rawRequest(
  url: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string },
): Promise<{ status: number; body: string }> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: target.hostname,
        port: target.port,
        path: `${target.pathname}${target.search}`,
        method: opts.method ?? 'POST',
        headers: opts.headers,
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (part: Buffer) => parts.push(part));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}
