/**
 * `agent-sessions watch <id>`: prints the session's log so far and then follows new events live, rendered like the
 * `dev` chat, or one JSON event per line with `--json`; with `--stream`, the running step's text as it is written.
 * Ends when the session is disposed or on Ctrl-C.
 */
import { setMaxListeners } from 'node:events';
import { boolOpt, intOpt, positionals, sessionIdArg } from '../args';
import { out, type Command } from '../command';
import { withSessions } from '../connect';
import { TranscriptRenderer } from '../render';
import { useColor } from '../tty';

export const watchCommand: Command = {
  name: 'watch',
  summary: 'print the session log and follow new events live (until disposed or Ctrl-C)',
  usage: 'agent-sessions watch <id> [--stream] [--json] [--after SEQ]',
  details: [
    'options:',
    '  --json         one JSON event per line ({seq, type, time, data}) instead of the rendered transcript',
    '  --after SEQ    start after this seq (default: the whole log, then live)',
    '  --stream       show the answer as the model writes it (with --json: `delta` lines too)',
  ].join('\n'),
  options: { json: { type: 'boolean' }, after: { type: 'string' }, stream: { type: 'boolean' } },
  connects: true,
  async run(p) {
    const [id] = positionals(p, ['id']);
    const sessionId = sessionIdArg(id);
    const afterSeq = intOpt(p, 'after', -1) ?? -1;
    const json = boolOpt(p, 'json');
    const stream = boolOpt(p, 'stream');
    const abort = new AbortController();
    // SessionClient.watch adds an abort listener per idle poll (removed only on abort): do not warn about it.
    setMaxListeners(0, abort.signal);
    const stop = () => abort.abort();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    try {
      return await withSessions(p, async (sessions) => {
        // Fail fast on a session that does not exist (watch itself would poll it forever).
        await sessions.state(sessionId);
        const renderer = new TranscriptRenderer({
          color: useColor(process.stdout),
          width: process.stdout.columns ?? 100,
        });
        const items = stream
          ? sessions.stream(sessionId, { afterSeq, signal: abort.signal })
          : sessions.watch(sessionId, { afterSeq, signal: abort.signal });
        for await (const item of items) {
          if (json) {
            if (item.kind === 'event') out(JSON.stringify(item.event));
            else if (item.kind === 'delta') out(JSON.stringify(item));
          } else if (item.kind === 'delta') {
            process.stdout.write(renderer.renderDelta(item));
          } else {
            for (const line of renderer.render(item)) out(line);
          }
        }
        return 0;
      });
    } finally {
      process.removeListener('SIGINT', stop);
      process.removeListener('SIGTERM', stop);
    }
  },
};
