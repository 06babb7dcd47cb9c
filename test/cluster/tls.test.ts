/**
 * The cluster tier (issue 14, part 5): TLS and API keys, tested against a real frontend, not only typed. A fifth
 * process joins the cluster: a frontend that serves TLS on its own port (`scripts/cluster.sh tls-frontend start`),
 * with certificates this test generates with openssl. The project's own connection options
 * (src/worker/config.ts: TEMPORAL_TLS_CA_PATH, TEMPORAL_TLS_CERT_PATH, TEMPORAL_TLS_KEY_PATH,
 * TEMPORAL_TLS_SERVER_NAME, TEMPORAL_API_KEY) are exercised through the real worker and CLI processes, and in
 * process through `connectionOptions(loadConfig(env))`.
 *
 * 1. mTLS (client certificates required): a session runs — worker and CLI with the CA, the client certificate and
 *    the server name; a client with no TLS, without the client certificate, with another CA, with a client
 *    certificate of another CA, or with a wrong server name is refused, and nothing it sent reaches the cluster.
 * 2. TLS and API keys: the frontend checks API keys with the Temporal server's default JWT claim mapper and
 *    authorizer, against a JWKS this test serves over local HTTP (RS256 keys made with node:crypto). A session runs
 *    with a key granting `default:write`; a key signed by another private key, an expired key, no key, and a
 *    read-only key (for a write) are refused with PERMISSION_DENIED.
 *
 * The plain frontend is not touched: it is how the test checks that refused clients left nothing behind.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionClient, SessionNotFoundError } from '../../src/client';
import { assertLogValid } from '../../src/testing';
import { connectionOptions, loadConfig } from '../../src/worker/config';
import {
  cluster,
  clusterEnv as readClusterEnv,
  describeError,
  grpcStatusOf,
  runCli,
  startWorker,
  type Ran,
  type WorkerProcess,
} from './support';
import { makeCerts, serveJwks, type Certs, type Jwks } from './tls';

let env: Record<string, string>;
let certs: Certs;
let jwks: Jwks | undefined;
let plainConnection: Connection;
/** A client of the plain frontend, to look at what the TLS clients did (or did not do). */
let plain: SessionClient;
const workers = new Set<WorkerProcess>();
const figures: Record<string, unknown> = {};

/** The connection variables of a client of the TLS frontend. */
function tlsEnv(taskQueue: string, vars: Record<string, string>): Record<string, string> {
  return {
    TEMPORAL_ADDRESS: env.TEMPORAL_TLS_ADDRESS!,
    TEMPORAL_NAMESPACE: env.TEMPORAL_NAMESPACE!,
    TASK_QUEUE: taskQueue,
    ...vars,
  };
}

/** A session that answers `text` to its first message, started and asked through the CLI with `vars`. */
async function sessionThroughCli(
  vars: Record<string, string>,
  text: string,
): Promise<{ id: string; ask: Ran }> {
  const id = `cluster-tls-${randomUUID()}`;
  const script = JSON.stringify([{ text }]);
  const start = await runCli(['start', id, '--script', script], vars);
  expect(start.code, `agent-sessions start: ${start.stderr}`).toBe(0);
  expect(start.stdout).toContain(`started session ${id}`);
  const ask = await runCli(['ask', id, 'hello over TLS'], vars);
  expect(ask.code, `agent-sessions ask: ${ask.stderr}`).toBe(0);
  return { id, ask };
}

/** The worker identities in the session's history (read over the plain frontend). */
async function identitiesOf(id: string): Promise<string[]> {
  const history = await plain.handle(id).fetchHistory();
  const out = new Set<string>();
  for (const e of history.events ?? []) {
    const identity =
      e.workflowTaskStartedEventAttributes?.identity ?? e.activityTaskStartedEventAttributes?.identity;
    if (identity) out.add(identity);
  }
  return [...out];
}

/** The CLI was refused: exit code 1, one `agent-sessions start: …` line, and no session with that id exists. */
async function expectCliRefused(ran: Ran, id: string): Promise<void> {
  expect(ran.code, ran.stderr).toBe(1);
  expect(ran.stdout).not.toContain('started session');
  expect(ran.stderr).toMatch(/^agent-sessions start: \S.*$/m);
  await expect(plain.row(id)).rejects.toBeInstanceOf(SessionNotFoundError);
}

/** A client of the TLS frontend made the way the CLI makes it: connectionOptions(loadConfig(env)). */
async function projectClient(vars: Record<string, string>): Promise<SessionClient> {
  const config = loadConfig(vars);
  const connection = await Connection.connect(connectionOptions(config, config.address!));
  return new SessionClient({
    client: new Client({ connection, namespace: config.namespace }),
    taskQueue: config.taskQueue,
    warn: () => {},
  });
}

/** What a call was refused with: the gRPC status and the error chain (throws when the call succeeded). */
async function refusal(call: () => Promise<unknown>): Promise<{ status?: string; error: string }> {
  try {
    await call();
  } catch (err) {
    return { status: grpcStatusOf(err), error: describeError(err) };
  }
  throw new Error('the call was expected to be refused, and it succeeded');
}

async function stopWorkers(): Promise<void> {
  for (const w of workers) w.child.kill('SIGKILL');
  await Promise.all([...workers].map((w) => w.exited));
}

beforeAll(async () => {
  env = await readClusterEnv();
  await cluster('status');
  certs = await makeCerts(mkdtempSync(path.join(os.tmpdir(), 'agent-sessions-tls-')));
  plainConnection = await Connection.connect({ address: env.TEMPORAL_ADDRESS! });
  plain = new SessionClient({
    client: new Client({ connection: plainConnection, namespace: env.TEMPORAL_NAMESPACE! }),
  });
}, 60_000);

afterAll(async () => {
  await stopWorkers();
  await cluster('tls-frontend', 'stop').catch(() => undefined);
  await jwks?.close();
  await plainConnection?.close();
  if (certs) rmSync(certs.dir, { recursive: true, force: true });
  console.log(`cluster tier TLS figures:\n${JSON.stringify(figures, null, 2)}`);
});

describe.sequential('a frontend with mTLS: client certificates required', () => {
  const taskQueue = `cluster-mtls-${randomUUID()}`;
  let mtls: Record<string, string>;

  beforeAll(async () => {
    const started = Date.now();
    await cluster('tls-frontend', 'start', certs.dir, '--client-auth');
    figures.mtlsFrontendStartMs = Date.now() - started;
    mtls = tlsEnv(taskQueue, {
      TEMPORAL_TLS_CA_PATH: certs.ca,
      TEMPORAL_TLS_CERT_PATH: certs.clientCert,
      TEMPORAL_TLS_KEY_PATH: certs.clientKey,
      TEMPORAL_TLS_SERVER_NAME: 'localhost',
    });
  }, 120_000);

  afterAll(stopWorkers);

  it('a session runs over mTLS: the real worker and CLI with the CA, the client certificate and the server name', async () => {
    const worker = await startWorker(mtls, workers);
    const { id, ask } = await sessionThroughCli(mtls, 'answered over mTLS');
    expect(ask.stdout.trim()).toBe('answered over mTLS');
    // The only worker on this task queue is the one that connected through the TLS frontend.
    expect(await identitiesOf(id)).toEqual([worker.identity]);
    assertLogValid(await plain.allEvents(id));
    const row = await plain.state(id);
    expect(row).toMatchObject({ status: 'idle', turn: 1 });
  });

  it('a client without TLS, without the client certificate, with another CA, with a certificate of another CA, or with a wrong server name is refused', async () => {
    const cases: Record<string, Record<string, string>> = {
      'no TLS': tlsEnv(taskQueue, {}),
      'no client certificate': tlsEnv(taskQueue, {
        TEMPORAL_TLS_CA_PATH: certs.ca,
        TEMPORAL_TLS_SERVER_NAME: 'localhost',
      }),
      'another CA': { ...mtls, TEMPORAL_TLS_CA_PATH: certs.otherCa },
      'a client certificate of another CA': {
        ...mtls,
        TEMPORAL_TLS_CERT_PATH: certs.otherClientCert,
        TEMPORAL_TLS_KEY_PATH: certs.otherClientKey,
      },
      'a wrong server name': { ...mtls, TEMPORAL_TLS_SERVER_NAME: 'wrong.example' },
    };
    const outcomes = await Promise.all(
      Object.entries(cases).map(async ([name, vars]) => {
        const id = `cluster-tls-refused-${randomUUID()}`;
        const [cli, worker] = await Promise.all([
          runCli(['start', id], vars),
          runCli(['worker'], vars, 90_000),
        ]);
        await expectCliRefused(cli, id);
        // The worker does not start: it exits with code 1 and an `agent-sessions worker: <error>` line.
        expect(worker.code, `${name}: ${worker.stderr}`).toBe(1);
        expect(worker.stdout + worker.stderr).not.toMatch(/task-queue=/);
        return [name, { cli: cli.stderr.trim().split('\n').pop(), worker: worker.stderr.trim() }] as const;
      }),
    );
    const seen = Object.fromEntries(outcomes);
    figures.mtlsRefusals = seen;
    // The worker's TLS stack (rustls) names the certificate problem.
    expect(seen['another CA']!.worker).toMatch(/InvalidCertificate\(UnknownIssuer\)/);
    expect(seen['a wrong server name']!.worker).toMatch(/InvalidCertificate\(NotValidForName/);
  });
});

describe.sequential('a frontend with TLS and API keys: JWTs checked against a JWKS the test serves', () => {
  const taskQueue = `cluster-apikey-${randomUUID()}`;
  let keyed: Record<string, string>;

  beforeAll(async () => {
    jwks = await serveJwks();
    const started = Date.now();
    await cluster('tls-frontend', 'start', certs.dir, '--jwks', jwks.url);
    figures.apiKeyFrontendStartMs = Date.now() - started;
    // No client certificate and no server name: the server's certificate is checked against its IP address.
    keyed = tlsEnv(taskQueue, {
      TEMPORAL_TLS_CA_PATH: certs.ca,
      TEMPORAL_API_KEY: jwks.apiKey(['default:write']),
    });
  }, 120_000);

  afterAll(stopWorkers);

  it('a session runs with an API key: the real worker and CLI with TEMPORAL_API_KEY and the CA', async () => {
    // The server fetched the JWKS when it started; keys are checked against it.
    expect(jwks!.requests()).toBeGreaterThanOrEqual(1);
    const worker = await startWorker(keyed, workers);
    const { id, ask } = await sessionThroughCli(keyed, 'answered with an API key');
    expect(ask.stdout.trim()).toBe('answered with an API key');
    expect(await identitiesOf(id)).toEqual([worker.identity]);
    assertLogValid(await plain.allEvents(id));
  });

  it('a key signed by another private key, an expired key, no key, or a read-only key for a write: PERMISSION_DENIED', async () => {
    const untrusted = {
      ...keyed,
      TEMPORAL_API_KEY: jwks!.apiKey(['default:write'], { signedBy: 'untrusted' }),
    };
    const expired = { ...keyed, TEMPORAL_API_KEY: jwks!.apiKey(['default:write'], { expiresIn: -60 }) };
    const none = tlsEnv(taskQueue, { TEMPORAL_TLS_CA_PATH: certs.ca });
    const readOnly = { ...keyed, TEMPORAL_API_KEY: jwks!.apiKey(['default:read']) };
    const id = () => `cluster-apikey-refused-${randomUUID()}`;

    // In process, with the project's connection options: a key that does not verify is refused at connect.
    const badKeys = {
      'signed by another key': await refusal(() => projectClient(untrusted)),
      expired: await refusal(() => projectClient(expired)),
    };
    for (const r of Object.values(badKeys)) {
      expect(r.status, r.error).toBe('PERMISSION_DENIED');
      expect(r.error).toContain('Request unauthorized');
    }
    // No key, or a reader's key: connected (GetSystemInfo is open to all), but starting a session is refused.
    const noKey = await projectClient(none);
    const reader = await projectClient(readOnly);
    try {
      const refusedStarts = {
        'no key': await refusal(() => noKey.start(id())),
        'read-only key': await refusal(() => reader.start(id())),
      };
      for (const r of Object.values(refusedStarts)) {
        expect(r.status, r.error).toBe('PERMISSION_DENIED');
        expect(r.error).toContain('Request unauthorized');
      }
      // A reader may read: listing the namespace works with the read-only key.
      await expect(reader.list({ limit: 1 })).resolves.toHaveProperty('sessions');
      figures.apiKeyRefusals = { ...badKeys, ...refusedStarts };
    } finally {
      await noKey.client.connection.close();
      await reader.client.connection.close();
    }

    // The real CLI and worker with those keys.
    const cases = { 'signed by another key': untrusted, expired, 'no key': none, 'read-only key': readOnly };
    const cli = await Promise.all(
      Object.entries(cases).map(async ([name, vars]) => {
        const sessionId = id();
        const ran = await runCli(['start', sessionId], vars);
        await expectCliRefused(ran, sessionId);
        return [name, ran.stderr.trim().split('\n').pop()] as const;
      }),
    );
    const worker = await runCli(['worker'], untrusted, 90_000);
    expect(worker.code, worker.stderr).toBe(1);
    expect(worker.stderr).toMatch(/PermissionDenied|Request unauthorized/);
    figures.apiKeyCli = Object.fromEntries(cli);
    figures.apiKeyWorkerWithUntrustedKey = worker.stderr.trim();
  });
});
