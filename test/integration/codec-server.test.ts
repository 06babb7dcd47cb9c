/**
 * The remote codec protocol over real HTTP (src/codec/server.ts on a loopback port): encode → decode round trips in
 * protobuf JSON, routing on the last path segment, CORS for the configured Temporal UI origin only, the namespace
 * check, and the error statuses (400 naming the field or the key id, 403, 404, 405). The CLI command around it and
 * the real Temporal CLI calling it are in codec.test.ts.
 */
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type http from 'node:http';
import { defaultPayloadConverter } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AesGcmCodec, createCodecServer } from '../../src/codec';

const UI = 'http://localhost:8233';
const b64 = (text: string) => Buffer.from(text).toString('base64');
const k1 = { id: 'k1', key: new Uint8Array(randomBytes(32)) };
let server: http.Server;
let base: string;

beforeAll(async () => {
  server = createCodecServer({
    codec: new AesGcmCodec({ current: k1 }),
    corsOrigins: [UI],
    namespaces: ['default'],
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

interface JsonPayload {
  metadata: Record<string, string>;
  data: string;
}

async function post(
  pathname: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: Record<string, unknown>; headers: Headers }> {
  const res = await fetch(`${base}${pathname}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown>, headers: res.headers };
}

/** A JSON payload as the Temporal UI sends it (protobuf JSON: bytes in base64). */
function jsonPayload(value: unknown): JsonPayload {
  const p = defaultPayloadConverter.toPayload(value)!;
  return {
    metadata: Object.fromEntries(
      Object.entries(p.metadata!).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
    ),
    data: Buffer.from(p.data!).toString('base64'),
  };
}

describe('codec server', () => {
  it('encodes and decodes payloads in protobuf JSON, round trip', async () => {
    const original = [jsonPayload({ prompt: 'secret words' }), jsonPayload(42)];
    const encoded = await post('/encode', { payloads: original });
    expect(encoded.status).toBe(200);
    expect(encoded.headers.get('content-type')).toBe('application/json');
    const payloads = encoded.json.payloads as JsonPayload[];
    expect(payloads).toHaveLength(2);
    for (const p of payloads) {
      expect(p.metadata.encoding).toBe(b64('binary/encrypted'));
      expect(p.metadata['encryption-key-id']).toBe(b64('k1'));
      expect(Buffer.from(p.data, 'base64').includes('secret words')).toBe(false);
    }
    const decoded = await post('/decode', { payloads }, { 'X-Namespace': 'default' });
    expect(decoded.status).toBe(200);
    expect(decoded.json.payloads).toEqual(original);
    // A payload that is not encrypted comes back as it is; an empty list is an empty list.
    expect((await post('/decode', { payloads: original })).json.payloads).toEqual(original);
    expect((await post('/decode', { payloads: [] })).json.payloads).toEqual([]);
  });

  it('routes on the last path segment (endpoints under a prefix, e.g. /{namespace}/decode)', async () => {
    const encoded = await post('/default/encode', { payloads: [jsonPayload('x')] });
    expect(encoded.status).toBe(200);
    const decoded = await post('/some/prefix/decode', encoded.json);
    expect(decoded.json.payloads).toEqual([jsonPayload('x')]);
  });

  it('answers CORS preflights and requests from the configured UI origin only', async () => {
    const preflight = await fetch(`${base}/decode`, {
      method: 'OPTIONS',
      headers: {
        Origin: UI,
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'content-type,x-namespace',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe(UI);
    expect(preflight.headers.get('access-control-allow-credentials')).toBe('true');
    expect(preflight.headers.get('access-control-allow-methods')).toMatch(/POST/);
    expect(preflight.headers.get('access-control-allow-headers')).toMatch(/X-Namespace/);
    expect(preflight.headers.get('access-control-allow-headers')).toMatch(/Content-Type/);

    const allowed = await post('/decode', { payloads: [] }, { Origin: UI });
    expect(allowed.headers.get('access-control-allow-origin')).toBe(UI);
    const other = await post('/decode', { payloads: [] }, { Origin: 'http://evil.example' });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    const otherPreflight = await fetch(`${base}/decode`, {
      method: 'OPTIONS',
      headers: { Origin: 'http://evil.example', 'Access-Control-Request-Method': 'POST' },
    });
    expect(otherPreflight.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('refuses another namespace, other methods and paths, and bad bodies with a reason', async () => {
    const wrongNamespace = await post('/decode', { payloads: [] }, { 'X-Namespace': 'prod' });
    expect(wrongNamespace).toMatchObject({
      status: 403,
      json: { error: 'namespace "prod" is not served here' },
    });
    const get = await fetch(`${base}/decode`);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST, OPTIONS');
    expect((await post('/transcode', { payloads: [] })).status).toBe(404);
    expect(await post('/decode', 'not json')).toMatchObject({
      status: 400,
      json: { error: 'the body is not JSON' },
    });
    expect(await post('/decode', { payloads: 1 })).toMatchObject({
      status: 400,
      json: { error: 'expected {"payloads": [...]}' },
    });
    expect(await post('/encode', { payloads: [{ metadata: { encoding: 'not base64!' } }] })).toMatchObject({
      status: 400,
      json: { error: 'payloads[0].metadata.encoding: expected a base64 string' },
    });
  });

  it('answers 400 naming the key id when a payload needs a key it does not have', async () => {
    const other = new AesGcmCodec({ current: { id: 'k7', key: new Uint8Array(randomBytes(32)) } });
    const [p] = await other.encode([defaultPayloadConverter.toPayload('x')!]);
    const body = {
      payloads: [
        {
          metadata: Object.fromEntries(
            Object.entries(p!.metadata!).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
          ),
          data: Buffer.from(p!.data!).toString('base64'),
        },
      ],
    };
    const res = await post('/decode', body);
    expect(res.status).toBe(400);
    expect(res.json.error).toMatch(
      /^decode failed: payload encrypted with key "k7", which is not configured/,
    );
  });
});
