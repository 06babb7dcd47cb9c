/** `agent-sessions history export <id> [file]` and `agent-sessions replay <files…>`. */
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import type * as TemporalWorker from '@temporalio/worker';
import { positionals, sessionIdArg, stringOpt } from '../args';
import { out, type Command } from '../command';
import { withSessions } from '../connect';
import { UsageError } from '../errors';
import { encryptionDataConverter, encryptionKeyIdsIn } from '../../codec';
import { loadConfig } from '../../worker/config';
import type * as History from '../../testing/history';

// Loaded only when a command runs: they pull in the Temporal worker, heavy for the other commands.
/* eslint-disable @typescript-eslint/no-require-imports */
const history = () => require('../../testing/history') as typeof History;
const temporalWorker = () => require('@temporalio/worker') as typeof TemporalWorker;
/* eslint-enable @typescript-eslint/no-require-imports */

export const historyCommand: Command = {
  name: 'history',
  summary: 'history export <id> [file]: write a session’s Temporal history as JSON (stdout without a file)',
  usage: 'agent-sessions history export <id> [file]',
  details:
    'The history of the session’s current run, in Temporal’s JSON history format; `replay` reads it back.',
  options: {},
  connects: true,
  async run(p) {
    const [action, id, file] = positionals(p, ['action', 'id', 'file'], { optional: 1 });
    if (action !== 'export') throw new UsageError(`unknown history action "${action}" (expected: export)`);
    const sessionId = sessionIdArg(id);
    return withSessions(p, async (sessions) => {
      const json = await history().exportHistory(sessions.client, sessionId, file);
      if (file) out(`wrote the history of session ${sessionId} to ${file}`);
      else out(json);
      return 0;
    });
  },
};

export const replayCommand: Command = {
  name: 'replay',
  summary: 'replay exported histories (files or folders of *.json) with the current workflow code',
  usage: 'agent-sessions replay <files…> [--workflows PATH]',
  details: [
    'Exit code 1 when any history fails to replay (a determinism error means the code changed incompatibly).',
    'options:',
    '  --workflows PATH  the workflows module to replay with (default: agent-sessions’ own)',
  ].join('\n'),
  options: { workflows: { type: 'string' } },
  async run(p) {
    if (!p.positionals.length) throw new UsageError('missing <files…>');
    const missing = p.positionals.find((f) => !existsSync(f));
    if (missing) throw new UsageError(`no such file: ${missing}`);
    const workflowsPath = stringOpt(p, 'workflows');
    const { Runtime, DefaultLogger, makeTelemetryFilterString } = temporalWorker();
    // Keep the SDK's logs (bundling, replay workers, the failed task a bad history causes) off the output.
    Runtime.install({
      logger: new DefaultLogger('ERROR'),
      telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'ERROR', other: 'ERROR' }) } },
    });
    const h = history();
    // The SDK's replay worker hangs on a history that does not open with a started event carrying its run id:
    // refuse such a file before replaying anything.
    for (const file of p.positionals.flatMap(historyFiles)) {
      const first = h.readHistoryFile(file).events?.[0];
      if (!first?.workflowExecutionStartedEventAttributes?.originalExecutionRunId) {
        throw new Error(
          `${file}: not a replayable history: the first event must be WorkflowExecutionStarted with its run id`,
        );
      }
    }
    // An encrypted history replays with the environment's keys (the same ones the client and worker use); one
    // whose keys are not configured is reported as such, not replayed into a confusing determinism error.
    const keyring = loadConfig(process.env).encryption;
    const configured = new Set(
      keyring ? [keyring.current, ...(keyring.previous ?? [])].map((k) => k.id) : [],
    );
    const files = p.positionals.flatMap(historyFiles).map((f) => path.resolve(f));
    let failures: { file: string; error: Error }[] = [];
    const replayable: string[] = [];
    for (const file of files) {
      const missing = encryptionKeyIdsIn(h.readHistoryFile(file)).filter((id) => !configured.has(id));
      if (missing.length === 0) replayable.push(file);
      else
        failures.push({
          file,
          error: new UsageError(
            `payload encrypted with key ${missing.map((id) => `"${id}"`).join(', ')}, which is not configured: set AGENT_SESSIONS_ENCRYPTION_KEY (and AGENT_SESSIONS_ENCRYPTION_OLD_KEYS) to the keys that encrypted it`,
          ),
        });
    }
    const options = {
      ...(workflowsPath ? { workflowsPath } : {}),
      ...(keyring ? { worker: { dataConverter: encryptionDataConverter(keyring) } } : {}),
    };
    if (replayable.length) {
      try {
        await h.replayHistoryFiles(replayable, options);
      } catch (err) {
        if (!(err instanceof h.HistoryReplayError)) throw err;
        failures = [...failures, ...err.failures];
      }
    }
    for (const file of files) {
      const failure = failures.find((f) => f.file === file);
      out(
        failure
          ? `FAIL ${file}: ${failure.error instanceof UsageError ? '' : `${failure.error.name}: `}${briefly(failure.error.message)}`
          : `ok   ${file}`,
      );
    }
    out(`${files.length - failures.length} replayed, ${failures.length} failed`);
    return failures.length ? 1 : 0;
  },
};

/** A history file itself, or the `*.json` files directly in a folder (as the replay reads them). */
function historyFiles(entry: string): string[] {
  if (!statSync(entry).isDirectory()) return [path.resolve(entry)];
  return readdirSync(entry)
    .filter((name) => name.endsWith('.json'))
    .sort()
    .map((name) => path.resolve(entry, name));
}

/** The core of a replay error: the SDK's coded message (e.g. "[TMPRL1100] Nondeterminism error: …") when present. */
function briefly(message: string): string {
  const coded = /\[TMPRL\d+\][^"]*/.exec(message)?.[0];
  return (coded ?? message.split('\n')[0] ?? message).trim();
}
