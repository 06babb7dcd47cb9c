/**
 * How a turn's end reason reads to a person, in one line: the words every surface shows (the CLI's transcript and
 * `ask`, the Temporal UI's current details, the web viewer through its server). One function, so they say the same.
 * Pure and deterministic (the workflow's current details use it).
 */
import type { TurnEndReason } from './events';

/**
 * A turn's end reason in one line: `completed`, `max-tokens`, `aborted (user)`, `aborted (hook: <reason>)`,
 * `blocked`, `blocked: <message>`, `error <CODE>: <message>`. `maxChars` cuts the free text (a message, a hook's
 * reason) to at most that many characters, ending in `…`.
 */
export function turnEndText(reason: TurnEndReason, maxChars = Infinity): string {
  const cut = (text: string) => (text.length <= maxChars ? text : `${text.slice(0, maxChars - 1)}…`);
  switch (reason.kind) {
    case 'completed':
    case 'max-tokens':
      return reason.kind;
    case 'aborted':
      return `aborted (${reason.reason.kind === 'hook' ? `hook: ${cut(reason.reason.reason)}` : reason.reason.kind})`;
    case 'blocked':
      return reason.message ? `blocked: ${cut(reason.message)}` : 'blocked';
    case 'error':
      return `error ${reason.error.code}: ${cut(reason.error.message)}`;
  }
}
