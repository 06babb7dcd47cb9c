/**
 * Request bodies read under a cap, for our node:http servers: a body whose `Content-Length` passes the cap is refused
 * before a byte of it is read, and one that streams past it (chunked) is cut there, so a server holds at most the cap
 * whatever a client sends. The caller answers 413 with the error's message, which names the limit, and
 * `BODY_REFUSED_HEADERS`, which close the connection after that answer. The viewer (hono) applies the same cap with
 * hono's `bodyLimit` and the same message. Does I/O on the request stream only.
 */
import type { IncomingMessage } from 'node:http';

/** The message of every 413 our servers answer for a body over `limit` bytes. */
export function bodyTooLargeMessage(limit: number): string {
  return `request body over the limit of ${limit} bytes`;
}

/** Thrown by `readBody` when a body passes its cap; `status` is 413. */
export class BodyTooLargeError extends Error {
  readonly status = 413;
  constructor(readonly limit: number) {
    super(bodyTooLargeMessage(limit));
    this.name = 'BodyTooLargeError';
  }
}

/** Headers for the answer to a refused body: the connection closes after it, so the rest of the body is not read. */
export const BODY_REFUSED_HEADERS = { Connection: 'close' } as const;

/** Whether the request announces (Content-Length) a body of more than `limit` bytes. */
function announcesTooLarge(req: IncomingMessage, limit: number): boolean {
  const declared = req.headers['content-length'];
  return declared !== undefined && Number(declared) > limit;
}

/**
 * Reads the request's body, at most `limit` bytes. Rejects with BodyTooLargeError at once when Content-Length passes
 * the limit (nothing is read), or as soon as the bytes received pass it (what came is dropped and the rest is
 * discarded as it arrives, so the answer can be sent while the client still writes); rejects with the stream's error
 * when the client goes away.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  if (announcesTooLarge(req, limit)) {
    req.resume();
    return Promise.reject(new BodyTooLargeError(limit));
  }
  return new Promise((resolve, reject) => {
    let chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size <= limit) {
        chunks.push(chunk);
        return;
      }
      chunks = [];
      req.off('data', onData);
      req.off('end', onEnd);
      req.resume();
      reject(new BodyTooLargeError(limit));
    };
    const onEnd = (): void => resolve(Buffer.concat(chunks));
    req.on('data', onData);
    req.on('end', onEnd);
    req.once('error', reject);
  });
}
