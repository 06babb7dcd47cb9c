/**
 * Scoped access tokens (docs/security.md, `agent-sessions token`): issued, listed and revoked from the CLI, kept in a
 * JSON file (mode 0600) that holds only the sha256 of each secret, read by `agent-sessions ui` and `agent-sessions
 * mcp --http`. The servers look a presented secret up by its hash on every request, re-reading the file when it
 * changed, so a revoked token is refused at once. Does I/O (the tokens file).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { TenantSchema } from '../domain/wire';
import type { SessionScope } from './scope';

/** The environment variable naming the tokens file. */
export const TOKENS_FILE_VAR = 'AGENT_SESSIONS_TOKENS_FILE';

/** A token's name: 1–64 of letters, digits and `_ . -`. */
export const TokenNameSchema = z
  .string()
  .regex(/^[A-Za-z0-9_.-]{1,64}$/, '1–64 of letters, digits and _ . -');

/** What `issue` takes. */
export const TokenIssueSchema = z.strictObject({
  tenant: TenantSchema,
  prefix: z
    .string()
    .regex(/^[\x21-\x7e]{1,255}$/, 'printable ASCII without spaces, at most 255 characters')
    .optional(),
  readOnly: z.boolean().optional(),
  name: TokenNameSchema.optional(),
});
export type TokenIssue = z.input<typeof TokenIssueSchema>;

/** One token as the file keeps it: never the secret, only its sha256 (hex). */
export const TokenRecordSchema = z.strictObject({
  name: TokenNameSchema,
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  tenant: TenantSchema,
  prefix: z.string().optional(),
  readOnly: z.boolean(),
  created: z.string(),
});
export type TokenRecord = z.infer<typeof TokenRecordSchema>;

const TokenFileSchema = z.strictObject({ version: z.literal(1), tokens: z.array(TokenRecordSchema) });

/** The tokens file: `$AGENT_SESSIONS_TOKENS_FILE`, else `tokens.json` in the data dir (`$AGENT_SESSIONS_DATA_DIR`, `.data`). */
export function defaultTokensFile(env: NodeJS.ProcessEnv = process.env): string {
  const file = env[TOKENS_FILE_VAR]?.trim();
  if (file) return path.resolve(file);
  return path.resolve(env.AGENT_SESSIONS_DATA_DIR?.trim() || '.data', 'tokens.json');
}

const sha256 = (secret: string) => createHash('sha256').update(secret).digest('hex');

/** The tokens of one file. Throws an Error naming the file when it is not a tokens file. */
export class TokenStore {
  private cache: { stamp: string; tokens: TokenRecord[] } | undefined;

  constructor(readonly file: string) {}

  /** Every token (names and scopes; no secrets). */
  list(): TokenRecord[] {
    return this.read();
  }

  /** Issues a token: returns its secret (shown once, never stored) and its record. */
  issue(input: TokenIssue, now = new Date()): { secret: string; record: TokenRecord } {
    const parsed = TokenIssueSchema.safeParse(input);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new Error(`${issue.path.join('.') || 'token'}: ${issue.message}`);
    }
    const tokens = this.read();
    const name = parsed.data.name ?? `${parsed.data.tenant}-${randomBytes(3).toString('hex')}`;
    if (tokens.some((t) => t.name === name))
      throw new Error(`name: a token named ${name} exists; revoke it first`);
    const secret = `ast_${randomBytes(32).toString('base64url')}`;
    const record: TokenRecord = {
      name,
      sha256: sha256(secret),
      tenant: parsed.data.tenant,
      ...(parsed.data.prefix !== undefined ? { prefix: parsed.data.prefix } : {}),
      readOnly: parsed.data.readOnly ?? false,
      created: now.toISOString(),
    };
    this.write([...tokens, record]);
    return { secret, record };
  }

  /** Revokes the token `name`; false when there is none. */
  revoke(name: string): boolean {
    const tokens = this.read();
    const kept = tokens.filter((t) => t.name !== name);
    if (kept.length === tokens.length) return false;
    this.write(kept);
    return true;
  }

  /** The scope of the token whose secret this is, or undefined (also when the file is missing). */
  lookup(secret: string): SessionScope | undefined {
    const hash = Buffer.from(sha256(secret), 'hex');
    let found: TokenRecord | undefined;
    for (const t of this.read()) if (timingSafeEqual(Buffer.from(t.sha256, 'hex'), hash)) found = t;
    if (!found) return undefined;
    return {
      name: found.name,
      tenant: found.tenant,
      ...(found.prefix !== undefined ? { prefix: found.prefix } : {}),
      readOnly: found.readOnly,
    };
  }

  private read(): TokenRecord[] {
    let stamp: string;
    try {
      const s = statSync(this.file);
      stamp = `${s.mtimeMs}:${s.size}:${s.ino}`;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    if (this.cache?.stamp === stamp) return this.cache.tokens;
    let parsed: z.infer<typeof TokenFileSchema>;
    try {
      parsed = TokenFileSchema.parse(JSON.parse(readFileSync(this.file, 'utf8')));
    } catch (err) {
      throw new Error(`${this.file} is not a tokens file: ${(err as Error).message.split('\n')[0]}`);
    }
    this.cache = { stamp, tokens: parsed.tokens };
    return parsed.tokens;
  }

  private write(tokens: TokenRecord[]): void {
    mkdirSync(path.dirname(this.file), { recursive: true, mode: 0o700 });
    const tmp = `${this.file}.${process.pid}.tmp`;
    writeFileSync(tmp, `${JSON.stringify({ version: 1, tokens }, null, 2)}\n`, { mode: 0o600 });
    chmodSync(tmp, 0o600);
    renameSync(tmp, this.file);
    this.cache = undefined;
  }
}
