/**
 * `agent-sessions ui`: the web session viewer (src/viewer) on 127.0.0.1, until Ctrl-C. Prints the page's address
 * with the access token (watch, send, approve, cancel) and with the read-only token (watch only); tokens come from
 * the options, else from the environment, else are generated for this run.
 */
import { randomBytes } from 'node:crypto';
import { intOpt, positionals, stringOpt } from '../args';
import { out, type Command } from '../command';
import { connectSessions, resolveTarget } from '../connect';
import { UsageError } from '../errors';
import { defaultTokensFile, TokenStore } from '../../access/tokens';
import { DEFAULT_VIEWER_PORT, startViewer, validateViewerOptions } from '../../viewer/server';

const newToken = () => randomBytes(18).toString('base64url');

export const uiCommand: Command = {
  name: 'ui',
  summary: 'serve the web session viewer on 127.0.0.1 (list, live transcript, composer, approvals)',
  usage: 'agent-sessions ui [--port N] [--token T] [--read-token T]',
  details: [
    'options:',
    `  --port N          the port on 127.0.0.1 (default ${DEFAULT_VIEWER_PORT}; 0 picks a free one)`,
    '  --token T         the access token: watch, send, approve, cancel (default: $AGENT_SESSIONS_UI_TOKEN,',
    '                    else a new one for this run); at least 16 characters',
    '  --read-token T    a token that can only watch (default: $AGENT_SESSIONS_UI_READ_TOKEN, else a new one)',
    'Open the printed address: it carries the token once, the page keeps it in a cookie.',
    'Scoped tokens (`agent-sessions token issue`) from $AGENT_SESSIONS_TOKENS_FILE or the default file work too:',
    'open the address with ?token=<secret>.',
  ].join('\n'),
  options: { port: { type: 'string' }, token: { type: 'string' }, 'read-token': { type: 'string' } },
  connects: true,
  async run(p) {
    positionals(p, []);
    const port = intOpt(p, 'port', 0) ?? DEFAULT_VIEWER_PORT;
    if (port > 65535) throw new UsageError('--port: at most 65535');
    const token = stringOpt(p, 'token') ?? process.env.AGENT_SESSIONS_UI_TOKEN ?? newToken();
    const readToken = stringOpt(p, 'read-token') ?? process.env.AGENT_SESSIONS_UI_READ_TOKEN ?? newToken();
    try {
      validateViewerOptions({ token, readToken, port });
    } catch (err) {
      // The library names its fields (token, readToken, port); the command names its options.
      const message = (err as Error).message
        .replace(/^readToken:/, '--read-token:')
        .replace(/^token:/, '--token:');
      throw new UsageError(message);
    }
    const { sessions, close } = await connectSessions(resolveTarget(p));
    const scopedTokens = new TokenStore(defaultTokensFile());
    const viewer = await startViewer({ sessions, token, readToken, port, scopedTokens }).catch(
      async (err: unknown) => {
        await close();
        throw err;
      },
    );
    out(`agent-sessions viewer on ${viewer.url}`);
    out(`  full access: ${viewer.url}?token=${encodeURIComponent(token)}`);
    out(`  read-only:   ${viewer.url}?token=${encodeURIComponent(readToken)}`);
    out(`  scoped tokens from ${scopedTokens.file} (agent-sessions token issue)`);
    out('Ctrl-C stops it.');
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    await viewer.close();
    await close();
    return 0;
  },
};
