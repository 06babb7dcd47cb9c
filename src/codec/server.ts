/**
 * Temporal's remote codec protocol over node:http, for the Temporal UI and `temporal --codec-endpoint`: `POST
 * …/encode` and `POST …/decode` take and answer `{"payloads": [...]}`, each payload in protobuf JSON
 * (`{metadata: {key: base64}, data: base64}`). Only the last path segment is routed, so the endpoints may sit under
 * any prefix (e.g. `/{namespace}/decode`). Browser calls from the configured UI origins get CORS headers (with
 * credentials, and the `X-Namespace` and `Authorization` request headers allowed); other origins get none.
 * When namespaces are configured, a request whose `X-Namespace` header names another one is refused (403).
 * Bad JSON or a payload the codec refuses answer 400 with the reason; the server never logs payload contents.
 * Not deterministic (I/O); never imported by workflow code.
 */
import http from 'node:http';
import type { Payload, PayloadCodec } from '@temporalio/common';

export interface CodecServerOptions {
  codec: PayloadCodec;
  /** Origins allowed to call from a browser (e.g. the Temporal UI, `http://localhost:8233`). Default none. */
  corsOrigins?: string[];
  /** Namespaces served; a request whose `X-Namespace` names another one is refused. Default any. */
  namespaces?: string[];
  /** Largest request body in bytes (default 32 MiB). */
  maxBodyBytes?: number;
}

/** A payload as protobuf JSON: bytes fields in base64. */
interface JsonPayload {
  metadata?: Record<string, string> | null;
  data?: string | null;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

function bytesOf(value: unknown, where: string): Uint8Array {
  if (typeof value !== 'string' || !BASE64.test(value))
    throw new HttpError(400, `${where}: expected a base64 string`);
  return new Uint8Array(Buffer.from(value, 'base64'));
}

/** Protobuf JSON → Payload. Throws HttpError 400 naming the field. */
function fromJson(value: unknown, index: number): Payload {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new HttpError(400, `payloads[${index}]: expected an object`);
  const { metadata, data } = value as JsonPayload;
  if (
    metadata !== undefined &&
    metadata !== null &&
    (typeof metadata !== 'object' || Array.isArray(metadata))
  )
    throw new HttpError(400, `payloads[${index}].metadata: expected an object`);
  return {
    metadata: Object.fromEntries(
      Object.entries(metadata ?? {}).map(([k, v]) => [k, bytesOf(v, `payloads[${index}].metadata.${k}`)]),
    ),
    ...(data !== undefined && data !== null ? { data: bytesOf(data, `payloads[${index}].data`) } : {}),
  };
}

function toJson(payload: Payload): JsonPayload {
  return {
    metadata: Object.fromEntries(
      Object.entries(payload.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
    ),
    data: Buffer.from(payload.data ?? new Uint8Array()).toString('base64'),
  };
}

function readBody(req: http.IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        reject(new HttpError(413, `request body larger than ${limit} bytes`));
        req.resume();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** The request handler of the codec protocol (see the file header). */
export function codecRequestHandler(opts: CodecServerOptions): http.RequestListener {
  const origins = new Set(opts.corsOrigins ?? []);
  const namespaces = opts.namespaces?.length ? new Set(opts.namespaces) : undefined;
  const limit = opts.maxBodyBytes ?? 32 * 1024 * 1024;
  return (req, res) => {
    const origin = req.headers.origin;
    if (origin && origins.has(origin)) {
      res.setHeader('Access-Control-Allow-Origin', origin);
      res.setHeader('Access-Control-Allow-Credentials', 'true');
      res.setHeader('Vary', 'Origin');
    }
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const operation = new URL(req.url ?? '/', 'http://codec').pathname.split('/').filter(Boolean).at(-1);
    if (operation !== 'encode' && operation !== 'decode')
      return send(404, { error: 'not found: POST /encode or /decode' });
    if (req.method === 'OPTIONS') {
      res.writeHead(204, {
        'Access-Control-Allow-Methods': 'POST, OPTIONS',
        'Access-Control-Allow-Headers': 'Content-Type, X-Namespace, Authorization',
        'Access-Control-Max-Age': '600',
      });
      return res.end();
    }
    if (req.method !== 'POST') {
      res.setHeader('Allow', 'POST, OPTIONS');
      return send(405, { error: `method ${req.method} not allowed: POST` });
    }
    const namespace = req.headers['x-namespace'];
    if (namespaces && typeof namespace === 'string' && !namespaces.has(namespace))
      return send(403, { error: `namespace "${namespace}" is not served here` });
    readBody(req, limit)
      .then(async (body) => {
        let parsed: unknown;
        try {
          parsed = JSON.parse(body);
        } catch {
          throw new HttpError(400, 'the body is not JSON');
        }
        const list = (parsed as { payloads?: unknown } | null)?.payloads;
        if (!Array.isArray(list)) throw new HttpError(400, 'expected {"payloads": [...]}');
        const payloads = list.map(fromJson);
        let out: Payload[];
        try {
          out =
            operation === 'encode' ? await opts.codec.encode(payloads) : await opts.codec.decode(payloads);
        } catch (err) {
          throw new HttpError(400, `${operation} failed: ${(err as Error).message}`);
        }
        send(200, { payloads: out.map(toJson) });
      })
      .catch((err: unknown) => {
        if (res.headersSent) return;
        if (err instanceof HttpError) send(err.status, { error: err.message });
        else send(500, { error: 'internal error' });
      });
  };
}

/** An http.Server serving the codec protocol; the caller listens and closes it. */
export function createCodecServer(opts: CodecServerOptions): http.Server {
  return http.createServer(codecRequestHandler(opts));
}
