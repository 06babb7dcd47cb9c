/**
 * HTTP and command hooks a worker registers from its configuration (AGENT_SESSIONS_HOOKS_FILE): a JSON file
 *
 * ```json
 * { "hooks": [
 *   { "name": "guard", "kind": "pre-step", "http": { "url": "http://127.0.0.1:8080/guard", "timeoutMs": 5000 } },
 *   { "name": "lint", "kind": "post-tool", "command": { "argv": ["/usr/local/bin/lint-hook"], "timeoutMs": 10000 } }
 * ] }
 * ```
 *
 * Only this file (the operator's) names URLs and commands; sessions select hooks by name. Function hooks are
 * registered in code (`createSessionWorker({hooks})`). Not deterministic (reads a file).
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { commandHook, httpHook, type HookDefinition } from '../activities/hooks';
import { NameSchema as Name } from '../domain/names';
import { describeZodIssue } from '../domain/util';

const Kind = z.enum(['pre-step', 'post-tool']);
const Limit = z.number().int().positive();

const HttpSchema = z.strictObject({
  url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }),
  headers: z.record(z.string(), z.string()).optional(),
  timeoutMs: Limit.optional(),
  maxResponseBytes: Limit.optional(),
});
const CommandSchema = z.strictObject({
  argv: z.array(z.string().min(1)).min(1),
  cwd: z.string().min(1).optional(),
  env: z.record(z.string(), z.string()).optional(),
  inheritEnv: z.boolean().optional(),
  timeoutMs: Limit.optional(),
  maxOutputBytes: Limit.optional(),
});

/** One hook: its name, its kind and exactly one of `http` or `command` (one object, so errors name the field). */
const HookEntrySchema = z
  .strictObject({
    name: Name,
    kind: Kind,
    http: HttpSchema.optional(),
    command: CommandSchema.optional(),
  })
  .superRefine((h, ctx) => {
    if ((h.http === undefined) === (h.command === undefined))
      ctx.addIssue({ code: 'custom', message: 'needs exactly one of http or command' });
  });

export const HooksFileSchema = z.strictObject({ hooks: z.array(HookEntrySchema) });

/** The hooks a parsed hooks file describes. Throws an Error naming the entry that is wrong. */
export function hooksFromConfig(file: unknown, where = 'hooks file'): HookDefinition[] {
  const parsed = HooksFileSchema.safeParse(file);
  if (!parsed.success) throw new Error(`${where}: ${describeZodIssue(parsed.error.issues, 'file')}`);
  return parsed.data.hooks.map((h) =>
    h.http
      ? httpHook({ name: h.name, kind: h.kind, ...h.http })
      : commandHook({ name: h.name, kind: h.kind, ...h.command! }),
  );
}

/** Reads AGENT_SESSIONS_HOOKS_FILE. Throws an Error naming the file and what is wrong with it. */
export function hooksFromFile(path: string): HookDefinition[] {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8')) as unknown;
  } catch (err) {
    throw new Error(`AGENT_SESSIONS_HOOKS_FILE ${path}: ${(err as Error).message}`);
  }
  return hooksFromConfig(json, `AGENT_SESSIONS_HOOKS_FILE ${path}`);
}
