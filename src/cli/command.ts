/** The shape of a subcommand: its help, its options, and what it runs. */
import type { OptionSpec, Parsed } from './args';

export interface Command {
  name: string;
  /** One line for the command list. */
  summary: string;
  /** The usage line, e.g. `agent-sessions state <id> [--json]`. */
  usage: string;
  /** Option and argument descriptions shown by `--help`. */
  details?: string;
  options: OptionSpec;
  /** Accepts --address/--namespace/--task-queue (and shows their help). */
  connects?: boolean;
  /** Runs with the parsed arguments; returns the exit code. Throws UsageError for bad arguments. */
  run(p: Parsed): Promise<number>;
}

/** Writes one line to stdout. */
export function out(line = ''): void {
  process.stdout.write(`${line}\n`);
}
