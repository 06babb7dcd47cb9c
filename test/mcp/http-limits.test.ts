/**
 * The MCP HTTP server's request-body cap over real HTTP (serveSessionsMcpHttp on a loopback port with a stand-in
 * SessionClient that nothing here reaches; no Temporal): with the token, a body announced or streamed past
 * MCP_MAX_BODY_BYTES is answered 413 naming the limit before the client has sent it all; without the token, 401
 * before the body is read. The full server (tools, Host and Origin checks) is in server.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionClient } from '../../src/client';
import { MCP_MAX_BODY_BYTES, serveSessionsMcpHttp, type SessionsMcpHttpServer } from '../../src/mcp/http';
import { streamingPost } from '../support/streamingPost';

const TOKEN = 'mcp-test-token-0123456789';
const HEADERS = {
  Authorization: `Bearer ${TOKEN}`,
  'Content-Type': 'application/json',
  Accept: 'application/json, text/event-stream',
};
const MiB = 1024 * 1024;

let server: SessionsMcpHttpServer;

beforeAll(async () => {
  server = await serveSessionsMcpHttp({} as SessionClient, { port: 0, token: TOKEN });
});

afterAll(async () => {
  await server?.close();
});

describe('the MCP HTTP server caps request bodies before reading them', () => {
  it.each([
    ['whose Content-Length passes the cap', true],
    ['streamed (chunked) past the cap', false],
  ])('answers 413 naming the limit to a body %s, before it is all sent', async (_, announce) => {
    expect(MCP_MAX_BODY_BYTES).toBe(4 * MiB);
    const answer = await streamingPost(server.url, { headers: HEADERS, total: 32 * MiB, announce });
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body)).toMatchObject({
      jsonrpc: '2.0',
      error: { message: `Payload Too Large: Request body must not exceed ${MCP_MAX_BODY_BYTES} bytes` },
    });
    expect(answer.sent).toBeLessThan(answer.total);
  });

  it('answers 401 to a body without the token, before it is all sent', async () => {
    const { Authorization: _, ...noToken } = HEADERS;
    const answer = await streamingPost(server.url, { headers: noToken, total: 32 * MiB, announce: true });
    expect(answer.status).toBe(401);
    expect(answer.sent).toBeLessThan(answer.total);
  });
});
