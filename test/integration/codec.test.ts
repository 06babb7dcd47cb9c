/**
 * Encrypted history end to end, on the dev server with real workers: with a key configured, a session with a tool
 * call runs, `SessionClient` reads everything back, and the raw history as the Temporal CLI prints it
 * (`temporal workflow show --output json`) holds no plaintext prompt, tool argument or answer — while the same
 * session without a key shows all three (the control that makes the absence mean something). Then rotation (a
 * worker with a new current key and the old one still serves the session), the error that names a missing key id,
 * the CLI encrypting with the environment's keys, and `agent-sessions codec-server` decoding the history for the
 * real Temporal CLI (`--codec-endpoint`).
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { testingTools } from '../../src/activities/testingTools';
import { SessionClient } from '../../src/client';
import { encryptionDataConverter, type EncryptionKey, type EncryptionKeyring } from '../../src/codec';
import { createDevServerEnv, resolveTemporalCli } from '../../src/devserver';
import { createSessionWorker } from '../../src/worker';
import { assertBuilt, cli, cliEnv, spawnCli, until, type LiveCli } from '../cli/cliSupport';
import { newId, settle, summarize } from '../support/sessionEnv';

let env: TestWorkflowEnvironment;
let cliPath: string;
let home: string;
const running: { worker: Worker; done: Promise<void> }[] = [];

const key = (id: string): EncryptionKey => ({ id, key: new Uint8Array(randomBytes(32)) });
const spec = (k: EncryptionKey) => `${k.id}:${Buffer.from(k.key).toString('base64')}`;
const k1 = key('k1');
const k2 = key('k2');

const PROMPT = 'prompt: the vault combination is 31-41-59';
const ARG = 'argument: route the shipment via Tromsø';
const ANSWER = 'answer: the treasure is under the old oak';
const SECRETS = [PROMPT, ARG, ANSWER];

beforeAll(async () => {
  assertBuilt();
  const resolved = resolveTemporalCli({ allowDownload: false });
  if (resolved.type !== 'existing-path')
    throw new Error('the Temporal CLI binary is needed (run `npm run setup`)');
  cliPath = resolved.path;
  home = mkdtempSync(path.join(os.tmpdir(), 'agent-sessions-codec-home-'));
  env = await createDevServerEnv();
});

afterAll(async () => {
  for (const r of running) await stopWorker(r);
  await env?.teardown();
  if (home) rmSync(home, { recursive: true, force: true });
});

async function startWorker(taskQueue: string, encryption?: EncryptionKeyring) {
  const worker = await createSessionWorker({
    connection: env.nativeConnection,
    taskQueue,
    tools: testingTools,
    workflowBundle: { codePath: inject('workflowBundlePath') },
    ...(encryption ? { encryption } : {}),
  });
  const r = { worker, done: worker.run() };
  running.push(r);
  return r;
}

async function stopWorker(r: { worker: Worker; done: Promise<void> }) {
  if (r.worker.getState() === 'RUNNING') r.worker.shutdown();
  await r.done;
}

function client(taskQueue: string, keyring?: EncryptionKeyring) {
  return new SessionClient({
    connection: env.connection,
    taskQueue,
    searchAttributes: 'off',
    ...(keyring ? { dataConverter: encryptionDataConverter(keyring) } : {}),
  });
}

/** `temporal <args> --address … -o json`: stdout, or a rejection with stderr. */
function temporal(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      cliPath,
      [...args, '--address', env.address, '--namespace', 'default', '--output', 'json', '--color', 'never'],
      { env: { PATH: process.env.PATH ?? '', HOME: home }, timeout: 30_000, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) =>
        err
          ? reject(new Error(`temporal ${args.join(' ')} failed: ${stderr || err.message}`))
          : resolve(stdout),
    );
  });
}

/** Every string in the CLI's JSON, and the text of every one that is base64 (payload data and metadata). */
function textsOf(json: string): string[] {
  const out: string[] = [];
  const walk = (v: unknown) => {
    if (typeof v === 'string') {
      out.push(v);
      if (/^[A-Za-z0-9+/]+={0,2}$/.test(v) && v.length % 4 === 0)
        out.push(Buffer.from(v, 'base64').toString('utf8'));
    } else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') Object.values(v).forEach(walk);
  };
  walk(JSON.parse(json));
  return out;
}

const leaked = (json: string, secrets: string[]) => {
  const texts = textsOf(json);
  return secrets.filter((s) => texts.some((t) => t.includes(s)));
};

/** The encryption key ids the raw history's payloads name. */
function keyIdsIn(json: string): string[] {
  const ids = new Set<string>();
  const walk = (v: unknown) => {
    if (Array.isArray(v)) return v.forEach(walk);
    if (!v || typeof v !== 'object') return;
    const id = (v as Record<string, unknown>)['encryption-key-id'];
    if (typeof id === 'string') ids.add(Buffer.from(id, 'base64').toString('utf8'));
    Object.values(v).forEach(walk);
  };
  walk(JSON.parse(json));
  return [...ids].sort();
}

/** Starts a session whose first turn calls `echo` with ARG and then answers ANSWER, and sends PROMPT. */
async function runTurn(sessions: SessionClient, id: string) {
  await sessions.start(id, {
    model: {
      provider: 'scripted',
      steps: [{ toolCalls: [{ name: 'echo', args: { text: ARG } }] }, { text: ANSWER }],
    },
    tools: ['echo'],
  });
  await sessions.followup(id, PROMPT);
  return settle(sessions, id, 1);
}

const show = (id: string, extra: string[] = []) =>
  temporal(['workflow', 'show', '--workflow-id', id, ...extra]);

describe('encrypted history', () => {
  it('without a key, the raw history shows the prompt, the tool argument and the answer (control)', async () => {
    const queue = newId('plain-q');
    await startWorker(queue);
    const id = newId('plain');
    const events = await runTurn(client(queue), id);
    expect(summarize(events)).toContain(`assistant/message ${ANSWER}`);
    expect(leaked(await show(id), SECRETS)).toEqual(SECRETS);
  });

  it('with a key, the raw history holds none of them, and SessionClient reads everything back', async () => {
    const queue = newId('enc-q');
    await startWorker(queue, { current: k1 });
    const sessions = client(queue, { current: k1 });
    const id = newId('enc');
    const events = await runTurn(sessions, id);
    expect(summarize(events)).toEqual(
      expect.arrayContaining([
        `user/message ${PROMPT}`,
        'tool/call echo call_0_0',
        `assistant/message ${ANSWER}`,
        'turn/end 1 completed',
      ]),
    );
    const call = events.find((e) => e.type === 'tool/call');
    expect(call?.type === 'tool/call' && call.data.arguments).toEqual({ text: ARG });
    expect((await sessions.transcript(id)).messages.length).toBeGreaterThan(0);

    const raw = await show(id);
    expect(leaked(raw, SECRETS)).toEqual([]);
    expect(raw).toContain(Buffer.from('binary/encrypted').toString('base64'));
    expect(keyIdsIn(raw)).toEqual(['k1']);

    // A client without the key cannot read the session's answers: the error names the key it lacks.
    const stranger = client(queue, { current: key('k9') });
    await expect(stranger.state(id)).rejects.toThrow(/key "k1", which is not configured/);
  });

  it('rotates: a worker with a new current key and the old one serves the session on; both keys are in history', async () => {
    const queue = newId('rot-q');
    const first = await startWorker(queue, { current: k1 });
    const id = newId('rot');
    await runTurn(client(queue, { current: k1 }), id);
    await stopWorker(first);

    const rotated: EncryptionKeyring = { current: k2, previous: [k1] };
    await startWorker(queue, rotated);
    const sessions = client(queue, rotated);
    await sessions.followup(id, 'second turn after rotation');
    const events = await settle(sessions, id, 2);
    expect(summarize(events)).toEqual(
      expect.arrayContaining([
        `user/message ${PROMPT}`,
        `assistant/message ${ANSWER}`,
        'turn/end 2 completed',
      ]),
    );
    const raw = await show(id);
    expect(keyIdsIn(raw)).toEqual(['k1', 'k2']);
    expect(leaked(raw, [...SECRETS, 'second turn after rotation'])).toEqual([]);
    // Only the new key: the worker answers with k2, so queries still read; what k1 wrote needs k1.
    expect((await client(queue, { current: k2 }).state(id)).turn).toBe(2);
  });

  describe('the CLI', () => {
    let codecServer: LiveCli | undefined;
    afterAll(async () => {
      codecServer?.child.kill('SIGINT');
      await codecServer?.exited;
    });

    it('sends and reads with the environment’s keys; codec-server decodes the history for `temporal --codec-endpoint`', async () => {
      const queue = newId('cli-enc-q');
      const rotated: EncryptionKeyring = { current: k2, previous: [k1] };
      await startWorker(queue, rotated);
      const vars = cliEnv({
        TEMPORAL_ADDRESS: env.address,
        TASK_QUEUE: queue,
        AGENT_SESSIONS_ENCRYPTION_KEY: spec(k2),
        AGENT_SESSIONS_ENCRYPTION_OLD_KEYS: spec(k1),
      });
      const id = newId('cli-enc');
      const script = JSON.stringify([
        { toolCalls: [{ name: 'echo', args: { text: ARG } }] },
        { text: ANSWER },
      ]);
      expect((await cli(['start', id, '--tools', 'echo', '--script', script], vars)).code).toBe(0);
      const asked = await cli(['ask', id, PROMPT], vars);
      expect(asked.stderr).toBe('');
      expect(asked.stdout.trim()).toBe(ANSWER);
      const events = await cli(['events', id, '--json'], vars);
      expect(events.code).toBe(0);
      for (const secret of SECRETS) expect(events.stdout).toContain(secret);
      const raw = await show(id);
      expect(leaked(raw, SECRETS)).toEqual([]);
      expect(keyIdsIn(raw)).toEqual(['k2']);

      codecServer = spawnCli(['codec-server', '--port', '0', '--cors-origin', 'http://localhost:8233'], vars);
      const line = await until(codecServer.stdout, (s) => s.includes('\n'), 'the codec server to listen');
      const endpoint = /(http:\/\/127\.0\.0\.1:\d+)/.exec(line)?.[1];
      expect(line).toMatch(
        /^agent-sessions codec-server: http:\/\/127\.0\.0\.1:\d+ keys=k2 \(current\), k1 cors=http:\/\/localhost:8233 namespaces=any\n$/,
      );
      const decoded = await show(id, ['--codec-endpoint', endpoint!]);
      expect(leaked(decoded, SECRETS)).toEqual(SECRETS);

      // The exported history stays encrypted; `replay` decrypts it with the environment's keys, and without them
      // says which key it lacks instead of reporting a determinism error.
      const file = path.join(home, `${id}.json`);
      expect((await cli(['history', 'export', id, file], vars)).code).toBe(0);
      const replayed = await cli(['replay', file], vars);
      expect(replayed.stdout).toMatch(/^ok {3}.*\n1 replayed, 0 failed\n$/);
      const noKeys = await cli(['replay', file], cliEnv({}));
      expect(noKeys.code).toBe(1);
      expect(noKeys.stdout).toMatch(/payload encrypted with key "k2".*AGENT_SESSIONS_ENCRYPTION_KEY/);
    });

    it('refuses a missing or malformed key in one line naming the variable', async () => {
      const noKey = await cli(['codec-server', '--port', '0'], cliEnv({}));
      expect(noKey.code).toBe(1);
      expect(noKey.stderr).toMatch(
        /^agent-sessions codec-server: no encryption key configured: set AGENT_SESSIONS_ENCRYPTION_KEY/,
      );
      const short = `k1:${Buffer.alloc(16).toString('base64')}`;
      for (const command of [['worker'], ['state', 'x'], ['codec-server']]) {
        const r = await cli(
          command,
          cliEnv({ TEMPORAL_ADDRESS: env.address, AGENT_SESSIONS_ENCRYPTION_KEY: short }),
        );
        expect(r.code, command.join(' ')).toBe(1);
        expect(r.stderr).toBe(
          `agent-sessions ${command[0]}: invalid configuration: AGENT_SESSIONS_ENCRYPTION_KEY: the key is 16 bytes, AES-256 needs 32: expected KEY_ID:BASE64 — an id of 1–64 letters, digits and _ . -, a colon, and a 32-byte key in base64 (e.g. \`k1:$(openssl rand -base64 32)\`)\n`,
        );
      }
    });
  });
});
