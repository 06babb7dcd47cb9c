/**
 * MCP servers a worker offers tools from, by name: a stdio server the worker starts (`command`, `args`, `env`,
 * `cwd`) or a streamable-HTTP server it connects to (`url`, `headers`). Written in code (`createSessionWorker({
 * mcpServers })`) or in the JSON file named by AGENT_SESSIONS_MCP_FILE, in the shape most MCP clients use:
 *
 * ```json
 * { "mcpServers": {
 *   "fs": { "command": "npx", "args": ["@modelcontextprotocol/server-filesystem", "/srv/docs"] },
 *   "search": { "url": "https://search.example/mcp", "headers": { "Authorization": "Bearer ${SEARCH_TOKEN}" } }
 * } }
 * ```
 *
 * Secrets stay out of the file: `${VAR}` in a header or `env` value is replaced by the worker's environment
 * variable VAR when the configuration is loaded (a missing variable is an error naming the field and the
 * variable). Only the operator's configuration names commands, URLs and headers; sessions select tools by name
 * (`mcp:<server>`). Not deterministic (reads the environment and a file).
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { describeZodIssue, issueField } from '../../domain/util';
import { SERVER_NAME_PATTERN, SERVER_NAME_RULE } from './names';

const Ms = z.number().int().min(1).max(86_400_000);
/** Bounds of `maxMessageBytes`: below 64 KiB ordinary tool lists would be refused; 1 GiB is far past any payload. */
export const MIN_MESSAGE_BYTES = 64 * 1024;
export const MAX_MESSAGE_BYTES = 1024 * 1024 * 1024;

const Common = {
  /** Longest wait for the connection and the MCP handshake (default 10 s). */
  connectTimeoutMs: Ms.optional(),
  /** Longest wait for one tools/call without a progress notification (default 10 minutes). */
  callTimeoutMs: Ms.optional(),
  /**
   * Most bytes of one message from the server (default: the McpTools option, 10 MiB): a larger answer to a call is
   * dropped as it arrives and the call answered `TOOL_RESULT_TOO_LARGE` (./framing.ts).
   */
  maxMessageBytes: z.number().int().min(MIN_MESSAGE_BYTES).max(MAX_MESSAGE_BYTES).optional(),
};

export const StdioServerSchema = z.strictObject({
  type: z.literal('stdio').optional(),
  command: z.string().min(1),
  args: z.array(z.string()).optional(),
  /** Added to the few variables the SDK passes on by default (PATH, HOME, …); `${VAR}` reads the worker's. */
  env: z.record(z.string(), z.string()).optional(),
  cwd: z.string().min(1).optional(),
  ...Common,
});

export const HttpServerSchema = z.strictObject({
  type: z.enum(['http', 'streamable-http']).optional(),
  url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }),
  /** Sent with every request; `${VAR}` reads the worker's environment (e.g. "Bearer ${TOKEN}"). */
  headers: z.record(z.string(), z.string()).optional(),
  ...Common,
});

export type McpServerConfig = z.infer<typeof StdioServerSchema> | z.infer<typeof HttpServerSchema>;
export type McpServers = Record<string, McpServerConfig>;

const ServerName = z.string().regex(SERVER_NAME_PATTERN, `server names are ${SERVER_NAME_RULE}`);

/** The file's shape; each server is checked by {@link resolveMcpServers} (by its kind, so errors are precise). */
export const McpFileSchema = z.strictObject({ mcpServers: z.record(z.string(), z.unknown()) });

/** One server, checked against the schema its kind selects (`command`: stdio, `url`: HTTP); errors name the field. */
function parseServer(value: unknown, field: string): McpServerConfig {
  const isObject = value !== null && typeof value === 'object' && !Array.isArray(value);
  const schema =
    isObject && 'command' in value
      ? StdioServerSchema
      : isObject && 'url' in value
        ? HttpServerSchema
        : undefined;
  if (!schema)
    throw new Error(
      `invalid ${field}: expected a stdio server {command, args?, env?, cwd?} or an HTTP server {url, headers?}`,
    );
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const at = issue.path.length ? `${field}.${issueField(issue.path)}` : field;
    throw new Error(`invalid ${at}: ${issue.message}`);
  }
  return parsed.data;
}

const VARIABLE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** `${VAR}` replaced by the environment's VAR. Throws naming `field` and the variable when it is not set. */
export function interpolate(value: string, env: NodeJS.ProcessEnv, field: string): string {
  return value.replace(VARIABLE, (_, name: string) => {
    const v = env[name];
    if (v === undefined || v === '')
      throw new Error(`${field}: environment variable ${name} is not set (the value names \${${name}})`);
    return v;
  });
}

/**
 * Validates servers given in code or read from a file and resolves their `${VAR}`s from `env`. Throws an Error
 * naming the field (`where` prefixes it: the file, or `mcpServers`).
 */
export function resolveMcpServers(
  servers: unknown,
  env: NodeJS.ProcessEnv = process.env,
  where = 'mcpServers',
): McpServers {
  if (servers === null || typeof servers !== 'object' || Array.isArray(servers))
    throw new Error(`invalid ${where}: expected an object of servers by name`);
  const out: McpServers = {};
  for (const [name, value] of Object.entries(servers)) {
    const field = `${where}.${name}`;
    if (!ServerName.safeParse(name).success)
      throw new Error(`invalid ${field}: server names are ${SERVER_NAME_RULE}`);
    const server = parseServer(value, field);
    const values = (record: Record<string, string> | undefined, key: string) =>
      record &&
      Object.fromEntries(
        Object.entries(record).map(([k, v]) => [k, interpolate(v, env, `${field}.${key}.${k}`)]),
      );
    if ('command' in server) {
      const serverEnv = values(server.env, 'env');
      out[name] = { ...server, ...(serverEnv ? { env: serverEnv } : {}) };
    } else {
      const headers = values(server.headers, 'headers');
      out[name] = { ...server, ...(headers ? { headers } : {}) };
    }
  }
  return out;
}

/** Reads AGENT_SESSIONS_MCP_FILE. Throws an Error naming the file and the field that is wrong. */
export function mcpServersFromFile(path: string, env: NodeJS.ProcessEnv = process.env): McpServers {
  const where = `AGENT_SESSIONS_MCP_FILE ${path}`;
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8')) as unknown;
  } catch (err) {
    throw new Error(`${where}: ${(err as Error).message}`);
  }
  const parsed = McpFileSchema.safeParse(json);
  if (!parsed.success) throw new Error(`${where}: invalid ${describeZodIssue(parsed.error.issues, 'file')}`);
  try {
    return resolveMcpServers(parsed.data.mcpServers, env);
  } catch (err) {
    throw new Error(`${where}: ${(err as Error).message}`);
  }
}
