/**
 * Argument parsing for every subcommand over node:util parseArgs, with its errors turned into one-line UsageErrors,
 * and the parsers of the values the commands share (message sources, model specs, tool lists, seq numbers).
 */
import { parseArgs } from 'node:util';
import type { MessageSource } from '../domain/messages';
import { LIMITS } from '../domain/messages';
import { isToolSelector } from '../domain/names';
import { parseModelRef, type ModelSpec } from '../domain/wire';
import { UsageError } from './errors';

export type OptionSpec = Record<string, { type: 'string' | 'boolean'; short?: string; multiple?: boolean }>;

export interface Parsed {
  positionals: string[];
  values: Record<string, string | boolean | string[] | undefined>;
}

/** Parses `args` with the options of a command; unknown options and missing values throw UsageError. */
export function parse(args: string[], options: OptionSpec): Parsed {
  try {
    const { values, positionals } = parseArgs({ args, options, strict: true, allowPositionals: true });
    return { positionals, values: values as Parsed['values'] };
  } catch (err) {
    throw new UsageError(describeParseError(err));
  }
}

function describeParseError(err: unknown): string {
  const e = err as { code?: string; message?: string };
  const message = e.message ?? String(err);
  const option = /'(-{1,2}[^' ]+)/.exec(message)?.[1];
  switch (e.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return `unknown option ${option ?? message}`;
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE':
      if (message.includes('ambiguous'))
        return `option ${option} needs a value (write ${option}=VALUE for one that starts with "-")`;
      if (message.includes('does not take an argument')) return `option ${option} takes no value`;
      return `option ${option ?? message} needs a value`;
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return `unexpected argument: ${message}`;
    default:
      return message.split('\n')[0] ?? message;
  }
}

export function stringOpt(p: Parsed, name: string): string | undefined {
  const v = p.values[name];
  return typeof v === 'string' ? v : undefined;
}

export function boolOpt(p: Parsed, name: string): boolean {
  return p.values[name] === true;
}

/** Exactly `names.length` positionals, named in the error when one is missing or extra. */
export function positionals(p: Parsed, names: string[], opts: { optional?: number } = {}): string[] {
  const required = names.length - (opts.optional ?? 0);
  if (p.positionals.length < required) throw new UsageError(`missing <${names[p.positionals.length]}>`);
  if (p.positionals.length > names.length)
    throw new UsageError(`unexpected argument "${p.positionals[names.length]}"`);
  return p.positionals;
}

/** A session id as Temporal workflow ids allow it here: printable, no spaces, at most 255 characters. */
export function sessionIdArg(value: string | undefined): string {
  if (!value) throw new UsageError('missing <id>');
  if (!/^[\x21-\x7e]{1,255}$/.test(value))
    throw new UsageError(
      `invalid session id "${value}": printable ASCII without spaces, at most 255 characters`,
    );
  return value;
}

/**
 * A message source written `kind[:name]`: `user`; `plugin:NAME` → {kind:'plugin', plugin}; `tool:CALLID` →
 * {kind:'tool', callId}; any other `kind:NAME` → {kind, name}. Throws UsageError.
 */
export function parseSource(text: string): MessageSource {
  const match = /^([A-Za-z0-9_.-]+)(?::(.+))?$/.exec(text);
  if (!match || text.length > LIMITS.sourceNameChars * 2)
    throw new UsageError(`invalid --source "${text}": write kind or kind:name (e.g. plugin:watcher)`);
  const [, kind, name] = match as unknown as [string, string, string | undefined];
  if (kind === 'user') {
    if (name) throw new UsageError(`invalid --source "${text}": a user source has no name`);
    return { kind: 'user' };
  }
  if (kind === 'plugin' || kind === 'tool') {
    if (!name) throw new UsageError(`invalid --source "${text}": ${kind} needs a name (${kind}:NAME)`);
    return kind === 'plugin' ? { kind, plugin: name } : { kind, callId: name };
  }
  return name ? { kind, name } : { kind };
}

/** Short label of a source for display: `user`, `plugin:watcher`, `tool:call_0_1`, `kind:name`. */
export function sourceLabel(source: MessageSource): string {
  const s = source as Record<string, unknown>;
  const name = s.plugin ?? s.callId ?? s.name;
  return typeof name === 'string' ? `${source.kind}:${name}` : source.kind;
}

/** Source of an inject sent from the command line or the chat without a source. */
export const CLI_SOURCE = { kind: 'plugin', plugin: 'cli' } as const;

/**
 * `scripted`, `local` or `provider:model` (e.g. `openai:gpt-4o-mini`), read as the worker's configuration reads it
 * (parseModelRef). Throws UsageError.
 */
export function parseModel(text: string): ModelSpec {
  try {
    return parseModelRef(text);
  } catch (err) {
    // parseModelRef says `model "<text>": expected …`.
    throw new UsageError(`invalid --${(err as Error).message}`);
  }
}

/** Comma-separated tool names (or MCP selectors, `mcp:fs`). Throws UsageError on an empty or malformed name. */
export function parseTools(text: string): string[] {
  const names = text.split(',').map((s) => s.trim());
  const bad = names.find((n) => !isToolSelector(n));
  if (bad !== undefined) throw new UsageError(`invalid --tools "${text}": "${bad}" is not a tool name`);
  return names;
}

/** A non-negative integer option (or -1 for "from the start"). */
export function intOpt(p: Parsed, name: string, min = 0): number | undefined {
  const v = stringOpt(p, name);
  if (v === undefined) return undefined;
  if (!/^-?\d+$/.test(v) || Number(v) < min)
    throw new UsageError(`invalid --${name} "${v}": an integer ≥ ${min}`);
  return Number(v);
}
