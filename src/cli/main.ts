/**
 * The `agent-sessions` command line: one small module per subcommand over the client and the worker.
 * Exit codes: 0 success, 1 failure (one line naming what went wrong), 2 bad usage (a one-line error naming the
 * argument). Every command answers `--help`.
 */
import { InvalidInputError } from '../client';
import { parse } from './args';
import type { Command } from './command';
import { approveCommand, denyCommand } from './commands/approve';
import { askCommand } from './commands/ask';
import { budgetCommand } from './commands/budget';
import { cancelCommand, disposeCommand } from './commands/cancel';
import { codecServerCommand } from './commands/codec-server';
import { laneCommand } from './commands/deliver';
import { listCommand } from './commands/list';
import { mcpCommand } from './commands/mcp';
import { usageCommand } from './commands/usage';
import { devCommand } from './commands/dev';
import { historyCommand, replayCommand } from './commands/history';
import { forkCommand } from './commands/fork';
import { eventsCommand, stateCommand, transcriptCommand } from './commands/read';
import { scheduleCommand } from './commands/schedule';
import { setupCommand } from './commands/setup';
import { startCommand } from './commands/start';
import { tokenCommand } from './commands/token';
import { uiCommand } from './commands/ui';
import { upgradeCommand } from './commands/upgrade';
import { checkCommand } from './commands/check';
import { promoteCommand, rampCommand, rollbackCommand, versionsCommand } from './commands/versions';
import { watchCommand } from './commands/watch';
import { workerCommand } from './commands/worker';
import { CONNECTION_HELP, CONNECTION_OPTIONS } from './connect';
import { UsageError } from './errors';

export { UsageError, CliError } from './errors';

const LIST: Command[] = [
  devCommand,
  setupCommand,
  workerCommand,
  startCommand,
  forkCommand,
  laneCommand('followup'),
  laneCommand('steer'),
  laneCommand('inject'),
  askCommand,
  approveCommand,
  denyCommand,
  budgetCommand,
  cancelCommand,
  disposeCommand,
  upgradeCommand,
  versionsCommand,
  checkCommand,
  promoteCommand,
  rampCommand,
  rollbackCommand,
  listCommand,
  usageCommand,
  scheduleCommand,
  watchCommand,
  uiCommand,
  tokenCommand,
  eventsCommand,
  stateCommand,
  transcriptCommand,
  historyCommand,
  replayCommand,
  codecServerCommand,
  mcpCommand,
];

export const COMMANDS: Record<string, Command> = Object.fromEntries(LIST.map((c) => [c.name, c]));

function help(): string {
  const lines = LIST.map((c) => `  ${c.name.padEnd(12)} ${c.summary}`);
  return [
    'usage: agent-sessions <command> [arguments]',
    '',
    'commands:',
    ...lines,
    '',
    'Run `agent-sessions <command> --help` for a command’s arguments and options.',
  ].join('\n');
}

export function commandHelp(c: Command): string {
  return [
    `usage: ${c.usage}`,
    '',
    c.summary,
    ...(c.details ? ['', c.details] : []),
    ...(c.connects ? ['', CONNECTION_HELP] : []),
  ].join('\n');
}

/** Runs the CLI with the given arguments and returns the exit code. */
export async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    const topic = name === 'help' ? args[0] : undefined;
    const c = topic ? COMMANDS[topic] : undefined;
    if (topic && !c) {
      console.error(`agent-sessions: unknown command "${topic}" (see agent-sessions --help)`);
      return 2;
    }
    console.log(c ? commandHelp(c) : help());
    return 0;
  }
  const command = COMMANDS[name];
  if (!command) {
    console.error(`agent-sessions: unknown command "${name}" (see agent-sessions --help)`);
    return 2;
  }
  if (args.includes('--help') || args.includes('-h')) {
    console.log(commandHelp(command));
    return 0;
  }
  try {
    const parsed = parse(args, { ...command.options, ...(command.connects ? CONNECTION_OPTIONS : {}) });
    return await command.run(parsed);
  } catch (err) {
    if (err instanceof UsageError || err instanceof InvalidInputError) {
      console.error(`agent-sessions ${name}: ${err.message} (see agent-sessions ${name} --help)`);
      return 2;
    }
    console.error(`agent-sessions ${name}: ${oneLine(err)}`);
    return 1;
  }
}

/**
 * The error in one line, with the messages of its causes when they add something (a gRPC status under Temporal's
 * "Failed to start Workflow", a TLS error under "Failed to connect").
 */
function oneLine(err: unknown): string {
  const first = (e: unknown) => {
    const message = e instanceof Error ? e.message : String(e);
    return message.split('\n')[0] ?? message;
  };
  const parts = [first(err)];
  let cause = err instanceof Error ? err.cause : undefined;
  for (let depth = 0; cause !== undefined && depth < 3; depth++) {
    const message = first(cause);
    if (message && !parts.some((p) => p.includes(message))) parts.push(message);
    cause = cause instanceof Error ? cause.cause : undefined;
  }
  return parts.join(': ');
}
