/**
 * Temporal's remote codec protocol over node:http, for the Temporal UI and `temporal --codec-endpoint`: `POST
 * …/encode` and `POST …/decode` take and answer `{"payloads": [...]}`, each payload in protobuf JSON
 * (`{metadata: {key: base64}, data: base64}`). Only the last path segment is routed, so the endpoints may sit under
 * any prefix (e.g. `/{namespace}/decode`). Browser calls from the configured UI origins get CORS headers (with
 * credentials, and the `X-Namespace` and `Authorization` request headers allowed); other origins get none.
 * A request whose Host does not name the address it arrived on (or a configured name) is refused (403), against DNS
 * rebinding: it decrypts for whoever reaches it. When namespaces are configured, a request whose `X-Namespace`
 * header names another one is refused (403). Memory is bounded per request: a body over `maxBodyBytes` is refused
 * (413) before it is read, and one with more than `maxPayloads` payloads, or more keys and values than they may hold,
 * before it is parsed. Bad JSON or a payload the codec refuses answer 400 with the reason; the server never logs
 * payload contents. Not deterministic (I/O); never imported by workflow code.
 */
import http from 'node:http';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { z } from 'zod';
import { describeZodIssue } from '../domain';
import { BODY_REFUSED_HEADERS, BodyTooLargeError, readBody } from '../http/bodyLimit';
import { servedHosts } from '../http/hosts';
import { countBody } from './bodyCounts';

export interface CodecServerOptions {
  codec: PayloadCodec;
  /** Origins allowed to call from a browser (e.g. the Temporal UI, `http://localhost:8233`). Default none. */
  corsOrigins?: string[];
  /** Namespaces served; a request whose `X-Namespace` names another one is refused. Default any. */
  namespaces?: string[];
  /**
   * Host header values served besides the address a request arrived on (and the loopback names when that is
   * loopback), exactly as clients send them: the name a proxy in front uses, e.g. `codec.internal:8888`.
   */
  allowedHosts?: string[];
  /** Largest request body in bytes (default `CODEC_LIMITS.maxBodyBytes`, 8 MiB). */
  maxBodyBytes?: number;
  /** Most payloads in one request (default `CODEC_LIMITS.maxPayloads`, 1,000). */
  maxPayloads?: number;
}

/**
 * The codec server's defaults. 8 MiB: Temporal refuses a payload over 2 MiB and a request over 4 MiB by default, so
 * the payloads of one event fit in base64 JSON (4/3 of their size) with room to spare. 1,000 payloads: the UI and the
 * CLI send the payloads of one event or field at a time. 64 keys and values per payload: one has about ten
 * (`{metadata: {encoding, encryption-key-id}, data}`).
 */
export const CODEC_LIMITS = {
  maxBodyBytes: 8 * 1024 * 1024,
  maxPayloads: 1000,
  valuesPerPayload: 64,
} as const;

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
const Base64Schema = z
  .string({ error: 'expected a base64 string' })
  .regex(BASE64, { error: 'expected a base64 string' });
/** A payload as protobuf JSON; null stands for absent, as protobuf JSON writers may send it. */
const JsonPayloadSchema = z.object(
  {
    metadata: z.record(z.string(), Base64Schema, { error: 'expected an object' }).nullish(),
    data: Base64Schema.nullish(),
  },
  { error: 'expected an object' },
);
const RequestSchema = z.object(
  { payloads: z.array(JsonPayloadSchema, { error: 'expected {"payloads": [...]}' }) },
  { error: 'expected {"payloads": [...]}' },
);

/** Protobuf JSON → Payload (the schema has checked the fields). */
function fromJson(value: z.infer<typeof JsonPayloadSchema>): Payload {
  return {
    metadata: Object.fromEntries(
      Object.entries(value.metadata ?? {}).map(([k, v]) => [k, new Uint8Array(Buffer.from(v, 'base64'))]),
    ),
    ...(value.data !== undefined && value.data !== null
      ? { data: new Uint8Array(Buffer.from(value.data, 'base64')) }
      : {}),
  };
}

/**
 * The body's payloads, checked against the limits before JSON.parse builds anything (413 naming the limit), then
 * against the schema (400 naming the field).
 */
function parseRequest(body: string, maxPayloads: number): Payload[] {
  const counts = countBody(body);
  if (counts.items > maxPayloads)
    throw new HttpError(413, `payloads: at most ${maxPayloads} per request, got ${counts.items}`);
  const maxValues = maxPayloads * CODEC_LIMITS.valuesPerPayload + 16;
  if (counts.values > maxValues)
    throw new HttpError(
      413,
      `the body holds more than ${maxValues} JSON keys and values ` +
        `(${CODEC_LIMITS.valuesPerPayload} per payload, ${maxPayloads} payloads)`,
    );
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new HttpError(400, 'the body is not JSON');
  }
  const request = RequestSchema.safeParse(parsed);
  if (!request.success) {
    const issue = request.error.issues[0];
    // The body as a whole, or its `payloads` not being a list: say what the body should be.
    if (!issue || issue.path.length < 2) throw new HttpError(400, 'expected {"payloads": [...]}');
    throw new HttpError(400, describeZodIssue(request.error.issues, 'body'));
  }
  return request.data.payloads.map(fromJson);
}

/** Checks the options; throws an Error naming the option and what it must be. */
function validateLimits(opts: CodecServerOptions): { maxBodyBytes: number; maxPayloads: number } {
  const maxBodyBytes = opts.maxBodyBytes ?? CODEC_LIMITS.maxBodyBytes;
  const maxPayloads = opts.maxPayloads ?? CODEC_LIMITS.maxPayloads;
  if (!Number.isSafeInteger(maxBodyBytes) || maxBodyBytes < 1)
    throw new Error(`maxBodyBytes: a whole number of bytes from 1, got ${maxBodyBytes}`);
  if (!Number.isSafeInteger(maxPayloads) || maxPayloads < 1)
    throw new Error(`maxPayloads: a whole number from 1, got ${maxPayloads}`);
  return { maxBodyBytes, maxPayloads };
}

function toJson(payload: Payload): JsonPayload {
  return {
    metadata: Object.fromEntries(
      Object.entries(payload.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
    ),
    data: Buffer.from(payload.data ?? new Uint8Array()).toString('base64'),
  };
}

/** The request handler of the codec protocol (see the file header). Throws when a limit option is not valid. */
export function codecRequestHandler(opts: CodecServerOptions): http.RequestListener {
  const origins = new Set(opts.corsOrigins ?? []);
  const namespaces = opts.namespaces?.length ? new Set(opts.namespaces) : undefined;
  const { maxBodyBytes, maxPayloads } = validateLimits(opts);
  return (req, res) => {
    const send = (status: number, body: unknown, headers: http.OutgoingHttpHeaders = {}) => {
      res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
      res.end(JSON.stringify(body));
    };
    const host = req.headers.host ?? '';
    const { localAddress, localPort } = req.socket;
    if (!servedHosts(localAddress ?? '', localPort ?? 0, opts.allowedHosts).includes(host))
      return send(403, { error: `host ${host || '(none)'} is not this codec server` });
    const origin = req.headers.origin;
    if (origin && origins.has(origin)) {
      res.setHeader('Access-Control-Allow-Origin', origin);
      res.setHeader('Access-Control-Allow-Credentials', 'true');
      res.setHeader('Vary', 'Origin');
    }
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
    readBody(req, maxBodyBytes)
      .then(async (body) => {
        const payloads = parseRequest(body.toString('utf8'), maxPayloads);
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
        if (err instanceof BodyTooLargeError) send(err.status, { error: err.message }, BODY_REFUSED_HEADERS);
        else if (err instanceof HttpError) send(err.status, { error: err.message });
        else send(500, { error: 'internal error' });
      });
  };
}

/** An http.Server serving the codec protocol; the caller listens and closes it. */
export function createCodecServer(opts: CodecServerOptions): http.Server {
  return http.createServer(codecRequestHandler(opts));
}
