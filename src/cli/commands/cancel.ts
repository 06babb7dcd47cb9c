/** `agent-sessions cancel <id> [--keep-inbox]` and `agent-sessions dispose <id>` (signals). */
import { boolOpt, positionals, sessionIdArg } from '../args';
import { out, type Command } from '../command';
import { withSessions } from '../connect';

export const cancelCommand: Command = {
  name: 'cancel',
  summary: 'abort the running turn and discard pending messages (or keep them with --keep-inbox)',
  usage: 'agent-sessions cancel <id> [--keep-inbox]',
  details:
    'options:\n  --keep-inbox   abort only the running turn; pending messages stay and run after the next waking message',
  options: { 'keep-inbox': { type: 'boolean' } },
  connects: true,
  async run(p) {
    const [id] = positionals(p, ['id']);
    const sessionId = sessionIdArg(id);
    const keepInbox = boolOpt(p, 'keep-inbox');
    return withSessions(p, async (sessions) => {
      await sessions.cancel(sessionId, { cause: { kind: 'user' }, ...(keepInbox ? { keepInbox } : {}) });
      out(`cancel sent to session ${sessionId}${keepInbox ? ' (keeping the inbox)' : ''}`);
      return 0;
    });
  },
};

export const disposeCommand: Command = {
  name: 'dispose',
  summary: 'end a session for good: abort its turn, log session/disposed, complete the workflow',
  usage: 'agent-sessions dispose <id>',
  options: {},
  connects: true,
  async run(p) {
    const [id] = positionals(p, ['id']);
    const sessionId = sessionIdArg(id);
    return withSessions(p, async (sessions) => {
      await sessions.dispose(sessionId);
      out(`dispose sent to session ${sessionId}`);
      return 0;
    });
  },
};
