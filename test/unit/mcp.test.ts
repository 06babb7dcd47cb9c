/**
 * The pure parts of MCP tools (issue 18): the names a model sees, the selectors sessions use, the mapping of a
 * `tools/call` result to a `tool/result`, and the worker's MCP configuration (errors name the field). No server.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { mcpServersFromFile, resolveMcpServers } from '../../src/activities/mcp/config';
import {
  collisions,
  MODEL_TOOL_NAME,
  modelToolName,
  parseSelector,
  SERVER_NAME_PATTERN,
  serverOf,
} from '../../src/activities/mcp/names';
import { mapCallResult } from '../../src/activities/mcp/results';
import { McpTools } from '../../src/activities/mcp/tools';

describe('MCP tool names', () => {
  it('the model sees <server>__<tool>, valid for every provider', () => {
    expect(modelToolName('fs', 'read_text_file')).toBe('fs__read_text_file');
    expect(modelToolName('docs', 'search.v2 beta')).toBe('docs__search_v2_beta');
    const long = modelToolName('server', 'x'.repeat(100));
    expect(long).toMatch(MODEL_TOOL_NAME);
    expect(long).toHaveLength(64);
    expect(long).not.toBe(modelToolName('server', `${'x'.repeat(99)}y`)); // the hash keeps long names apart
    for (const n of [long, modelToolName('a-b_c', 'ü/€?')]) expect(n).toMatch(MODEL_TOOL_NAME);
  });

  it('server names cannot contain "__", so a model-visible name splits back at its first "__"', () => {
    for (const ok of ['fs', 'my_fs', 'a-b', 'A1']) expect(ok).toMatch(SERVER_NAME_PATTERN);
    for (const bad of ['a__b', '_a', 'a_', '', 'a.b', 'x'.repeat(33)])
      expect(bad).not.toMatch(SERVER_NAME_PATTERN);
    expect(serverOf('my_fs__read__file')).toBe('my_fs');
    expect(serverOf('echo')).toBeUndefined();
  });

  it('selectors: mcp:<server> and mcp:<server>/<tool>', () => {
    expect(parseSelector('mcp:fs')).toEqual({ server: 'fs' });
    expect(parseSelector('mcp:fs/read_text_file')).toEqual({ server: 'fs', tool: 'read_text_file' });
    expect(parseSelector('echo')).toBeUndefined();
  });

  it('collisions: two tools of one server, or a native tool, claiming one name', () => {
    expect(
      collisions([
        { server: 'fs', tool: 'a.b' },
        { server: 'fs', tool: 'a_b' },
        { server: 'fs', tool: 'c' },
      ]),
    ).toEqual([{ name: 'fs__a_b', claimedBy: ['fs/a.b', 'fs/a_b'] }]);
    expect(collisions([{ server: 'fs', tool: 'c' }], ['fs__c'])).toEqual([
      { name: 'fs__c', claimedBy: ['native tool', 'fs/c'] },
    ]);
  });

  it("a worker refuses a native tool named like a configured server's tools", () => {
    expect(() => new McpTools({ fs: { command: 'x' } }, ['echo', 'fs__read'])).toThrow(
      /tool "fs__read": native tool names must not start with "<server>__"/,
    );
    expect(() => new McpTools({ fs: { command: 'x' } }, ['web__read'])).not.toThrow();
  });
});

describe('MCP call results', () => {
  it('text verbatim; structuredContent as its JSON unless a text block carries it; images, audio and resources as blocks', () => {
    expect(mapCallResult({ content: [{ type: 'text', text: 'hi' }] }, 't')).toEqual({
      content: [{ type: 'text', text: 'hi' }],
    });
    expect(
      mapCallResult({ content: [{ type: 'text', text: '{"a": 1}' }], structuredContent: { a: 1 } }, 't')
        .content,
    ).toEqual([{ type: 'text', text: '{"a": 1}' }]);
    expect(mapCallResult({ content: [], structuredContent: { a: 1 } }, 't').content).toEqual([
      { type: 'text', text: '{"a":1}' },
    ]);
    expect(
      mapCallResult(
        {
          content: [
            { type: 'image', data: 'AAAA', mimeType: 'image/png' },
            { type: 'audio', data: 'AAA=', mimeType: 'audio/wav' },
            { type: 'resource_link', uri: 'file:///a.txt', name: 'a' },
            { type: 'resource', resource: { uri: 'file:///b.txt', text: 'bee' } },
            {
              type: 'resource',
              resource: { uri: 'file:///c.bin', mimeType: 'application/zip', blob: 'AAAAAA==' },
            },
          ],
        },
        't',
      ).content,
    ).toEqual([
      { type: 'image', mimeType: 'image/png', data: 'AAAA' },
      { type: 'audio', mimeType: 'audio/wav', data: 'AAA=' },
      { type: 'resource', uri: 'file:///a.txt', name: 'a' },
      { type: 'resource', uri: 'file:///b.txt', text: 'bee' },
      { type: 'resource', uri: 'file:///c.bin', mimeType: 'application/zip', data: 'AAAAAA==' },
    ]);
  });

  it('maps unknown block types and malformed blocks to text saying so; binary past 1 MiB per result is described', () => {
    const big = 'A'.repeat(1_000_000); // 750,000 bytes decoded
    expect(
      mapCallResult(
        {
          content: [
            { type: 'hologram', data: 'x' },
            { type: 'image', data: 'not base64!', mimeType: 'image/png' },
            { type: 'image', data: big, mimeType: 'image/png' },
            { type: 'audio', data: big, mimeType: 'audio/wav' },
            { type: 'image', data: 'AAAA', mimeType: 'image/gif' },
          ],
        },
        't',
      ).content.map((b) => (b.type === 'text' ? b.text : b)),
    ).toEqual([
      '[hologram content]',
      '[image block refused: data: base64 (A-Z a-z 0-9 + / and = padding)]',
      { type: 'image', mimeType: 'image/png', data: big },
      '[audio audio/wav, 732.4 KB: left out, over the limit of 1.0 MB of binary content per tool result]',
      { type: 'image', mimeType: 'image/gif', data: 'AAAA' },
    ]);
  });

  it('isError is a TOOL_FAILED error the model reads; an empty result is one empty text block', () => {
    expect(
      mapCallResult({ isError: true, content: [{ type: 'text', text: 'no such file' }] }, 'fs__read'),
    ).toEqual({
      content: [{ type: 'text', text: 'no such file' }],
      error: { code: 'TOOL_FAILED', message: 'fs__read reported an error: no such file' },
    });
    expect(mapCallResult({ content: [] }, 't')).toEqual({ content: [{ type: 'text', text: '' }] });
  });
});

describe('MCP configuration', () => {
  it('stdio and HTTP servers; ${VAR} in env and headers reads the environment', () => {
    const servers = resolveMcpServers(
      {
        fs: { command: 'npx', args: ['server'], env: { ROOT: '/srv/${WHO}' } },
        web: { url: 'https://x.example/mcp', headers: { Authorization: 'Bearer ${TOKEN}', 'X-Static': 'v' } },
      },
      { TOKEN: 's3cret', WHO: 'me' },
    );
    expect(servers).toEqual({
      fs: { command: 'npx', args: ['server'], env: { ROOT: '/srv/me' } },
      web: { url: 'https://x.example/mcp', headers: { Authorization: 'Bearer s3cret', 'X-Static': 'v' } },
    });
  });

  it('errors name the field', () => {
    expect(() => resolveMcpServers({ web: { url: 'https://x', headers: { A: '${NOPE}' } } }, {})).toThrow(
      'mcpServers.web.headers.A: environment variable NOPE is not set',
    );
    expect(() => resolveMcpServers({ a__b: { command: 'x' } }, {})).toThrow(
      /mcpServers\.a__b: server names are/,
    );
    expect(() => resolveMcpServers({ fs: { command: 'x', url: 'http://a' } }, {})).toThrow(
      /mcpServers\.fs: /,
    );
    expect(() => resolveMcpServers({ fs: { url: 'ftp://a' } }, {})).toThrow(/mcpServers\.fs/);
  });

  it('AGENT_SESSIONS_MCP_FILE: {"mcpServers": {...}}; a bad file names itself and the field', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'mcp-config-'));
    try {
      const file = path.join(dir, 'mcp.json');
      writeFileSync(
        file,
        JSON.stringify({ mcpServers: { fs: { command: 'node', args: ['s.js'], cwd: '/tmp' } } }),
      );
      expect(mcpServersFromFile(file, {})).toEqual({ fs: { command: 'node', args: ['s.js'], cwd: '/tmp' } });
      writeFileSync(file, JSON.stringify({ mcpServers: { fs: { command: 'node', args: 'oops' } } }));
      expect(() => mcpServersFromFile(file, {})).toThrow(
        `AGENT_SESSIONS_MCP_FILE ${file}: invalid mcpServers.fs.args: Invalid input: expected array`,
      );
      writeFileSync(file, JSON.stringify({ servers: {} }));
      expect(() => mcpServersFromFile(file, {})).toThrow(/invalid mcpServers: .*expected record/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
