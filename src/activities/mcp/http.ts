/**
 * The `fetch` the worker's streamable-HTTP MCP connections use: the global fetch, with each response body read
 * through a reader that caps each message (./framing.ts). The SDK reads a JSON body or an SSE event whole, of any
 * size; here an SSE event over `maxMessageBytes` is counted and dropped as it arrives, and so is a JSON body, and in
 * its place the SDK reads a `MESSAGE_TOO_LARGE` error response to the request the POST carried. Events within the
 * cap pass as they end (progress notifications keep arriving while a call runs). A body that passes the drain limit
 * is cancelled. The body of a refusal (4xx, 5xx), which the SDK puts into its error message, is cut at 4 KiB. Not
 * deterministic: does I/O.
 */
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { isJSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import { BodyReader, SseReader, tooLargeResponse, type Framed } from './framing';

/** Most bytes of a refusal's body kept (the SDK reads it whole into an error message, which history may store). */
const ERROR_BODY_BYTES = 4096;

/** A fetch whose response bodies hold no message over `maxMessageBytes` (see the module header). */
export function cappedFetch(maxMessageBytes: number, base: FetchLike = fetch): FetchLike {
  return async (url, init) => {
    const response = await base(url, init);
    if (!response.body) return response;
    if (!response.ok) return withBody(response, cut(response.body, ERROR_BODY_BYTES));
    const type = (response.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    const sse = type === 'text/event-stream';
    if (!sse && type !== 'application/json') return response;
    const id = requestId(init?.body);
    const reader = sse ? new SseReader(maxMessageBytes) : new BodyReader(maxMessageBytes);
    const encoder = new TextEncoder();
    /** What stands in for a refused message: an error response to the request, or nothing without one. */
    const replace = (item: Framed): Uint8Array | undefined => {
      if (item.kind === 'message') return item.bytes;
      if (id === undefined) return undefined;
      const json = JSON.stringify(tooLargeResponse(id, item.tooLarge));
      return encoder.encode(sse ? `event: message\ndata: ${json}\n\n` : json);
    };
    const body = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          for (const item of reader.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength))) {
            const out = replace(item);
            if (out?.length) controller.enqueue(out);
          }
          if (reader.abandoned) controller.terminate(); // cancels the rest of the body
        },
        flush(controller) {
          const last = reader.flush();
          const out = last && replace(last);
          if (out?.length) controller.enqueue(out);
        },
      }),
    );
    return withBody(response, body);
  };
}

/** `response` with another body (its length no longer said). */
function withBody(response: Response, body: ReadableStream<Uint8Array>): Response {
  const headers = new Headers(response.headers);
  headers.delete('content-length');
  return new Response(body, { status: response.status, statusText: response.statusText, headers });
}

/** The first `max` bytes of `body`; the rest is not read (the body is cancelled). */
function cut(body: ReadableStream<Uint8Array>, max: number): ReadableStream<Uint8Array> {
  let kept = 0;
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        controller.enqueue(chunk.subarray(0, max - kept));
        kept += Math.min(chunk.byteLength, max - kept);
        if (kept >= max) controller.terminate();
      },
    }),
  );
}

/** The id of the one JSON-RPC request a POST body carries (the SDK sends one message per POST), or undefined. */
function requestId(body: unknown): string | number | undefined {
  if (typeof body !== 'string') return undefined;
  try {
    const message: unknown = JSON.parse(body);
    return isJSONRPCRequest(message) ? message.id : undefined;
  } catch {
    return undefined;
  }
}
