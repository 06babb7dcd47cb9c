/**
 * `agent-sessions followup|steer|inject <id> <text…>`: sends a message on a lane by signal (fire and forget; prints
 * the message id), or with `--ack` through the `deliver` update (prints the session's receipt as JSON).
 */
import { readFileSync } from 'node:fs';
import type { MessageInput } from '../../domain/messages';
import { MAX_REFS_PER_MESSAGE, type SessionRef } from '../../domain/sessionRefs';
import type { Lane } from '../../domain/wire';
import { boolOpt, CLI_SOURCE, parseSource, sessionIdArg, stringOpt, type Parsed } from '../args';
import { out, type Command } from '../command';
import { withSessions } from '../connect';
import { UsageError } from '../errors';

const WHAT: Record<Lane, string> = {
  followup: 'queue a prompt that gets its own turn (wakes the session)',
  steer: 'deliver a message at the next step boundary (wakes the session)',
  inject: 'add context for the next step (does not wake the session)',
};

export function laneCommand(lane: Lane): Command {
  return {
    name: lane,
    summary: WHAT[lane],
    usage: `agent-sessions ${lane} <id> <text…> [--source KIND[:NAME]] [--id MESSAGE_ID]${lane === 'inject' ? '' : ' [--ref SESSION[@SEQ]]…'} [--ack]`,
    details: [
      'arguments:',
      '  <text…>        the message; several words are joined with spaces; "-" reads it from stdin',
      'options:',
      `  --source S     who produced it: user, plugin:NAME, tool:CALL_ID or KIND[:NAME] (default ${lane === 'inject' ? 'plugin:cli' : 'user'})`,
      '  --id ID        message id (callers that may retry send their own; default a fresh uuid)',
      ...(lane === 'inject' ? [] : [REF_HELP]),
      '  --ack          deliver through the `deliver` update and print the receipt {messageId, lane, duplicate}',
    ].join('\n'),
    options: {
      source: { type: 'string' },
      id: { type: 'string' },
      ack: { type: 'boolean' },
      ...(lane === 'inject' ? {} : REF_OPTION),
    },
    connects: true,
    async run(p) {
      const sessionId = sessionIdArg(p.positionals[0]);
      const message = messageFrom(lane, p);
      return withSessions(p, async (sessions) => {
        if (boolOpt(p, 'ack')) {
          out(JSON.stringify(await sessions.deliver(sessionId, lane, message)));
        } else {
          out(await sessions[lane](sessionId, message));
        }
        return 0;
      });
    },
  };
}

/** `--ref`, repeatable, on the commands that send a direct message (docs/cli.md). */
export const REF_OPTION = { ref: { type: 'string', multiple: true } } as const;
export const REF_HELP = `  --ref S[@SEQ]  reference session S (through the turn ending at SEQ; default its last): a snapshot of its transcript enters before the message; repeatable, at most ${MAX_REFS_PER_MESSAGE}`;

/** Parses `SESSION[@SEQ]`: the seq is what follows the last "@" when it is all digits. */
export function parseRef(text: string): SessionRef {
  const at = text.lastIndexOf('@');
  const seq = at > 0 ? text.slice(at + 1) : '';
  if (/^\d+$/.test(seq)) return { session: text.slice(0, at), throughSeq: Number(seq) };
  if (!text) throw new UsageError('invalid --ref "": expected SESSION[@SEQ]');
  return { session: text };
}

export function messageFrom(lane: Lane, p: Parsed): MessageInput & { refs?: SessionRef[] } {
  const words = p.positionals.slice(1);
  if (!words.length) throw new UsageError('missing <text>');
  const content =
    words.length === 1 && words[0] === '-' ? readFileSync(0, 'utf8').replace(/\n$/, '') : words.join(' ');
  if (!content.trim()) throw new UsageError('the message text is empty');
  const sourceText = stringOpt(p, 'source');
  const source =
    sourceText !== undefined ? parseSource(sourceText) : lane === 'inject' ? { ...CLI_SOURCE } : undefined;
  const id = stringOpt(p, 'id');
  const refTexts = p.values.ref;
  const refs = Array.isArray(refTexts) ? refTexts.map(parseRef) : [];
  return {
    content,
    ...(source ? { source } : {}),
    ...(id !== undefined ? { id } : {}),
    ...(refs.length ? { refs } : {}),
  };
}
