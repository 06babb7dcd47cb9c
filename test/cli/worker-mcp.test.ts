/**
 * `agent-sessions worker` with MCP servers from AGENT_SESSIONS_MCP_FILE (issue 18): the start line names them, a
 * session selecting `mcp:<server>/<tool>` calls the tool through the worker, `${VAR}` in a server's `env` is read
 * from the worker's environment, and stopping the worker stops the stdio servers it started. A bad file stops the
 * worker at once with a message naming the file and the field.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionClient } from '../../src/client';
import { createDevServerEnv } from '../../src/devserver';
import { eventually } from '../support/eventually';
import { newId, settle } from '../support/sessionEnv';
import { assertBuilt, cli, cliEnv, ROOT, spawnCli, until } from './cliSupport';

let env: TestWorkflowEnvironment;
let tmp: string;

beforeAll(async () => {
  assertBuilt();
  env = await createDevServerEnv();
  tmp = mkdtempSync(path.join(os.tmpdir(), 'worker-mcp-'));
});

afterAll(async () => {
  await env?.teardown();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('agent-sessions worker with AGENT_SESSIONS_MCP_FILE', () => {
  it('serves a session that calls an MCP tool, and stops the stdio server when it stops', async () => {
    const state = path.join(tmp, 'state');
    const file = path.join(tmp, 'mcp.json');
    writeFileSync(
      file,
      JSON.stringify({
        mcpServers: {
          fix: {
            command: process.execPath,
            args: [path.join(ROOT, 'test/fixtures/mcp/fixture-server.mjs')],
            env: { FIXTURE_STATE_DIR: '${MCP_FIXTURE_STATE}' },
          },
        },
      }),
    );
    mkdirSync(state);
    const taskQueue = newId('worker-mcp-q');
    const live = spawnCli(
      ['worker'],
      cliEnv({
        TEMPORAL_ADDRESS: env.address,
        TASK_QUEUE: taskQueue,
        AGENT_SESSIONS_MCP_FILE: file,
        MCP_FIXTURE_STATE: state,
      }),
    );
    try {
      await until(live.stderr, (s) => s.includes('agent-sessions worker:'), 'the worker start line', 1200);
      expect(live.stderr()).toContain(' mcp=fix ');
      const sessions = new SessionClient({ client: env.client, taskQueue, searchAttributes: 'off' });
      const id = newId('worker-mcp');
      await sessions.start(id, {
        tools: ['mcp:fix/echo'],
        model: {
          provider: 'scripted',
          steps: [{ toolCalls: [{ name: 'fix__echo', args: { text: 'hi' } }] }],
        },
      });
      await sessions.followup(id, 'go');
      const events = await settle(sessions, id);
      const result = events.find((e) => e.type === 'tool/result');
      expect(result?.data).toMatchObject({ content: [{ type: 'text', text: 'echo: hi' }] });
      const pids = readdirSync(state)
        .filter((f) => f.startsWith('started-'))
        .map((f) => Number(f.slice('started-'.length)));
      expect(pids).toHaveLength(1); // started by the worker, with the state folder from its environment
      live.child.kill('SIGINT');
      expect(await live.exited).toBe(0);
      await eventually(
        () => Promise.resolve(alive(pids[0]!)),
        (a) => !a,
        'the stdio server to stop',
        20_000,
      );
    } finally {
      if (live.child.exitCode === null) live.child.kill('SIGKILL');
    }
  });

  it('a bad file stops the worker at once, naming the file and the field', async () => {
    const file = path.join(tmp, 'bad.json');
    writeFileSync(file, JSON.stringify({ mcpServers: { fs: { command: 'node', args: 'oops' } } }));
    const r = await cli(['worker'], cliEnv({ TEMPORAL_ADDRESS: env.address, AGENT_SESSIONS_MCP_FILE: file }));
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `agent-sessions worker: AGENT_SESSIONS_MCP_FILE ${file}: invalid mcpServers.fs.args: Invalid input: expected array, received string\n`,
    );
  });
});
