/** Errors of the command line: a UsageError becomes a one-line message and exit code 2. */

/** A bad argument or option; the message names it. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** A failure the CLI explains in one line (exit code 1), without a stack. */
export class CliError extends Error {
  override name = 'CliError';
}
