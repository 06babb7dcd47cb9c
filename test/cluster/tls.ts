/**
 * What the TLS and API-key tests of the cluster tier generate: certificates made with openssl (a CA, a server
 * certificate for 127.0.0.1 and localhost, a client certificate for mTLS, and a second CA with its own client
 * certificate that the server must not trust), and API keys the Temporal server's default JWT claim mapper accepts:
 * RS256 JWTs signed with node:crypto, whose public key the test serves as a JWKS over local HTTP. Not deterministic
 * (keys are random, tokens carry the current time).
 */
import { execFile } from 'node:child_process';
import { createSign, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The files scripts/cluster.sh `tls-frontend start DIR` reads, and the untrusted ones. */
export interface Certs {
  dir: string;
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  /** A CA the server does not know, and a client certificate it signed. */
  otherCa: string;
  otherClientCert: string;
  otherClientKey: string;
}

const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

async function openssl(args: string[], cwd: string): Promise<void> {
  try {
    await run('openssl', args, { cwd });
  } catch (err) {
    const e = err as Error & { stderr?: string };
    throw new Error(`openssl ${args.join(' ')} failed: ${e.message}\n${e.stderr ?? ''}`);
  }
}

/** A CA (`<name>.pem`, `<name>-key.pem`): v3, CA:TRUE, for signing certificates only; valid for two days. */
async function makeCa(dir: string, name: string, subject: string): Promise<void> {
  await openssl(
    [
      'req',
      '-x509',
      ...EC_KEY,
      '-keyout',
      `${name}-key.pem`,
      '-out',
      `${name}.pem`,
      '-days',
      '2',
      '-subj',
      subject,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ],
    dir,
  );
}

/** A leaf certificate `<name>.pem` with its key `<name>-key.pem`, signed by the CA `<ca>.pem`. */
async function makeLeaf(
  dir: string,
  name: string,
  ca: string,
  subject: string,
  ext: string[],
): Promise<void> {
  await openssl(
    ['req', '-new', ...EC_KEY, '-keyout', `${name}-key.pem`, '-out', `${name}.csr`, '-subj', subject],
    dir,
  );
  writeFileSync(
    path.join(dir, `${name}.ext`),
    ['basicConstraints=CA:FALSE', 'keyUsage=critical,digitalSignature', ...ext, ''].join('\n'),
  );
  await openssl(
    [
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      `${ca}.pem`,
      '-CAkey',
      `${ca}-key.pem`,
      '-CAcreateserial',
      '-days',
      '2',
      '-out',
      `${name}.pem`,
      '-extfile',
      `${name}.ext`,
    ],
    dir,
  );
}

/** Generates every certificate the tests use into `dir` (created). */
export async function makeCerts(dir: string): Promise<Certs> {
  mkdirSync(dir, { recursive: true });
  await makeCa(dir, 'ca', '/CN=agent-sessions cluster tier CA');
  await makeCa(dir, 'other-ca', '/CN=an untrusted CA');
  await makeLeaf(dir, 'server', 'ca', '/CN=localhost', [
    'extendedKeyUsage=serverAuth',
    'subjectAltName=DNS:localhost,IP:127.0.0.1',
  ]);
  await makeLeaf(dir, 'client', 'ca', '/CN=agent-sessions worker', ['extendedKeyUsage=clientAuth']);
  await makeLeaf(dir, 'other-client', 'other-ca', '/CN=agent-sessions worker', [
    'extendedKeyUsage=clientAuth',
  ]);
  const file = (name: string) => path.join(dir, name);
  return {
    dir,
    ca: file('ca.pem'),
    serverCert: file('server.pem'),
    serverKey: file('server-key.pem'),
    clientCert: file('client.pem'),
    clientKey: file('client-key.pem'),
    otherCa: file('other-ca.pem'),
    otherClientCert: file('other-client.pem'),
    otherClientKey: file('other-client-key.pem'),
  };
}

/** A JWKS served over HTTP on 127.0.0.1, and API keys (JWTs) signed with its key or with an untrusted one. */
export interface Jwks {
  /** `http://127.0.0.1:<port>/jwks.json`, for `tls-frontend start --jwks`. */
  url: string;
  /** How many times the JWKS was fetched (by the Temporal server). */
  requests(): number;
  /**
   * An API key for `permissions` (["default:write"]…): an RS256 JWT with the JWKS key's id, signed by that key, or
   * by another key under the same id when `signedBy` is 'untrusted'; `expiresIn` seconds from now (negative:
   * already expired).
   */
  apiKey(permissions: string[], opts?: { signedBy?: 'trusted' | 'untrusted'; expiresIn?: number }): string;
  close(): Promise<void>;
}

const KID = 'agent-sessions-tier';

function sign(key: KeyObject, claims: Record<string, unknown>): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const body = `${part({ alg: 'RS256', typ: 'JWT', kid: KID })}.${part(claims)}`;
  return `${body}.${createSign('RSA-SHA256').update(body).sign(key).toString('base64url')}`;
}

export async function serveJwks(): Promise<Jwks> {
  const trusted = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const untrusted = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwks = JSON.stringify({
    keys: [{ ...trusted.publicKey.export({ format: 'jwk' }), kid: KID, alg: 'RS256', use: 'sig' }],
  });
  let requests = 0;
  const server = http.createServer((req, res) => {
    if (req.url !== '/jwks.json') {
      res.writeHead(404).end();
      return;
    }
    requests += 1;
    res.writeHead(200, { 'content-type': 'application/json' }).end(jwks);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/jwks.json`,
    requests: () => requests,
    apiKey(permissions, opts = {}) {
      const now = Math.floor(Date.now() / 1000);
      const key = opts.signedBy === 'untrusted' ? untrusted.privateKey : trusted.privateKey;
      return sign(key, {
        sub: 'agent-sessions-cluster-tier',
        permissions,
        iat: now,
        exp: now + (opts.expiresIn ?? 3600),
      });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
