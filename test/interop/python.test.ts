/**
 * Interop: a Python service drives a session with the Temporal Python SDK alone (test/interop/python_client.py):
 * start, followup / inject / steer by signal, the `deliver` update, the `events` / `state` / `transcript` queries and
 * dispose, against a dev server with our TypeScript worker. Proves a non-TypeScript service can use the wire protocol.
 * The SDK comes from the Python package index into .venv-py-test (scripts/setup-python-test.sh, idempotent).
 * Skips only when python3 is missing.
 */
import { execFile, spawnSync } from 'node:child_process';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDevServerEnv } from '../../src/devserver';
import type { SessionEvent } from '../../src/domain/events';
import { assertLogValid } from '../../src/domain/invariants';
import type { SessionStateView } from '../../src/domain/session';
import { testingTools } from '../../src/activities/testingTools';
import { createSessionWorker } from '../../src/worker';
import { newId, summarize } from '../support/sessionEnv';

const root = path.resolve(__dirname, '../..');
const hasPython = spawnSync('python3', ['--version']).status === 0;

function run(file: string, args: string[], timeout: number): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { cwd: root, timeout, maxBuffer: 32 * 1024 * 1024 }, (err, stdout, stderr) =>
      err
        ? reject(new Error(`${path.basename(file)} ${args.join(' ')} failed: ${err.message}\n${stderr}`))
        : resolve({ stdout, stderr }),
    );
  });
}

describe.skipIf(!hasPython)('a Python service on the wire protocol (temporalio Python SDK)', () => {
  let python: string;
  let env: TestWorkflowEnvironment;
  let worker: Worker;
  let running: Promise<void>;
  const taskQueue = newId('py-q');

  beforeAll(async () => {
    const setup = await run('bash', [path.join(root, 'scripts/setup-python-test.sh')], 280_000);
    python = setup.stdout.trim().split('\n').at(-1)!;
    env = await createDevServerEnv();
    worker = await createSessionWorker({
      connection: env.nativeConnection,
      taskQueue,
      tools: testingTools,
      workflowBundle: { codePath: inject('workflowBundlePath') },
    });
    running = worker.run();
  }, 300_000);

  afterAll(async () => {
    if (worker) {
      worker.shutdown();
      await running;
    }
    await env?.teardown();
  });

  it('starts a session, sends followup, inject and steer by signal, delivers by update and reads events by query', async () => {
    const sessionId = newId('py');
    const { stdout } = await run(
      python,
      [
        path.join(root, 'test/interop/python_client.py'),
        '--address',
        env.address,
        '--task-queue',
        taskQueue,
        '--session',
        sessionId,
      ],
      90_000,
    );
    const seen = JSON.parse(stdout) as {
      events: SessionEvent[];
      receipts: unknown[];
      stateBefore: SessionStateView;
      stateAfter: SessionStateView;
      transcript: { messages: { role: string; source?: unknown }[] };
    };

    assertLogValid(seen.events);
    expect(summarize(seen.events)).toEqual([
      'insert next-turn hello from python',
      'turn/start 1',
      'claim next-turn 1',
      'step/start 1.1',
      'user/message hello from python',
      'assistant/message echo: hello from python',
      'step/end 1.1',
      'turn/end 1 completed',
      'insert next-step context from python',
      'insert next-step steer from python',
      'turn/start 2',
      'claim next-step 2',
      'step/start 2.1',
      'user/message context from python',
      'user/message steer from python',
      'assistant/message echo: steer from python',
      'step/end 2.1',
      'turn/end 2 completed',
      'insert next-turn acknowledged from python',
      'turn/start 3',
      'claim next-turn 1',
      'step/start 3.1',
      'user/message acknowledged from python',
      'assistant/message echo: acknowledged from python',
      'step/end 3.1',
      'turn/end 3 completed',
      'session/disposed',
    ]);
    // The messages keep the ids and sources the Python service gave them.
    const entered = seen.events.flatMap((e) =>
      e.type === 'user/message' ? [[e.data.message.id, e.data.message.source]] : [],
    );
    expect(entered).toEqual([
      ['py-1', { kind: 'user' }],
      ['py-ctx', { kind: 'plugin', plugin: 'python' }],
      ['py-2', { kind: 'user' }],
      ['py-3', { kind: 'user' }],
    ]);
    // Both receipts name the splice of the first insertion.
    const seq = (seen.receipts as { seq?: number }[])[0]?.seq;
    expect(seq).toEqual(expect.any(Number));
    expect(seen.receipts).toEqual([
      { messageId: 'py-3', lane: 'followup', duplicate: false, seq },
      { messageId: 'py-3', lane: 'followup', duplicate: true, seq },
    ]);
    expect(seen.stateBefore).toMatchObject({
      status: 'idle',
      turn: 3,
      pending: { nextTurn: [], nextStep: [] },
      refused: 0,
    });
    expect(seen.stateAfter.status).toBe('disposed');
    expect(seen.transcript.messages.filter((m) => m.role === 'user').map((m) => m.source)).toEqual([
      { kind: 'user' },
      { kind: 'plugin', plugin: 'python' },
      { kind: 'user' },
      { kind: 'user' },
    ]);
    // The Temporal server recorded the Python client's signals and update on the TypeScript workflow.
    const history = await env.client.workflow.getHandle(sessionId).fetchHistory();
    const signals = (history.events ?? []).flatMap((e) =>
      e.workflowExecutionSignaledEventAttributes?.signalName
        ? [e.workflowExecutionSignaledEventAttributes.signalName]
        : [],
    );
    expect(signals).toEqual(['followup', 'inject', 'steer', 'dispose']);
  });
});
