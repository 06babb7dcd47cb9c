/**
 * The `agent-sessions` command line: one small module per subcommand over the client and the worker.
 * Exit codes: 0 success, 1 failure, 2 bad usage (a one-line error naming the argument).
 */
import { runWorkerFromEnv } from '../worker';

export class UsageError extends Error {
  override name = 'UsageError';
}

type Command = { summary: string; usage: string; run(args: string[]): Promise<number> };

const COMMANDS: Record<string, Command> = {
  worker: {
    summary: 'run a worker for the agentSession workflow (needs TEMPORAL_ADDRESS)',
    usage: 'agent-sessions worker',
    async run(args) {
      if (args.length) throw new UsageError(`worker takes no arguments (got "${args[0]}")`);
      await runWorkerFromEnv();
      return 0;
    },
  },
};

function help(): string {
  const lines = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(10)} ${c.summary}`);
  return ['usage: agent-sessions <command> [arguments]', '', 'commands:', ...lines].join('\n');
}

/** Runs the CLI with the given arguments and returns the exit code. */
export async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    console.log(help());
    return 0;
  }
  const command = COMMANDS[name];
  if (!command) {
    console.error(`agent-sessions: unknown command "${name}" (see agent-sessions --help)`);
    return 2;
  }
  if (args.includes('--help') || args.includes('-h')) {
    console.log(`usage: ${command.usage}\n\n${command.summary}`);
    return 0;
  }
  try {
    return await command.run(args);
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`agent-sessions ${name}: ${err.message}`);
      return 2;
    }
    throw err;
  }
}
