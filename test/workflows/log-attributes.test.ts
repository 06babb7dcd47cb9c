/**
 * Turn and step on workflow log lines (src/workflows/logging.ts): a worker built by `createSessionWorker` from a
 * workflows module bundles our interceptor module in — quietly: no bundler output reaches the logger — and every
 * workflow log line carries the session id, run id, and the turn and step the workflow announced; two executions in
 * one worker keep their own. The SDK Runtime logger of this test process captures the lines.
 */
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Runtime, type LogLevel, type LogMetadata, type Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDevServerEnv } from '../../src/devserver';
import { createSessionWorker } from '../../src/worker';
import { until } from '../cli/cliSupport';
import { newId } from '../support/sessionEnv';

interface Captured {
  level: LogLevel;
  message: string;
  meta: LogMetadata;
}
const captured: Captured[] = [];
const capture =
  (level: LogLevel) =>
  (message: string, meta: LogMetadata = {}) => {
    captured.push({ level, message, meta });
  };

let env: TestWorkflowEnvironment;
let worker: Worker;
let running: Promise<void>;
const taskQueue = newId('log-attrs-q');

beforeAll(async () => {
  // Before any connection: the Runtime can be installed once per process (vitest runs each file in its own).
  Runtime.install({
    logger: {
      log: (level, message, meta) => capture(level)(message, meta),
      trace: capture('TRACE'),
      debug: capture('DEBUG'),
      info: capture('INFO'),
      warn: capture('WARN'),
      error: capture('ERROR'),
    },
  });
  env = await createDevServerEnv();
  worker = await createSessionWorker({
    connection: env.nativeConnection,
    taskQueue,
    workflowsPath: path.join(__dirname, '../fixtures/logging.workflows.ts'),
  });
  running = worker.run();
});

afterAll(async () => {
  if (worker) {
    worker.shutdown();
    await running;
  }
  await env?.teardown();
});

const line = (message: string) => captured.find((c) => c.message === message);
const logged = (message: string) =>
  until(
    () => line(message),
    (c) => c !== undefined,
    `the log line "${message}"`,
  );

describe('workflow log attributes', () => {
  it('bundles the interceptor quietly and puts the announced turn and step on each execution’s lines', async () => {
    // Bundling ran in beforeAll, through this Runtime's logger: none of webpack's report got there.
    expect(captured.filter((c) => /webpack|bundle/i.test(c.message))).toEqual([]);

    const a = await env.client.workflow.start('loggingTurns', {
      taskQueue,
      workflowId: newId('a'),
      args: ['A', 7],
    });
    await logged('A: in step');
    const b = await env.client.workflow.start('loggingTurns', {
      taskQueue,
      workflowId: newId('b'),
      args: ['B'],
    });
    await logged('B: before');
    await b.signal('go');
    await b.result();
    await a.signal('go');
    await a.result();

    const attrs = (message: string) => {
      const { workflowId, runId, turn, step, sdkComponent } = line(message)!.meta;
      return { workflowId, runId, turn, step, sdkComponent };
    };
    const ofA = { workflowId: a.workflowId, runId: a.firstExecutionRunId, sdkComponent: 'workflow' };
    const ofB = { workflowId: b.workflowId, runId: b.firstExecutionRunId, sdkComponent: 'workflow' };
    expect(attrs('A: before')).toEqual({ ...ofA, turn: undefined, step: undefined });
    expect(attrs('A: turn started')).toEqual({ ...ofA, turn: 7, step: undefined });
    expect(attrs('A: in step')).toEqual({ ...ofA, turn: 7, step: 1 });
    expect(attrs('B: before')).toEqual({ ...ofB, turn: undefined, step: undefined });
    expect(attrs('B: after')).toEqual({ ...ofB, turn: undefined, step: undefined });
    expect(attrs('A: after')).toEqual({ ...ofA, turn: 7, step: 1 });
  });
});
