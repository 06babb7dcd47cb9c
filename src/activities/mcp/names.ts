/**
 * Names of MCP tools: how a session selects them (`mcp:<server>` or `mcp:<server>/<tool>`) and the name the model
 * sees (`<server>__<tool>`, valid for every provider: `^[a-zA-Z0-9_-]{1,64}$`). Pure: no I/O. Server names cannot
 * contain `__`, so a model-visible name splits back into its server unambiguously (at the first `__`).
 */
import { createHash } from 'node:crypto';

/** A server name: letters, digits, `-` and single `_` between them (no `__`, no `_` at either end), at most 32. */
export const SERVER_NAME_PATTERN = /^(?=.{1,32}$)[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*$/;
export const SERVER_NAME_RULE =
  'letters, digits, "-" and single "_" between them (no "__", no "_" at either end), at most 32';

/** What every model provider accepts as a tool name. */
export const MODEL_TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** The separator between server and tool in a model-visible name. */
export const SEPARATOR = '__';

const SELECTOR = /^mcp:([^/]+)(?:\/(.+))?$/;

/** A session's selection of MCP tools: a whole server, or one tool of it (by the server's own tool name). */
export type McpSelector = { server: string; tool?: string };

/** Whether a session tool name selects MCP tools (`mcp:` prefix). */
export function isMcpSelector(name: string): boolean {
  return name.startsWith('mcp:');
}

/** Parses `mcp:<server>` / `mcp:<server>/<tool>`; undefined for anything else (a native tool name). */
export function parseSelector(name: string): McpSelector | undefined {
  const m = SELECTOR.exec(name);
  if (!m) return undefined;
  return m[2] === undefined ? { server: m[1]! } : { server: m[1]!, tool: m[2] };
}

/**
 * The name the model sees for `tool` of `server`: `<server>__<tool>` with every character outside
 * `[A-Za-z0-9_-]` replaced by `_`; when that is longer than 64, cut and ended by `_` and 8 hex characters of the
 * sha256 of the tool's own name, so long names stay distinct. Two tools may still map to one name (`a.b`, `a_b`):
 * callers check for collisions ({@link collisions}).
 */
export function modelToolName(server: string, tool: string): string {
  const name = `${server}${SEPARATOR}${tool.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  if (name.length <= 64) return name;
  const hash = createHash('sha256').update(tool).digest('hex').slice(0, 8);
  return `${name.slice(0, 64 - 9)}_${hash}`;
}

/** The server a model-visible name belongs to (the part before the first `__`), if it has one. */
export function serverOf(modelName: string): string | undefined {
  const at = modelName.indexOf(SEPARATOR);
  return at > 0 ? modelName.slice(0, at) : undefined;
}

/**
 * Model-visible names that more than one tool maps to, or that a native tool already has: each with the tools
 * that claim it (`server/tool` or `native`). Empty when every name is unique.
 */
export function collisions(
  tools: readonly { server: string; tool: string }[],
  nativeNames: Iterable<string> = [],
): { name: string; claimedBy: string[] }[] {
  const claims = new Map<string, string[]>();
  for (const n of nativeNames) claims.set(n, ['native tool']);
  for (const t of tools) {
    const name = modelToolName(t.server, t.tool);
    claims.set(name, [...(claims.get(name) ?? []), `${t.server}/${t.tool}`]);
  }
  return [...claims].filter(([, by]) => by.length > 1).map(([name, claimedBy]) => ({ name, claimedBy }));
}
