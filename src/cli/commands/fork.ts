/**
 * `agent-sessions fork <sourceId> <newId> [--through SEQ] [--model M] [--tools a,b] [--system TEXT] [--labels a,b]`:
 * a new session that starts from the source's transcript up to a turn boundary (SessionClient.fork).
 */
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { ForkOptions } from '../../client';
import { intOpt, positionals, sessionIdArg } from '../args';
import { out, type Command } from '../command';
import { withSessions } from '../connect';
import { CliError } from '../errors';
import { configFrom } from './start';

export const forkCommand: Command = {
  name: 'fork',
  summary: 'start a new session from another’s transcript up to a turn boundary (the source is untouched)',
  usage:
    'agent-sessions fork <sourceId> <newId> [--through SEQ] [--model M | --script S] [--tools a,b] [--system TEXT] [--labels a,b]',
  details: [
    'The new session gets the source’s config and its model-visible messages up to the end of a turn, frozen in its',
    'own history (session/forked); its inbox starts empty. The source may have continued as new or be disposed.',
    'options:',
    '  --through SEQ  the seq of a turn/end of the source (see `agent-sessions events <id>`; default: the last)',
    '  --model M, --script S, --tools LIST, --system TEXT, --labels LIST   change the copied config (as for `start`)',
  ].join('\n'),
  options: {
    through: { type: 'string' },
    model: { type: 'string' },
    script: { type: 'string' },
    tools: { type: 'string' },
    system: { type: 'string' },
    labels: { type: 'string' },
  },
  connects: true,
  async run(p) {
    const [source, target] = positionals(p, ['sourceId', 'newId']);
    const sourceId = sessionIdArg(source);
    const newId = sessionIdArg(target);
    const through = intOpt(p, 'through', 0);
    // The config changes are `start`'s options, parsed the same way (--script makes a scripted model).
    const { model, tools, system, labels } = configFrom(p);
    const options: ForkOptions = {
      newId,
      ...(through !== undefined ? { throughSeq: through } : {}),
      ...(model ? { model } : {}),
      ...(tools ? { tools } : {}),
      ...(system !== undefined ? { system } : {}),
      ...(labels ? { labels } : {}),
    };
    return withSessions(p, async (sessions) => {
      try {
        const r = await sessions.fork(sourceId, options);
        out(`forked ${r.from} at seq ${r.throughSeq} into ${r.sessionId} (${r.messages} messages)`);
        return 0;
      } catch (err) {
        if (err instanceof WorkflowExecutionAlreadyStartedError)
          throw new CliError(`session ${newId} already exists`);
        throw err;
      }
    });
  },
};
