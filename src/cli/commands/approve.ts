/** `agent-sessions approve <id> <callId> [--reason TEXT]` and `agent-sessions deny …` (the `approve` update). */
import { positionals, sessionIdArg, stringOpt } from '../args';
import { out, type Command } from '../command';
import { withSessions } from '../connect';

function decisionCommand(decision: 'approve' | 'deny'): Command {
  const verb = decision === 'approve' ? 'approved' : 'denied';
  return {
    name: decision,
    summary:
      decision === 'approve'
        ? 'let a tool call that waits for approval run'
        : 'refuse a tool call that waits for approval (the model reads DENIED and the reason)',
    usage: `agent-sessions ${decision} <id> <callId> [--reason TEXT]`,
    details: [
      'The calls waiting are in `agent-sessions state <id>` (approvals) and in `watch`.',
      'options:',
      `  --reason TEXT  why (at most 4096 characters)${decision === 'deny' ? '; the model reads it' : ''}`,
    ].join('\n'),
    options: { reason: { type: 'string' } },
    connects: true,
    async run(p) {
      const [id, callId] = positionals(p, ['id', 'callId']);
      const sessionId = sessionIdArg(id);
      const reason = stringOpt(p, 'reason');
      return withSessions(p, async (sessions) => {
        const receipt = await sessions.approve(sessionId, callId!, decision, reason);
        out(
          receipt.duplicate
            ? `call ${callId} of session ${sessionId} was already ${verb}`
            : `${verb} call ${callId} of session ${sessionId}`,
        );
        return 0;
      });
    },
  };
}

export const approveCommand = decisionCommand('approve');
export const denyCommand = decisionCommand('deny');
