/**
 * `agent-sessions mcp [--http [--port N] [--token T]]`: the sessions as an MCP server (src/mcp) until the client
 * leaves or Ctrl-C. Over stdio (the default) stdout carries the protocol alone: every line this command writes goes
 * to stderr. Over HTTP it listens on 127.0.0.1 behind a bearer token (`--token`, else AGENT_SESSIONS_MCP_TOKEN, else
 * a random one printed to stderr).
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { defaultTokensFile, TokenStore } from '../../access/tokens';
import { randomToken, serveSessionsMcpHttp } from '../../mcp/http';
import { createSessionsMcpServer } from '../../mcp/server';
import { boolOpt, intOpt, positionals, stringOpt } from '../args';
import type { Command } from '../command';
import { connectSessions, resolveTarget } from '../connect';
import { CliError, UsageError } from '../errors';

export const DEFAULT_MCP_PORT = 8765;
export const MCP_TOKEN_VAR = 'AGENT_SESSIONS_MCP_TOKEN';

export const mcpCommand: Command = {
  name: 'mcp',
  summary: 'serve sessions as MCP tools (stdio, or streamable HTTP on 127.0.0.1 with a token) until Ctrl-C',
  usage: 'agent-sessions mcp [--http] [--port N] [--token T]',
  details: [
    'options:',
    '  --http        streamable HTTP on http://127.0.0.1:PORT/mcp instead of stdio',
    `  --port N      HTTP port (default ${DEFAULT_MCP_PORT}; 0 picks a free one)`,
    `  --token T     bearer token HTTP clients must send (env ${MCP_TOKEN_VAR}; default: a random one, printed to stderr)`,
    '              scoped tokens (agent-sessions token issue) are accepted too, each limited to its tenant',
    'Tools: start_session, followup, steer, inject, state, events, transcript, wait_for_turn, cancel, dispose',
    '(docs/mcp-server.md). Over stdio nothing but the protocol goes to stdout; messages go to stderr.',
  ].join('\n'),
  options: { http: { type: 'boolean' }, port: { type: 'string' }, token: { type: 'string' } },
  connects: true,
  async run(p) {
    positionals(p, []);
    const http = boolOpt(p, 'http');
    const portArg = intOpt(p, 'port');
    const tokenArg = stringOpt(p, 'token');
    if (!http && (portArg !== undefined || tokenArg !== undefined))
      throw new UsageError(`--${portArg !== undefined ? 'port' : 'token'} needs --http`);
    const port = portArg ?? DEFAULT_MCP_PORT;
    if (port > 65_535) throw new UsageError(`invalid --port "${port}": 0–65535`);
    const envToken = process.env[MCP_TOKEN_VAR]?.trim() || undefined;
    const token = tokenArg ?? envToken;
    if (token !== undefined && token.length < 16)
      throw new UsageError(
        `invalid ${tokenArg !== undefined ? '--token' : MCP_TOKEN_VAR}: at least 16 characters (e.g. openssl rand -hex 24)`,
      );

    const target = resolveTarget(p);
    const { sessions, close } = await connectSessions(target);
    try {
      if (!http) {
        const server = createSessionsMcpServer(sessions);
        const closed = new Promise<void>((resolve) => {
          server.server.onclose = resolve;
          process.stdin.once('end', resolve);
          process.once('SIGINT', resolve);
          process.once('SIGTERM', resolve);
        });
        await server.connect(new StdioServerTransport());
        log(`stdio, Temporal ${target.address} namespace=${target.namespace} task-queue=${target.taskQueue}`);
        await closed;
        await server.close();
        return 0;
      }
      const secret = token ?? randomToken();
      const scopedTokens = new TokenStore(defaultTokensFile());
      const served = await serveSessionsMcpHttp(sessions, { port, token: secret, scopedTokens }).catch(
        (err: NodeJS.ErrnoException) => {
          throw new CliError(`cannot listen on 127.0.0.1:${port}: ${err.code ?? err.message}`);
        },
      );
      log(
        `${served.url} Temporal ${target.address} namespace=${target.namespace} task-queue=${target.taskQueue}` +
          (token === undefined ? '' : ` (token from ${tokenArg !== undefined ? '--token' : MCP_TOKEN_VAR})`),
      );
      if (token === undefined) log(`token (random, for this run): ${secret}`);
      log(`scoped tokens from ${scopedTokens.file} (agent-sessions token issue)`);
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await served.close();
      return 0;
    } finally {
      await close();
    }
  },
};

function log(line: string): void {
  process.stderr.write(`agent-sessions mcp: ${line}\n`);
}
