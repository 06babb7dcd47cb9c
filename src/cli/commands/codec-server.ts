/**
 * `agent-sessions codec-server`: Temporal's remote codec endpoints (`POST /encode`, `POST /decode`) over the
 * encryption keys of the environment, so the Temporal UI and `temporal --codec-endpoint` show encrypted sessions in
 * clear (src/codec/server.ts has the protocol). Runs until SIGINT/SIGTERM. It serves whoever reaches it: it listens
 * on 127.0.0.1 unless told otherwise; put an authenticating proxy in front before exposing it.
 */
import type { AddressInfo } from 'node:net';
import { AesGcmCodec, createCodecServer } from '../../codec';
import { loadConfig } from '../../worker/config';
import { intOpt, positionals, stringOpt, type Parsed } from '../args';
import { out, type Command } from '../command';
import { CliError, UsageError } from '../errors';

export const DEFAULT_CODEC_PORT = 8888;

function listOpt(p: Parsed, name: string): string[] {
  const v = p.values[name];
  const all = Array.isArray(v) ? v : typeof v === 'string' ? [v] : [];
  return all
    .flatMap((s) => s.split(','))
    .map((s) => s.trim())
    .filter(Boolean);
}

export const codecServerCommand: Command = {
  name: 'codec-server',
  summary: 'serve the encryption codec to the Temporal UI and CLI (POST /encode, /decode) until Ctrl-C',
  usage:
    'agent-sessions codec-server [--port N] [--host H] [--cors-origin URL]… [--namespace NAME]… ' +
    '[--allowed-host HOST]…',
  details: [
    'options:',
    `  --port N            port to listen on (default ${DEFAULT_CODEC_PORT}; 0 picks a free one)`,
    '  --host H            address to listen on (default 127.0.0.1)',
    '  --cors-origin URL   let the Temporal UI at this origin call from the browser, e.g. http://localhost:8233',
    '                      (repeat or comma-separate for more)',
    '  --namespace NAME    refuse requests whose X-Namespace header names another namespace (repeatable)',
    '  --allowed-host HOST also serve requests whose Host header is HOST (e.g. codec.internal:8888, the name a proxy',
    '                      uses); by default only the address a request arrived on, and loopback names on loopback',
    'Keys come from AGENT_SESSIONS_ENCRYPTION_KEY and AGENT_SESSIONS_ENCRYPTION_OLD_KEYS, as for the worker.',
    'Then: Temporal UI → codec server endpoint http://127.0.0.1:PORT; temporal --codec-endpoint http://127.0.0.1:PORT …',
    'No authentication: keep it on a trusted host, or behind a proxy that authenticates.',
  ].join('\n'),
  options: {
    port: { type: 'string' },
    host: { type: 'string' },
    'cors-origin': { type: 'string', multiple: true },
    namespace: { type: 'string', multiple: true },
    'allowed-host': { type: 'string', multiple: true },
  },
  async run(p) {
    positionals(p, []);
    const port = intOpt(p, 'port') ?? DEFAULT_CODEC_PORT;
    if (port > 65_535) throw new UsageError(`invalid --port "${port}": 0–65535`);
    const host = stringOpt(p, 'host') ?? '127.0.0.1';
    const corsOrigins = listOpt(p, 'cors-origin');
    for (const origin of corsOrigins) {
      let parsed: URL | undefined;
      try {
        parsed = new URL(origin);
      } catch {
        parsed = undefined;
      }
      if (!parsed || !/^https?:$/.test(parsed.protocol) || parsed.origin !== origin.replace(/\/$/, ''))
        throw new UsageError(`invalid --cors-origin "${origin}": an origin like http://localhost:8233`);
    }
    const namespaces = listOpt(p, 'namespace');
    const { encryption } = loadConfig(process.env);
    if (!encryption)
      throw new CliError(
        'no encryption key configured: set AGENT_SESSIONS_ENCRYPTION_KEY (and AGENT_SESSIONS_ENCRYPTION_OLD_KEYS for earlier keys)',
      );
    const codec = new AesGcmCodec(encryption);
    const server = createCodecServer({
      codec,
      corsOrigins: corsOrigins.map((o) => o.replace(/\/$/, '')),
      namespaces,
      allowedHosts: listOpt(p, 'allowed-host'),
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', (err: NodeJS.ErrnoException) =>
        reject(new CliError(`cannot listen on ${host}:${port}: ${err.code ?? err.message}`)),
      );
      server.listen(port, host, resolve);
    });
    const { port: bound } = server.address() as AddressInfo;
    const keys = codec.keyIds.map((id, i) => (i === 0 ? `${id} (current)` : id)).join(', ');
    out(
      `agent-sessions codec-server: http://${host.includes(':') ? `[${host}]` : host}:${bound} keys=${keys} ` +
        `cors=${corsOrigins.join(',') || 'none'} namespaces=${namespaces.join(',') || 'any'}`,
    );
    await new Promise<void>((resolve) => {
      const stop = () => resolve();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
    return 0;
  },
};
