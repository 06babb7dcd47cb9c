/**
 * The viewer's request-body cap over real HTTP (startViewer on a loopback port, a stand-in SessionClient that records
 * what it is asked to deliver; no Temporal, no browser): a body announced or streamed past the cap is answered 413
 * naming the limit before the client has sent it all, with the full access token; the largest message the session
 * limits allow passes in any JSON encoding; `maxBodyBytes` moves the cap. Host checks: a foreign Host is refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionClient } from '../../src/client';
import { LIMITS } from '../../src/domain';
import {
  DEFAULT_VIEWER_MAX_BODY_BYTES,
  startViewer,
  validateViewerOptions,
  type RunningViewer,
} from '../../src/viewer/server';
import { rawRequest, streamingPost } from '../support/streamingPost';

const FULL = 'full-access-token-0123456789';
const AUTH = { Authorization: `Bearer ${FULL}`, 'Content-Type': 'application/json' };
const MiB = 1024 * 1024;

/** What the stand-in client was asked to deliver. */
const delivered: { sessionId: string; lane: string; content: string }[] = [];
const sessions = {
  deliver: async (sessionId: string, lane: string, message: { content: string }) => {
    delivered.push({ sessionId, lane, content: message.content });
    return { messageId: 'm1', lane, duplicate: false, seq: 1 };
  },
} as unknown as SessionClient;

let viewer: RunningViewer;
let small: RunningViewer;

beforeAll(async () => {
  viewer = await startViewer({ sessions, token: FULL, port: 0 });
  small = await startViewer({ sessions, token: FULL, port: 0, maxBodyBytes: 1024 });
});

afterAll(async () => {
  await viewer?.close();
  await small?.close();
});

describe('the viewer caps request bodies before reading them', () => {
  it('answers 413 naming the limit to a body whose Content-Length passes the cap, before it is sent', async () => {
    delivered.length = 0;
    const answer = await streamingPost(`${viewer.url}api/sessions/s1/messages`, {
      headers: AUTH,
      total: 32 * MiB,
      announce: true,
    });
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body)).toEqual({
      error: `request body over the limit of ${DEFAULT_VIEWER_MAX_BODY_BYTES} bytes`,
      field: 'body',
    });
    expect(answer.sent).toBeLessThan(answer.total);
    expect(delivered).toEqual([]);
  });

  it('answers 413 to a chunked body once it passes the cap, before it is all sent', async () => {
    delivered.length = 0;
    const answer = await streamingPost(`${viewer.url}api/sessions/s1/approve`, {
      headers: AUTH,
      total: 32 * MiB,
      announce: false,
    });
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body)).toMatchObject({ error: `request body over the limit of 2097152 bytes` });
    expect(answer.sent).toBeLessThan(answer.total);
    expect(delivered).toEqual([]);
  });

  it('takes the largest message the session limits allow, even with every character escaped', async () => {
    delivered.length = 0;
    // 'é' as \u00e9: six bytes of JSON per character, the most any encoder writes for one UTF-16 code unit.
    const body = `{"lane":"followup","content":"${'\\u00e9'.repeat(LIMITS.contentChars)}"}`;
    expect(Buffer.byteLength(body)).toBeGreaterThan(6 * LIMITS.contentChars);
    const res = await fetch(`${viewer.url}api/sessions/s1/messages`, { method: 'POST', headers: AUTH, body });
    expect(res.status).toBe(200);
    expect(delivered).toEqual([
      { sessionId: 's1', lane: 'followup', content: 'é'.repeat(LIMITS.contentChars) },
    ]);
  });

  it('maxBodyBytes sets the cap', async () => {
    delivered.length = 0;
    const over = await fetch(`${small.url}api/sessions/s1/messages`, {
      method: 'POST',
      headers: AUTH,
      body: JSON.stringify({ lane: 'followup', content: 'x'.repeat(1100) }),
    });
    expect(over.status).toBe(413);
    expect(await over.json()).toEqual({ error: 'request body over the limit of 1024 bytes', field: 'body' });
    const under = await fetch(`${small.url}api/sessions/s1/messages`, {
      method: 'POST',
      headers: AUTH,
      body: JSON.stringify({ lane: 'followup', content: 'x'.repeat(900) }),
    });
    expect(under.status).toBe(200);
    expect(delivered).toHaveLength(1);
    expect(() => validateViewerOptions({ token: FULL, maxBodyBytes: 0 })).toThrow(
      'maxBodyBytes: a whole number of bytes from 1',
    );
  });

  it('refuses a body from a client without a token (401) without waiting for it', async () => {
    const answer = await streamingPost(`${viewer.url}api/sessions/s1/messages`, {
      headers: { 'Content-Type': 'application/json' },
      total: 32 * MiB,
      announce: true,
    });
    expect(answer.status).toBe(401);
    expect(answer.sent).toBeLessThan(answer.total);
  });

  it('refuses a Host that is not its address (DNS rebinding), and serves its loopback names', async () => {
    const port = viewer.port;
    const foreign = await rawRequest(`${viewer.url}api/me`, {
      method: 'GET',
      headers: { Host: 'evil.example', Authorization: `Bearer ${FULL}` },
    });
    expect(foreign).toEqual({ status: 403, body: 'host evil.example is not this viewer' });
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`]) {
      const own = await rawRequest(`${viewer.url}api/me`, {
        method: 'GET',
        headers: { Host: host, Authorization: `Bearer ${FULL}` },
      });
      expect(own).toEqual({ status: 200, body: '{"role":"full"}' });
    }
  });
});
