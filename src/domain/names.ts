/**
 * Names of tools and hooks: what `SessionConfig.tools` / `.hooks` accept, and what `defineTool`, the hook
 * definitions, the worker's hooks file and the CLI's `--tools` check. One definition, so they cannot drift.
 * Pure and deterministic.
 */
import { z } from 'zod';
import { lazy } from './lazy';

export const NAME_MAX_CHARS = 128;

/** What a name may contain, as error messages say it. */
export const NAME_RULE = 'letters, digits and _ . : - only';

const NAME_PATTERN = /^[A-Za-z0-9_.:-]{1,128}$/;

/** Whether `text` is a valid tool or hook name: 1 to 128 characters of letters, digits and `_ . : -`. */
export function isName(text: string): boolean {
  return NAME_PATTERN.test(text);
}

/** A tool or hook name (wire and configuration files); the error says what is wrong. */
export const NameSchema = lazy(() => z.string().min(1).max(NAME_MAX_CHARS).regex(NAME_PATTERN, NAME_RULE));

/** What a session's `tools` may name besides a tool: an MCP server's tools, `mcp:<server>` or `mcp:<server>/<tool>`. */
const MCP_SELECTOR_PATTERN = /^mcp:[A-Za-z0-9_-]{1,32}(?:\/[A-Za-z0-9_.-]{1,128})?$/;

export const TOOL_SELECTOR_RULE = `${NAME_RULE}, or mcp:<server>/<tool>`;

/** Whether `text` is valid in `SessionConfig.tools`: a tool name, or an MCP selector (`mcp:fs`, `mcp:fs/read_file`). */
export function isToolSelector(text: string): boolean {
  return text.length <= NAME_MAX_CHARS && (NAME_PATTERN.test(text) || MCP_SELECTOR_PATTERN.test(text));
}

/** An entry of `SessionConfig.tools`: a tool name or an MCP selector; the error says what is wrong. */
export const ToolSelectorSchema = lazy(() =>
  z.string().min(1).max(NAME_MAX_CHARS).refine(isToolSelector, TOOL_SELECTOR_RULE),
);
