/**
 * Proves the Temporal servers the project runs are real: the time-skipping test server skips a one-day timer, the
 * dev server runs the same workflow, and a dev server killed with SIGKILL and started again on the same SQLite file
 * finishes a workflow started before the kill (the activity ran once, the timer survived); a server whose port was
 * taken before it bound it starts again on fresh ports; a server that crashes keeps the crash's reason in its error.
 */
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createDevServerEnv,
  createTimeSkippingEnv,
  getFreePort,
  spawnDevServer,
  startDevServer,
  type DevServerProcess,
  type EmbeddedDevServer,
} from '../../src/devserver';
import { createProbeActivities } from '../fixtures/serverProbe.activities';
import { approveSignal, serverProbe, statusQuery, type ProbePhase } from '../fixtures/serverProbe.workflows';

const DAY_MS = 24 * 60 * 60 * 1000;
const quietLogger = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };
let workflowBundle: { code: string };

beforeAll(async () => {
  workflowBundle = await bundleWorkflowCode({
    workflowsPath: path.join(__dirname, '../fixtures/serverProbe.workflows.ts'),
    logger: quietLogger,
  });
});

/** Polls the status query until the workflow reports `phase` (bounded; a query may fail while a server restarts). */
async function waitForPhase(handle: WorkflowHandle, phase: ProbePhase, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      last = await handle.query(statusQuery);
      if ((last as { phase: string }).phase === phase) return;
    } catch (err) {
      last = err;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(
    `workflow ${handle.workflowId} did not reach phase ${phase} in ${timeoutMs} ms; last: ${String(last)}`,
  );
}

describe('time-skipping test server', () => {
  let env: TestWorkflowEnvironment;
  beforeAll(async () => {
    env = await createTimeSkippingEnv();
  });
  afterAll(async () => {
    await env?.teardown();
  });

  it('runs a signal, a query, an activity and a one-day timer in seconds', async () => {
    const calls = { greet: 0 };
    const taskQueue = 'probe-time-skipping';
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle,
      activities: createProbeActivities(calls),
    });
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(serverProbe, {
        taskQueue,
        workflowId: 'probe-ts-1',
        args: [{ name: 'skipper', timerMs: DAY_MS }],
      });
      await waitForPhase(handle, 'waiting-for-approval');
      await handle.signal(approveSignal, 'alice');
      // The server's clock, not the wall clock: it skips the day while the workflow waits on its timer (the day
      // itself could not pass within the test's timeout).
      const serverStart = await env.currentTimeMs();
      const result = await handle.result();
      expect((await env.currentTimeMs()) - serverStart).toBeGreaterThanOrEqual(DAY_MS);
      expect(result.approvedBy).toBe('alice');
      expect(result.greeting).toBe('hello, skipper');
      expect(result.sleptMs).toBeGreaterThanOrEqual(DAY_MS);
      expect(await handle.query(statusQuery)).toEqual({ phase: 'done', approvedBy: 'alice' });
    });
    expect(calls.greet).toBe(1);
  });
});

describe('dev server through the SDK', () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'agent-sessions-sdk-devserver-'));
  let server: EmbeddedDevServer;
  beforeAll(async () => {
    server = await startDevServer({ dataDir });
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('runs the same workflow on a SQLite file', async () => {
    const { env } = server;
    expect(env.supportsTimeSkipping).toBe(false);
    expect(server.address).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(existsSync(path.join(dataDir, 'temporal.sqlite'))).toBe(true);
    const calls = { greet: 0 };
    const taskQueue = 'probe-dev';
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle,
      activities: createProbeActivities(calls),
    });
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(serverProbe, {
        taskQueue,
        workflowId: 'probe-dev-1',
        args: [{ name: 'dev', timerMs: 200 }],
      });
      await waitForPhase(handle, 'waiting-for-approval');
      await handle.signal(approveSignal, 'bob');
      const result = await handle.result();
      expect(result).toMatchObject({ approvedBy: 'bob', greeting: 'hello, dev' });
      expect(result.sleptMs).toBeGreaterThanOrEqual(200);
      expect(await handle.query(statusQuery)).toEqual({ phase: 'done', approvedBy: 'bob' });
    });
    expect(calls.greet).toBe(1);
  });

  it('createDevServerEnv starts an in-memory dev server with the default namespace', async () => {
    const env = await createDevServerEnv();
    try {
      const { namespaceInfo } = await env.connection.workflowService.describeNamespace({
        namespace: 'default',
      });
      expect(namespaceInfo?.name).toBe('default');
    } finally {
      await env.teardown();
    }
  });
});

describe('dev server as a child process on SQLite', () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'agent-sessions-devserver-'));
  let server: DevServerProcess | undefined;
  afterAll(async () => {
    await server?.stop({ signal: 'SIGKILL' });
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('finishes a workflow started before a SIGKILL after a restart on the same file', async () => {
    server = await spawnDevServer({ dataDir });
    const { port, dbFilename } = server;
    expect(dbFilename).toBe(path.join(dataDir, 'temporal.sqlite'));

    const connection = await Connection.connect({ address: server.address });
    const nativeConnection = await NativeConnection.connect({ address: server.address });
    const client = new Client({ connection });
    const calls = { greet: 0 };
    const taskQueue = 'probe-restart';
    const worker = await Worker.create({
      connection: nativeConnection,
      taskQueue,
      workflowBundle,
      activities: createProbeActivities(calls),
    });
    const running = worker.run();
    try {
      const handle = await client.workflow.start(serverProbe, {
        taskQueue,
        workflowId: 'probe-restart-1',
        args: [{ name: 'survivor', timerMs: 2_000 }],
      });
      await waitForPhase(handle, 'waiting-for-approval');
      await handle.signal(approveSignal, 'carol');
      await waitForPhase(handle, 'sleeping');
      expect(calls.greet).toBe(1);
      await expect(spawnDevServer({ dbFilename, port })).rejects.toThrow(/is in use/);

      await server.stop({ signal: 'SIGKILL' });
      expect(await server.exited).toMatchObject({ signal: 'SIGKILL' });
      server = await spawnDevServer({ dbFilename, port });
      expect((await handle.describe()).status.name).toBe('RUNNING');

      const result = await handle.result();
      expect(result).toMatchObject({ approvedBy: 'carol', greeting: 'hello, survivor' });
      expect(result.sleptMs).toBeGreaterThanOrEqual(2_000);
      expect(calls.greet).toBe(1);
      expect(await handle.query(statusQuery)).toEqual({ phase: 'done', approvedBy: 'carol' });
    } finally {
      worker.shutdown();
      await running;
      await nativeConnection.close();
      await connection.close();
    }
  });
});

describe('dev server whose port is taken between our choice and its bind', () => {
  it('starts again on fresh ports and serves', async () => {
    // Another process holds the port the first start is told to use for its HTTP API, as happens when a port
    // found free is taken before the server binds it (the server then exits, or panics, before it is ready).
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const taken = (holder.address() as net.AddressInfo).port;
    const picked: number[] = [];
    let server: DevServerProcess | undefined;
    try {
      server = await spawnDevServer({
        inMemory: true,
        pickPort: async () => {
          const port = picked.length === 1 ? taken : await getFreePort();
          picked.push(port);
          return port;
        },
      });
      // Two ports a start: the first start got the taken one for HTTP, the second two fresh ones.
      expect(picked).toHaveLength(4);
      expect(picked[1]).toBe(taken);
      expect(server.port).toBe(picked[2]);
      const connection = await Connection.connect({ address: server.address });
      try {
        const { namespaceInfo } = await connection.workflowService.describeNamespace({
          namespace: 'default',
        });
        expect(namespaceInfo?.name).toBe('default');
      } finally {
        await connection.close();
      }
    } finally {
      await server?.stop({ signal: 'SIGKILL' });
      await new Promise((resolve) => holder.close(resolve));
    }
  });
});

describe('dev server that crashes', () => {
  it("keeps the crash's reason in its error although thousands of stack lines follow it", async () => {
    // A stand-in for the CLI that dies as a Go program does: the reason first, then every goroutine's stack.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'agent-sessions-crash-'));
    const fake = path.join(dir, 'temporal');
    writeFileSync(
      fake,
      '#!/bin/sh\necho "fatal error: concurrent map writes" >&2\n' +
        'i=0; while [ $i -lt 2000 ]; do echo "goroutine $i [running]:" >&2; i=$((i+1)); done\nexit 2\n',
    );
    chmodSync(fake, 0o755);
    try {
      const error = await spawnDevServer({
        executable: { type: 'existing-path', path: fake, binary: 'temporal', source: 'path' },
        readyTimeoutMs: 5_000,
      }).catch((err: unknown) => err as Error);
      expect(error).toBeInstanceOf(Error);
      expect((error as Error).message).toMatch(/fatal error: concurrent map writes/);
      expect((error as Error).message).toMatch(/goroutine 1999 \[running\]/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
