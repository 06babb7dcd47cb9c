/**
 * `agent-sessions dev` (what `npm start` runs): embedded dev server + worker + interactive chat on one session.
 * The program itself is in ../dev.ts, loaded only when the command runs (it pulls in the Temporal worker).
 */
import type * as Dev from '../dev';
import { intOpt, positionals, sessionIdArg, stringOpt } from '../args';
import { CHAT_HELP } from '../chat';
import { type Command } from '../command';
import { DEMO_SESSION } from '../demo';
import { PREFERRED_PORT } from '../devfile';

export const devCommand: Command = {
  name: 'dev',
  summary: 'embedded dev server + worker + interactive chat on one session (resumes it on the next run)',
  usage: 'agent-sessions dev [--session ID] [--data-dir DIR] [--port N] [--ui-port N] [--address HOST:PORT]',
  details: [
    'options:',
    `  --session ID     the session to chat with (env AGENT_SESSIONS_SESSION; default "${DEMO_SESSION}")`,
    '  --data-dir DIR   folder of the dev server SQLite file and dev.log (env AGENT_SESSIONS_DATA_DIR; default .data)',
    `  --port N         gRPC port of the embedded server (default ${PREFERRED_PORT} when free, else any free port)`,
    '  --ui-port N      also serve the Temporal Web UI on this port',
    '  --address H:P    use this Temporal server instead of the embedded one (env TEMPORAL_ADDRESS)',
    'A new session uses the offline scripted demo, or OpenAI when OPENAI_API_KEY is set and the worker has it.',
    'chat:',
    ...CHAT_HELP.map((l) => `  ${l}`),
  ].join('\n'),
  options: {
    session: { type: 'string' },
    'data-dir': { type: 'string' },
    port: { type: 'string' },
    'ui-port': { type: 'string' },
    address: { type: 'string' },
  },
  async run(p) {
    positionals(p, []);
    const env = process.env;
    const sessionId = sessionIdArg(
      stringOpt(p, 'session') ?? (env.AGENT_SESSIONS_SESSION?.trim() || DEMO_SESSION),
    );
    const dataDir = stringOpt(p, 'data-dir');
    const port = intOpt(p, 'port', 1);
    const uiPort = intOpt(p, 'ui-port', 1);
    const address = stringOpt(p, 'address');
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { runDev } = require('../dev') as typeof Dev;
    return runDev({
      sessionId,
      ...(dataDir !== undefined ? { dataDir } : {}),
      ...(port !== undefined ? { port } : {}),
      ...(uiPort !== undefined ? { uiPort } : {}),
      ...(address !== undefined ? { address } : {}),
    });
  },
};
