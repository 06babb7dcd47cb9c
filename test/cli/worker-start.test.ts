/**
 * `agent-sessions worker` started from dist/: it loads the bundle `npm run build` wrote (no bundler at start, no
 * bundler output), serves a session, and logs as LOG_LEVEL says — at the default level and at `warn` the start
 * prints its one line and nothing else; at `debug` every line is a JSON object and workflow and activity lines
 * carry the session id and run id (activity lines also turn and step); an invalid LOG_LEVEL fails naming it.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionClient } from '../../src/client';
import { createDevServerEnv } from '../../src/devserver';
import { newId, settle, summarize } from '../support/sessionEnv';
import { assertBuilt, cli, cliEnv, ROOT, spawnCli, until, type LiveCli } from './cliSupport';

let env: TestWorkflowEnvironment;

beforeAll(async () => {
  assertBuilt();
  if (!existsSync(path.join(ROOT, 'dist/workflow-bundle.js')))
    throw new Error('dist/workflow-bundle.js is missing: run `npm run build`');
  env = await createDevServerEnv();
});

afterAll(async () => {
  await env?.teardown();
});

type Line = Record<string, unknown> & { msg: string; level: string };

const lines = (text: string) => text.split('\n').filter((l) => l.trim());
const parsed = (text: string): Line[] => lines(text).map((l) => JSON.parse(l) as Line);

/**
 * Starts the CLI worker on a fresh task queue, runs one session with a tool call through it (and, with `refuse`, sends
 * it a payload it refuses, which its workflow code logs as a warning), stops it with SIGINT and returns its output
 * and the session's ids.
 */
async function serveOneSession(extra: Record<string, string>, { refuse = false } = {}) {
  const taskQueue = newId('worker-start-q');
  const live: LiveCli = spawnCli(
    ['worker', '--toolsets', 'testing'],
    cliEnv({ TEMPORAL_ADDRESS: env.address, TASK_QUEUE: taskQueue, ...extra }),
  );
  let stopped = false;
  try {
    await until(live.stderr, (s) => s.includes('agent-sessions worker:'), 'the worker start line', 1200);
    const sessions = new SessionClient({ client: env.client, taskQueue, searchAttributes: 'off' });
    const id = newId('worker-start');
    await sessions.start(id, {
      model: { provider: 'scripted', steps: [{ toolCalls: [{ name: 'echo', args: { text: 'hi' } }] }] },
      tools: ['echo'],
    });
    await sessions.followup(id, 'hello');
    const events = await settle(sessions, id, 1);
    const runId = (await sessions.handle(id).describe()).runId;
    if (refuse) {
      // A payload the session refuses: the workflow logs a warning (a line from workflow code).
      await env.client.workflow.getHandle(id).signal('followup', 42);
      await until(
        () => sessions.state(id),
        (s) => s.refused === 1,
        'the refused signal to be counted',
      );
    }
    live.child.kill('SIGINT');
    stopped = true;
    const code = await live.exited;
    return { id, runId, events, code, stdout: live.stdout(), stderr: live.stderr(), taskQueue };
  } finally {
    if (!stopped) live.child.kill('SIGKILL');
  }
}

describe('agent-sessions worker from dist/', () => {
  it('loads the prebuilt bundle, prints only its start line and serves a session', async () => {
    const run = await serveOneSession({});
    expect(run.code).toBe(0);
    expect(summarize(run.events)).toContain('tool/result call_0_0');
    expect(run.stdout).toBe('');
    expect(run.stderr).not.toMatch(/webpack|bundle created|asset workflow-bundle/i);
    const [start, ...rest] = parsed(run.stderr);
    expect(rest).toEqual([]);
    expect(start).toMatchObject({
      level: 'info',
      address: env.address,
      namespace: 'default',
      taskQueue: run.taskQueue,
      toolsets: ['testing'],
      providers: expect.arrayContaining(['scripted']),
      workflows: 'prebuilt',
      tracing: 'off',
      metrics: 'off',
    });
    expect(start!.msg).toMatch(
      new RegExp(
        `^agent-sessions worker: ${env.address.replace(/\./g, '\\.')} namespace=default task-queue=${run.taskQueue} toolsets=testing providers=scripted\\S* .* workflows=prebuilt version=${run.taskQueue}:wf-[0-9a-f]{16} tracing=off metrics=off$`,
      ),
    );
  });

  it('with LOG_LEVEL=warn prints the start line and nothing else', async () => {
    const run = await serveOneSession({ LOG_LEVEL: 'warn' });
    expect(run.code).toBe(0);
    expect(lines(run.stderr)).toHaveLength(1);
    expect(parsed(run.stderr)[0]!.msg).toMatch(/^agent-sessions worker: /);
  });

  it('with LOG_LEVEL=debug writes JSON lines; workflow and activity lines carry session id and run id', async () => {
    const run = await serveOneSession({ LOG_LEVEL: 'debug' }, { refuse: true });
    expect(run.code).toBe(0);
    const all = parsed(run.stderr); // every line parses as JSON
    expect(all.length).toBeGreaterThan(5);
    const ofSession = all.filter((l) => l.sessionId === run.id);
    for (const l of ofSession) expect(l.runId).toBe(run.runId);

    const refused = ofSession.find((l) => l.msg === 'refused a signal payload');
    expect(refused).toMatchObject({
      level: 'warn',
      sdkComponent: 'workflow',
      sessionId: run.id,
      runId: run.runId,
    });
    expect(ofSession.find((l) => l.msg === 'Workflow started')).toMatchObject({
      workflowType: 'agentSession',
    });

    const completed = ofSession.filter((l) => l.msg === 'Activity completed');
    expect(completed.find((l) => l.activityType === 'modelStep')).toMatchObject({ turn: 1, step: 1 });
    expect(completed.find((l) => l.activityType === 'executeTool')).toMatchObject({
      turn: 1,
      step: 1,
      callId: 'call_0_0',
    });
    // Still no bundler output, and the SDK's lifecycle lines are there at debug.
    expect(run.stderr).not.toMatch(/webpack|bundle created/i);
    expect(all.some((l) => l.msg === 'Worker state changed')).toBe(true);
  });

  it('fails at once on an invalid LOG_LEVEL, naming it', async () => {
    const r = await cli(['worker'], cliEnv({ TEMPORAL_ADDRESS: env.address, LOG_LEVEL: 'loud' }));
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      'agent-sessions worker: invalid configuration: LOG_LEVEL: expected one of trace, debug, info, warn, error\n',
    );
  });

  it('stops at once on a bad hooks file, naming the file and the field, before it connects', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'worker-hooks-'));
    try {
      const file = path.join(dir, 'hooks.json');
      writeFileSync(
        file,
        JSON.stringify({
          hooks: [{ name: 'audit', kind: 'nope', http: { url: 'http://127.0.0.1:1/audit' } }],
        }),
      );
      const r = await cli(
        ['worker'],
        cliEnv({ TEMPORAL_ADDRESS: env.address, AGENT_SESSIONS_HOOKS_FILE: file }),
        {
          timeoutMs: 20_000,
        },
      );
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(
        new RegExp(
          `^agent-sessions worker: AGENT_SESSIONS_HOOKS_FILE ${file}: hooks\\[0\\]\\.kind: .*pre-step`,
        ),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
