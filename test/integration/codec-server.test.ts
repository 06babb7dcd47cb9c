/**
 * The remote codec protocol over real HTTP (src/codec/server.ts on a loopback port): encode → decode round trips in
 * protobuf JSON, routing on the last path segment, CORS for the configured Temporal UI origin only, the namespace
 * and Host checks, the limits (body bytes, payloads per request, keys and values) and the error statuses (400 naming
 * the field or the key id, 403, 404, 405, 413 naming the limit). The CLI command around it and the real Temporal CLI
 * calling it are in codec.test.ts.
 */
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type http from 'node:http';
import { defaultPayloadConverter } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AesGcmCodec, createCodecServer } from '../../src/codec';
import { rawRequest, streamingPost } from '../support/streamingPost';

const UI = 'http://localhost:8233';
const b64 = (text: string) => Buffer.from(text).toString('base64');
const k1 = { id: 'k1', key: new Uint8Array(randomBytes(32)) };
let server: http.Server;
let base: string;
/** A server that also answers to a proxy's name, with small limits. */
let proxied: http.Server;
let proxiedBase: string;
const MiB = 1024 * 1024;

beforeAll(async () => {
  server = createCodecServer({
    codec: new AesGcmCodec({ current: k1 }),
    corsOrigins: [UI],
    namespaces: ['default'],
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxied = createCodecServer({
    codec: new AesGcmCodec({ current: k1 }),
    allowedHosts: ['codec.internal:8888'],
    maxBodyBytes: 4096,
    maxPayloads: 3,
  });
  await new Promise<void>((resolve) => proxied.listen(0, '127.0.0.1', resolve));
  proxiedBase = `http://127.0.0.1:${(proxied.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const s of [server, proxied]) {
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }
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

  it('refuses a Host that is not its address (DNS rebinding) with 403, and serves its own names', async () => {
    const body = JSON.stringify({ payloads: [jsonPayload('x')] });
    const headers = { 'Content-Type': 'application/json' };
    const foreign = await rawRequest(`${base}/decode`, {
      headers: { ...headers, Host: 'evil.example' },
      body,
    });
    expect(foreign.status).toBe(403);
    expect(JSON.parse(foreign.body)).toEqual({ error: 'host evil.example is not this codec server' });
    const port = new URL(base).port;
    expect(
      (await rawRequest(`${base}/decode`, { headers: { ...headers, Host: `evil.example:${port}` }, body }))
        .status,
    ).toBe(403);
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`]) {
      const own = await rawRequest(`${base}/decode`, { headers: { ...headers, Host: host }, body });
      expect(own.status).toBe(200);
    }
    // allowedHosts: the name a proxy in front of it uses; its own address still counts, other names do not.
    const viaProxy = await rawRequest(`${proxiedBase}/decode`, {
      headers: { ...headers, Host: 'codec.internal:8888' },
      body,
    });
    expect(viaProxy.status).toBe(200);
    const ownAddress = await fetch(`${proxiedBase}/decode`, { method: 'POST', body: '{"payloads":[]}' });
    expect(ownAddress.status).toBe(200);
    expect(
      (await rawRequest(`${proxiedBase}/decode`, { headers: { ...headers, Host: 'codec.internal' }, body }))
        .status,
    ).toBe(403);
  });

  it('refuses more payloads than maxPayloads (default 1000) with 413 naming the limit', async () => {
    const one = jsonPayload('x');
    const atLimit = await post('/encode', { payloads: Array.from({ length: 1000 }, () => one) });
    expect(atLimit.status).toBe(200);
    expect(atLimit.json.payloads).toHaveLength(1000);
    const over = await post('/encode', { payloads: Array.from({ length: 1001 }, () => one) });
    expect(over).toMatchObject({
      status: 413,
      json: { error: 'payloads: at most 1000 per request, got 1001' },
    });
    // 200,000 tiny payloads (the 11 MB /encode) are counted before they are parsed.
    const tiny = await post('/encode', `{"payloads":[${Array(200_000).fill('{}').join(',')}]}`);
    expect(tiny).toMatchObject({
      status: 413,
      json: { error: 'payloads: at most 1000 per request, got 200000' },
    });
    const small = await fetch(`${proxiedBase}/encode`, {
      method: 'POST',
      body: JSON.stringify({ payloads: [one, one, one, one] }),
    });
    expect(small.status).toBe(413);
    expect(await small.json()).toEqual({ error: 'payloads: at most 3 per request, got 4' });
  });

  it('refuses a body with more keys and values than its payloads may hold, before parsing it', async () => {
    const metadata = Object.fromEntries(Array.from({ length: 70_000 }, (_, i) => [`k${i}`, '']));
    const res = await post('/decode', { payloads: [{ metadata }] });
    expect(res).toMatchObject({
      status: 413,
      json: { error: 'the body holds more than 64016 JSON keys and values (64 per payload, 1000 payloads)' },
    });
    const nested = await post('/decode', `{"payloads":[{"data":[${Array(100_000).fill('[]').join(',')}]}]}`);
    expect(nested.status).toBe(413);
  });

  it('refuses a body whose Content-Length passes maxBodyBytes (8 MiB) with 413, before it is sent', async () => {
    const answer = await streamingPost(`${base}/decode`, {
      headers: { 'Content-Type': 'application/json' },
      total: 32 * MiB,
      announce: true,
    });
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body)).toEqual({ error: `request body over the limit of ${8 * MiB} bytes` });
    expect(answer.sent).toBeLessThan(answer.total);
  });

  it('cuts a chunked body at maxBodyBytes with 413, before it is all sent', async () => {
    const answer = await streamingPost(`${base}/encode`, {
      headers: { 'Content-Type': 'application/json' },
      total: 32 * MiB,
      announce: false,
    });
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body)).toEqual({ error: `request body over the limit of ${8 * MiB} bytes` });
    expect(answer.sent).toBeLessThan(answer.total);
    const small = await streamingPost(`${proxiedBase}/encode`, { total: 32 * MiB, announce: false });
    expect(small.status).toBe(413);
    expect(JSON.parse(small.body)).toEqual({ error: 'request body over the limit of 4096 bytes' });
    expect(small.sent).toBeLessThan(small.total);
  });
});
