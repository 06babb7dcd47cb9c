/**
 * `agent-sessions ask <id> <text…>`: sends a message and waits, without polling, for the end of the turn it
 * entered (one `deliver` update with `wait`), then prints that turn's answer — or, with `--json`, the receipt with
 * its outcome. Exit 0 when the turn completed (or stopped at max-tokens), 1 when it ended otherwise, was discarded
 * by a cancel, or the wait timed out.
 */
import { TurnWaitTimeoutError } from '../../client';
import { turnEndText } from '../../domain/turnEnd';
import { MAX_WAIT_MS } from '../../domain/wire';
import { boolOpt, intOpt, sessionIdArg, stringOpt } from '../args';
import { out, type Command } from '../command';
import { withSessions } from '../connect';
import { UsageError } from '../errors';
import { messageFrom, REF_HELP, REF_OPTION } from './deliver';

export const askCommand: Command = {
  name: 'ask',
  summary: 'send a message and wait for the end of its turn; print the answer',
  usage:
    'agent-sessions ask <id> <text…> [--lane followup|steer] [--timeout MS] [--id MESSAGE_ID] [--ref SESSION[@SEQ]]… [--json]',
  details: [
    'arguments:',
    '  <text…>        the message; several words are joined with spaces; "-" reads it from stdin',
    'options:',
    '  --lane L       followup (default: its own turn) or steer (enters the running turn, or wakes the session)',
    `  --timeout MS   how long to wait for the turn to end (default 600000, at most ${MAX_WAIT_MS})`,
    '  --id ID        message id (send your own to retry safely; default a fresh uuid)',
    REF_HELP,
    '  --json         print the receipt with its outcome {status, turn, reason, seq, answer} as JSON',
  ].join('\n'),
  options: {
    lane: { type: 'string' },
    timeout: { type: 'string' },
    id: { type: 'string' },
    json: { type: 'boolean' },
    ...REF_OPTION,
  },
  connects: true,
  async run(p) {
    const sessionId = sessionIdArg(p.positionals[0]);
    const lane = stringOpt(p, 'lane') ?? 'followup';
    if (lane !== 'followup' && lane !== 'steer')
      throw new UsageError(`invalid --lane "${lane}": followup or steer (an inject never starts a turn)`);
    const timeoutMs = intOpt(p, 'timeout', 1);
    if (timeoutMs !== undefined && timeoutMs > MAX_WAIT_MS)
      throw new UsageError(`invalid --timeout "${timeoutMs}": at most ${MAX_WAIT_MS} ms`);
    const message = messageFrom(lane, p);
    return withSessions(p, async (sessions) => {
      let receipt;
      try {
        receipt = await sessions.ask(sessionId, message, {
          lane,
          ...(timeoutMs !== undefined ? { timeoutMs } : {}),
        });
      } catch (err) {
        if (!(err instanceof TurnWaitTimeoutError)) throw err;
        console.error(`agent-sessions ask: ${err.message}`);
        return 1;
      }
      const { outcome } = receipt;
      if (boolOpt(p, 'json')) out(JSON.stringify(receipt));
      else if (outcome.status === 'ended' && outcome.answer !== undefined) out(outcome.answer);
      if (outcome.status === 'discarded') {
        console.error(
          `agent-sessions ask: message ${receipt.messageId} was discarded by a cancel before its turn`,
        );
        return 1;
      }
      const kind = outcome.reason.kind;
      if (kind === 'completed' || kind === 'max-tokens') return 0;
      console.error(`agent-sessions ask: turn ${outcome.turn} ended: ${turnEndText(outcome.reason)}`);
      return 1;
    });
  },
};
