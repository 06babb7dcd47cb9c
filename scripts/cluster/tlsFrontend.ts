/**
 * `tls-frontend start CERT_DIR [--client-auth] [--jwks URL]` and `tls-frontend stop`: a fifth process joins the
 * running cluster, a frontend of the same membership with its own config file (config/frontend-tls.yaml, merged
 * over base.yaml) and ports, serving TLS (optionally mTLS, and API keys checked against a JWKS). `down` stops it
 * too. Not deterministic: starts a process, runs the server and the Temporal CLI.
 */
import { accessSync, constants, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { readyTimeoutSeconds, ROLE, type Settings } from './plan';
import { findPostgres } from './postgres';
import { ClusterError, elapsed, run, say, tail, waitUntil, type Ran } from './proc';
import { temporalCli } from './ready';
import { tlsFrontendConfig, yamlFile, type TlsOptions } from './serverConfig';
import { checkAlive, liveRoles, logFile, pidFile, servicePid, startService, stopPid } from './services';

export const TLS_USAGE =
  'usage: tls-frontend start CERT_DIR [--client-auth] [--jwks URL] | tls-frontend stop';

/** The options of `tls-frontend start`, checked (the certificate files exist); throws a ClusterError otherwise. */
export function parseTlsStart(args: readonly string[]): TlsOptions {
  let certs: string | undefined;
  let clientAuth = false;
  let jwks: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--client-auth') clientAuth = true;
    else if (arg === '--jwks') jwks = args[++i] || undefined;
    else if (arg.startsWith('-')) throw new ClusterError(`tls-frontend start: unknown option ${arg}`);
    else if (certs !== undefined) throw new ClusterError('tls-frontend start takes one CERT_DIR');
    else certs = arg;
  }
  if (certs === undefined)
    throw new ClusterError('usage: tls-frontend start CERT_DIR [--client-auth] [--jwks URL]');
  const dir = path.resolve(certs);
  if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory())
    throw new ClusterError(`tls-frontend start: no folder ${certs}`);
  const files = [
    'ca.pem',
    'server.pem',
    'server-key.pem',
    ...(clientAuth ? ['client.pem', 'client-key.pem'] : []),
  ];
  for (const file of files) {
    try {
      accessSync(path.join(dir, file), constants.R_OK);
    } catch {
      throw new ClusterError(`tls-frontend start: ${path.join(dir, file)} is missing`);
    }
  }
  if (jwks !== undefined && !/^(https?|file):\/\//.test(jwks))
    throw new ClusterError('tls-frontend start: --jwks takes an http(s):// or file:// URL');
  return { certs: dir, clientAuth, jwks };
}

/** (Re)starts the TLS frontend and waits until it is in the membership and answers a health check over TLS. */
export async function tlsFrontendStart(s: Settings, tls: TlsOptions): Promise<void> {
  if (servicePid(s, 'frontend') === undefined)
    throw new ClusterError('the cluster is not up: scripts/cluster.sh up first');
  await tlsFrontendStop(s, 'to start it with the new settings');
  mkdirSync(s.rundir, { recursive: true });
  mkdirSync(s.logdir, { recursive: true });
  await writeTlsConfig(s, tls);
  const start = Date.now();
  const pid = await startService(s, 'frontend-tls');
  say(
    `frontend-tls: started (pid ${pid}, grpc+TLS ${s.tlsAddress}, client certificates ${tls.clientAuth ? 'required' : 'not asked'}, ` +
      `API keys ${tls.jwks ? `checked against ${tls.jwks}` : 'not checked'}, log ${logFile(s, 'frontend-tls')})`,
  );
  const pg = await findPostgres(s);
  if (!pg) throw new ClusterError('PostgreSQL 15 not found');
  const deadline = start + readyTimeoutSeconds(s) * 1000;
  const check = () => checkAlive(s, ['frontend-tls']);
  // Serving: in the membership (a frontend session that began after this start), and its TLS listener answers a
  // health check (allowed without an API key) from a client that trusts ca.pem (with the client certificate when
  // required).
  const sinceSeconds = Math.floor((Date.now() - start) / 1000) + 2;
  await waitUntil(async () => (await liveRoles(pg, sinceSeconds)).has(ROLE.frontend), {
    everyMs: 200,
    deadline,
    check,
    timeout: () =>
      new ClusterError(`frontend-tls did not join the membership (log: ${logFile(s, 'frontend-tls')})`),
  });
  const cli = temporalCli(s, s.tlsAddress);
  const tlsArgs = ['--tls-ca-path', path.join(tls.certs, 'ca.pem')];
  if (tls.clientAuth)
    tlsArgs.push(
      ...['--tls-cert-path', path.join(tls.certs, 'client.pem')],
      ...['--tls-key-path', path.join(tls.certs, 'client-key.pem')],
    );
  let last: Ran | undefined;
  await waitUntil(async () => (last = await cli('operator', 'cluster', 'health', ...tlsArgs)).code === 0, {
    everyMs: 300,
    deadline,
    check,
    timeout: () =>
      new ClusterError(
        `frontend-tls does not answer over TLS at ${s.tlsAddress}: ${(last?.stdout ?? '') + (last?.stderr ?? '')}`.trim(),
      ),
  });
  say(`frontend-tls: serving TLS at ${s.tlsAddress} (${elapsed(start)})`);
}

/** Stops the TLS frontend if it runs; `why` is said with it. */
export async function tlsFrontendStop(s: Settings, why?: string): Promise<void> {
  const pid = servicePid(s, 'frontend-tls');
  if (pid !== undefined) {
    await stopPid(pid, 'frontend-tls');
    say(`frontend-tls: stopped (pid ${pid})${why ? ` ${why}` : ''}`);
  }
  rmSync(pidFile(s, 'frontend-tls'), { force: true });
}

/** config/frontend-tls.yaml; the merged configuration must load (a mistake would otherwise only show in its log). */
async function writeTlsConfig(s: Settings, tls: TlsOptions): Promise<void> {
  writeFileSync(
    path.join(s.confdir, 'frontend-tls.yaml'),
    yamlFile(
      'Written by scripts/cluster.sh tls-frontend start: a fifth process, frontend role, serving TLS (merged over base.yaml).',
      tlsFrontendConfig(s, tls),
    ),
  );
  const log = path.join(s.logdir, 'frontend-tls-config.log');
  const rendered = await run(s.serverBin, [
    '--root',
    s.dir,
    '--config',
    s.confdir,
    '--env',
    'frontend-tls',
    'render-config',
  ]);
  writeFileSync(log, rendered.stdout + rendered.stderr);
  if (rendered.code !== 0) {
    process.stderr.write(tail(log, 20));
    throw new ClusterError(`config/frontend-tls.yaml does not load (log: ${log})`);
  }
}
