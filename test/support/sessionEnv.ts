/**
 * Test support: a time-skipping (or dev) Temporal server, one worker on a fresh task queue with the testing
 * toolset and a scripted-model recorder, and helpers that wait on queries (never on sleeps).
 */
import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { inject } from 'vitest';
import { ScriptedRecorder } from '../../src/activities/model';
import type { ToolDefinition } from '../../src/activities/tools';
import { SessionClient } from '../../src/client';
import { createDevServerEnv, createTimeSkippingEnv } from '../../src/devserver';
import type { SessionEvent } from '../../src/domain/events';
import { spliceShape } from '../../src/domain/inbox';
import { textOf, type ContentBlock } from '../../src/domain/messages';
import { testingTools } from '../../src/activities/testingTools';
import { createSessionWorker, type SessionWorkerOptions } from '../../src/worker';

export interface SessionTestEnv {
  env: TestWorkflowEnvironment;
  worker: Worker;
  taskQueue: string;
  recorder: ScriptedRecorder;
  /** A client for sessions of the given workflow type (default agentSession). */
  sessions(workflowType?: string): SessionClient;
  teardown(): Promise<void>;
}

export async function startSessionTestEnv(
  kind: 'time-skipping' | 'dev' = 'time-skipping',
  extraTools: ToolDefinition[] = [],
  workerOptions: Partial<Omit<SessionWorkerOptions, 'connection' | 'taskQueue'>> = {},
): Promise<SessionTestEnv> {
  const env = kind === 'dev' ? await createDevServerEnv() : await createTimeSkippingEnv();
  const recorder = new ScriptedRecorder();
  const taskQueue = `test-${randomUUID()}`;
  const worker = await createSessionWorker({
    connection: env.nativeConnection,
    taskQueue,
    tools: [...testingTools, ...extraTools],
    scriptedRecorder: recorder,
    workflowBundle: { codePath: inject('workflowBundlePath') },
    ...workerOptions,
  });
  const running = worker.run();
  return {
    env,
    worker,
    taskQueue,
    recorder,
    // The time-skipping server has no search attributes: its clients do not look for them (nor warn).
    sessions: (workflowType) =>
      new SessionClient({
        client: env.client,
        taskQueue,
        ...(workflowType ? { workflowType } : {}),
        ...(kind === 'dev' ? {} : { searchAttributes: 'off' as const }),
      }),
    async teardown() {
      worker.shutdown();
      await running;
      await env.teardown();
    },
  };
}

// Waiting helpers come from the testing kit users get, so the suite exercises them too.
export { settle, waitUntil, patientQuery } from '../../src/testing/env';

/** One readable line per event, for exact sequence assertions. Messages are labelled by their text. */
export function summarize(events: readonly SessionEvent[]): string[] {
  return events.map((e) => {
    switch (e.type) {
      case 'agent/inbox/spliced': {
        const shape = spliceShape(e.data);
        const what =
          shape === 'insert'
            ? e.data.inserted.map((m) => textOf(m.content)).join(',')
            : String(e.data.removedCount);
        return `${shape} ${e.data.target} ${what}`;
      }
      case 'turn/start':
        return `turn/start ${e.data.turn}`;
      case 'turn/end':
        return `turn/end ${e.data.turn} ${e.data.reason.kind}`;
      case 'step/start':
      case 'step/end':
        return `${e.type} ${e.data.turn}.${e.data.step}`;
      case 'user/message':
        return `user/message ${textOf(e.data.message.content)}`;
      case 'assistant/message':
        return `assistant/message ${textOf(e.data.message.content)}${e.data.message.toolCalls ? ` +${e.data.message.toolCalls.length} calls` : ''}`;
      case 'tool/call':
        return `tool/call ${e.data.name} ${e.data.callId}`;
      case 'tool/result':
        return `tool/result ${e.data.callId}${e.data.error ? ` error ${e.data.error.code}` : ''}`;
      case 'tool/approval-requested':
        return `approval requested ${e.data.name} ${e.data.callId}`;
      case 'tool/approval-resolved':
        return `approval ${e.data.callId} ${e.data.decision} by ${e.data.by}`;
      case 'budget/exceeded':
        return `budget/exceeded ${e.data.over.join(',')}${e.data.waits ? '' : ' stop'}`;
      case 'budget/resolved':
        return `budget/resolved ${e.data.decision} by ${e.data.by}`;
      case 'session/forked':
        return `session/forked ${e.data.from}@${e.data.throughSeq}`;
      case 'subsession/started':
        return `subsession/started ${e.data.callId}`;
      case 'compaction/summary':
        return `compaction/summary ${e.data.turn}.${e.data.step} through ${e.data.throughSeq}`;
      case 'subsession/ended':
        return `subsession/ended ${e.data.callId} ${e.data.reason.kind}`;
      case 'session/disposed':
        return 'session/disposed';
    }
  });
}

/** Texts of the user-role messages of a recorded model request. */
export function userTexts(request: {
  messages: readonly { role: string; content: readonly ContentBlock[] }[];
}): string[] {
  return request.messages.filter((m) => m.role === 'user').map((m) => textOf(m.content));
}

export const newId = (prefix = 's') => `${prefix}-${randomUUID()}`;

/**
 * Like {@link startSessionTestEnv}, with test-only tools registered on the worker beside the testing toolset (for
 * behaviour the testing toolset cannot produce, e.g. a slow tool that also returns context).
 */
export function startSessionTestEnvWithTools(
  extraTools: ToolDefinition[],
  kind: 'time-skipping' | 'dev' = 'time-skipping',
): Promise<SessionTestEnv> {
  return startSessionTestEnv(kind, extraTools);
}

/**
 * A client for `workflowType` on a task queue no worker polls yet. Whatever is started and signalled before
 * `startWorker()` reaches the workflow in its first workflow task, in arrival order.
 */
export function withoutWorkerYet(t: SessionTestEnv, workflowType?: string) {
  const taskQueue = `late-${randomUUID()}`;
  const s = new SessionClient({ client: t.env.client, taskQueue, ...(workflowType ? { workflowType } : {}) });
  let stop: () => Promise<void> = async () => {};
  return {
    s,
    async startWorker() {
      const worker = await createSessionWorker({
        connection: t.env.nativeConnection,
        taskQueue,
        tools: testingTools,
        scriptedRecorder: t.recorder,
        workflowBundle: { codePath: inject('workflowBundlePath') },
      });
      const running = worker.run();
      stop = async () => {
        worker.shutdown();
        await running;
      };
    },
    stop: () => stop(),
  };
}
