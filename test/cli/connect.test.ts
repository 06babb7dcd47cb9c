/**
 * Where the CLI connects next to a running `agent-sessions dev`: client commands take its address, namespace and task
 * queue from its dev-server.json; the `worker` command takes its server but not its queue (a worker of one's own,
 * with other tools, must not poll the dev chat's queue). No server needed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from '../../src/cli/args';
import { CONNECTION_OPTIONS, resolveTarget } from '../../src/cli/connect';
import { writeDevFile } from '../../src/cli/devfile';

let dataDir: string;

beforeAll(() => {
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'agent-sessions-connect-'));
  writeDevFile(dataDir, {
    address: '127.0.0.1:47233',
    namespace: 'default',
    taskQueue: 'agent-sessions-dev',
    pid: process.pid,
    session: 'demo',
  });
});

afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

describe('resolveTarget next to a running dev', () => {
  const env = () => ({ AGENT_SESSIONS_DATA_DIR: dataDir });
  const none = () => parse([], CONNECTION_OPTIONS);

  it("gives client commands the dev's address and task queue", () => {
    expect(resolveTarget(none(), env())).toMatchObject({
      address: '127.0.0.1:47233',
      taskQueue: 'agent-sessions-dev',
      from: 'dev',
    });
  });

  it("gives the worker command the dev's server but the default task queue (or the one asked for)", () => {
    expect(resolveTarget(none(), env(), { devTaskQueue: false })).toMatchObject({
      address: '127.0.0.1:47233',
      taskQueue: 'agent-sessions',
    });
    expect(
      resolveTarget(parse(['--task-queue', 'mine'], CONNECTION_OPTIONS), env(), { devTaskQueue: false })
        .taskQueue,
    ).toBe('mine');
    expect(resolveTarget(none(), { ...env(), TASK_QUEUE: 'q2' }, { devTaskQueue: false }).taskQueue).toBe(
      'q2',
    );
  });
});
