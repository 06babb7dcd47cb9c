/**
 * `agent-sessions token issue|list|revoke`: scoped tokens for `agent-sessions ui` and `agent-sessions mcp --http`
 * (src/access/tokens.ts, docs/security.md). A token sees one tenant's sessions (optionally only ids with a prefix,
 * optionally read-only). The file (`--file`, else AGENT_SESSIONS_TOKENS_FILE, else the default path) holds only
 * sha256 hashes; `issue` prints the secret once.
 */
import { defaultTokensFile, TokenStore, TOKENS_FILE_VAR } from '../../access/tokens';
import { boolOpt, positionals, stringOpt } from '../args';
import { out, type Command } from '../command';
import { borderlessTable } from './list';
import { CliError, UsageError } from '../errors';

export const tokenCommand: Command = {
  name: 'token',
  summary: 'issue, list and revoke scoped tokens for ui and mcp --http (one tenant, a prefix, read-only)',
  usage:
    'agent-sessions token issue --tenant T [--prefix P] [--read-only] [--name N] | token list [--json] | token revoke NAME  [--file F]',
  details: [
    'subcommands:',
    '  issue          a new token; prints its secret once (the file keeps only its sha256)',
    '  list           the tokens: name, tenant, prefix, read-only, created',
    '  revoke NAME    removes the token; running servers refuse it from their next request',
    'options:',
    '  --tenant T     the tenant whose sessions the token sees (required for issue)',
    '  --prefix P     only sessions whose id starts with P',
    '  --read-only    watch only: no send, approve, cancel, dispose or start',
    "  --name N       the token's name (letters, digits, _ . -; default <tenant>-<random>)",
    `  --file F       the tokens file (default: $${TOKENS_FILE_VAR}, else tokens.json in $AGENT_SESSIONS_DATA_DIR, default .data)`,
    '  --json         list as JSON lines',
  ].join('\n'),
  options: {
    tenant: { type: 'string' },
    prefix: { type: 'string' },
    'read-only': { type: 'boolean' },
    name: { type: 'string' },
    file: { type: 'string' },
    json: { type: 'boolean' },
  },
  run(p) {
    const [sub, name] = positionals(p, ['subcommand', 'name'], { optional: 1 });
    const store = new TokenStore(stringOpt(p, 'file') ?? defaultTokensFile());
    if (sub === 'issue') {
      if (name !== undefined) throw new UsageError(`unexpected argument "${name}"`);
      const tenant = stringOpt(p, 'tenant');
      if (tenant === undefined) throw new UsageError('issue needs --tenant');
      const prefix = stringOpt(p, 'prefix');
      const tokenName = stringOpt(p, 'name');
      let issued;
      try {
        issued = store.issue({
          tenant,
          ...(prefix !== undefined ? { prefix } : {}),
          ...(tokenName !== undefined ? { name: tokenName } : {}),
          readOnly: boolOpt(p, 'read-only'),
        });
      } catch (err) {
        throw new UsageError((err as Error).message.replace(/^(tenant|prefix|name):/, '--$1:'));
      }
      out(issued.secret);
      process.stderr.write(
        `token ${issued.record.name} for tenant ${issued.record.tenant}${issued.record.prefix ? `, ids starting ${issued.record.prefix}` : ''}${issued.record.readOnly ? ', read-only' : ''}; kept hashed in ${store.file}. The secret above is shown only now.\n`,
      );
      return Promise.resolve(0);
    }
    if (sub === 'list') {
      if (name !== undefined) throw new UsageError(`unexpected argument "${name}"`);
      const tokens = store.list();
      if (boolOpt(p, 'json')) {
        for (const { sha256: _hash, ...t } of tokens) out(JSON.stringify(t));
        return Promise.resolve(0);
      }
      const table = borderlessTable(['NAME', 'TENANT', 'PREFIX', 'ACCESS', 'CREATED']);
      for (const t of tokens)
        table.push([t.name, t.tenant, t.prefix ?? '-', t.readOnly ? 'read-only' : 'full', t.created]);
      out(tokens.length ? table.toString() : `no tokens in ${store.file}`);
      return Promise.resolve(0);
    }
    if (sub === 'revoke') {
      if (name === undefined) throw new UsageError("revoke needs the token's NAME");
      if (!store.revoke(name)) throw new CliError(`no token named ${name} in ${store.file}`);
      out(`revoked ${name}`);
      return Promise.resolve(0);
    }
    throw new UsageError(`unknown subcommand "${sub ?? ''}": issue, list or revoke`);
  },
};
