/**
 * Model requests send by reference the entries their run's history already holds (src/domain/entryRefs.ts), on the
 * dev server with real workers. Read from the session's actual history: no model activity input holds the user's
 * message or the tool's result, yet the model is sent exactly the log's transcript — also when the model activity
 * runs on a worker whose store never saw the session (it reads the references from history), and when it cannot
 * resolve them at all (it fails TranscriptRefMiss and the workflow sends that request again, every entry inline).
 */
import { randomUUID } from 'node:crypto';
import { Worker } from '@temporalio/worker';
import type { Client } from '@temporalio/client';
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { createActivities, type ActivityDeps } from '../../src/activities';
import { EntryStore } from '../../src/activities/entryStore';
import { ScriptedRecorder } from '../../src/activities/model';
import { testingTools } from '../../src/activities/testingTools';
import { ToolRegistry } from '../../src/activities/tools';
import type { ModelStepInput } from '../../src/activities/types';
import { SessionClient } from '../../src/client';
import { createDevServerEnv } from '../../src/devserver';
import { isEntryRef } from '../../src/domain/entryRefs';
import type { SessionEvent } from '../../src/domain/events';
import { projectTranscript } from '../../src/domain/transcript';
import type { ModelSpec } from '../../src/domain/wire';
import { createSessionWorker } from '../../src/worker';
import { newId, settle } from '../support/sessionEnv';

let env: TestWorkflowEnvironment;
const running: { worker: Worker; done: Promise<void> }[] = [];

beforeAll(async () => {
  env = await createDevServerEnv();
});
afterAll(async () => {
  for (const r of running) {
    r.worker.shutdown();
    await r.done;
  }
  await env?.teardown();
});

/** Text no other part of a request repeats: found in an input only if the entry itself was sent inline. */
const marker = (what: string, n: number) => `${what}-${n}-${randomUUID()} `.repeat(40);

/** Each turn: the model asks `echo` to return a long text, then answers. */
function model(toolTexts: string[]): ModelSpec {
  return {
    provider: 'scripted',
    steps: toolTexts.flatMap((text, n) => [
      { toolCalls: [{ name: 'echo', args: { text } }] },
      { text: `answer ${n + 1}` },
    ]),
  };
}

/**
 * Workers for one test: by default one worker that runs the session's workflow and its activities (as `npm start`
 * does). `activitiesApart` runs the activities on a second worker whose store the workflow never fills — a worker of
 * a cluster that did not run the session's workflow task.
 */
async function serve(opts: { activitiesApart?: Partial<ActivityDeps> } = {}) {
  const taskQueue = newId('q');
  const recorder = new ScriptedRecorder();
  const store = new EntryStore();
  const start = (worker: Worker) => running.push({ worker, done: worker.run() });
  start(
    await createSessionWorker({
      connection: env.nativeConnection,
      taskQueue,
      tools: testingTools,
      scriptedRecorder: recorder,
      entryStore: store,
      workflowBundle: { codePath: inject('workflowBundlePath') },
      ...(opts.activitiesApart ? { worker: { activities: {} } } : {}),
    }),
  );
  if (opts.activitiesApart) {
    start(
      await Worker.create({
        connection: env.nativeConnection,
        taskQueue,
        activities: createActivities({
          tools: new ToolRegistry(testingTools),
          scriptedRecorder: recorder,
          ...opts.activitiesApart,
        }),
      }),
    );
  }
  return { taskQueue, recorder, store, sessions: new SessionClient({ client: env.client, taskQueue }) };
}

interface ModelActivity {
  input: ModelStepInput;
  failure?: string;
}

/** The session's model activities in the order scheduled, with their inputs and failure types, from its history. */
async function modelActivities(client: Client, id: string): Promise<ModelActivity[]> {
  const history = await client.workflow.getHandle(id).fetchHistory();
  const byEventId = new Map<string, ModelActivity>();
  const out: ModelActivity[] = [];
  for (const e of history.events ?? []) {
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (scheduled?.activityType?.name === 'modelStep') {
      const input = await decodeFromPayloadsAtIndex<ModelStepInput>(
        client.options.loadedDataConverter,
        0,
        scheduled.input?.payloads,
      );
      const activity = { input };
      byEventId.set(String(e.eventId), activity);
      out.push(activity);
    }
    const failed = e.activityTaskFailedEventAttributes;
    const activity = failed && byEventId.get(String(failed.scheduledEventId));
    if (activity) activity.failure = failed.failure?.applicationFailureInfo?.type ?? 'unknown';
  }
  return out;
}

/** What each model request must have shown: the log's transcript before that request's answer (rule 14). */
function expectedRequests(events: SessionEvent[]) {
  return events.flatMap((e, i) =>
    e.type === 'assistant/message' ? [projectTranscript(events.slice(0, i))] : [],
  );
}

/** Runs `turns` turns, each a long user message and a tool returning a long text. */
async function conversation(sessions: SessionClient, turns: number) {
  const id = newId('refs');
  const users = Array.from({ length: turns }, (_, n) => marker('user', n + 1));
  const tools = Array.from({ length: turns }, (_, n) => marker('tool', n + 1));
  await sessions.start(id, { model: model(tools), tools: ['echo'] });
  for (const text of users) await sessions.followup(id, text);
  const events = await settle(sessions, id, turns);
  return { id, users, tools, events };
}

it("no model activity input holds the user's message or the tool's result; the model still sees exactly the log", async () => {
  const { sessions, recorder, store } = await serve();
  const { id, users, tools, events } = await conversation(sessions, 2);
  // One worker: the workflow's sink filled its store before each request ran, so no request read history.
  expect(store.stats).toEqual({ hits: 7, misses: 0 });

  const activities = await modelActivities(env.client, id);
  expect(activities).toHaveLength(4);
  expect(activities.filter((a) => a.failure)).toEqual([]);
  // Without `model`: a scripted model's request carries its own script step, which names the tool's argument.
  const inputs = JSON.stringify(activities.map(({ input: { model: _script, ...input } }) => input));
  for (const text of [...users, ...tools]) expect(inputs).not.toContain(text.trim());
  // Every entry after the first request is a reference: the answer, the tool's result, the next user message.
  expect(activities.map((a) => a.input.newEntries.map((e) => (isEntryRef(e) ? e.ref.in : 'inline')))).toEqual(
    [['delivery'], ['model', 'tool'], ['model', 'delivery'], ['model', 'tool']],
  );

  const seen = recorder.requests(id).map((r) => r.messages);
  expect(seen).toEqual(expectedRequests(events));
  expect(JSON.stringify(seen.at(-1))).toContain(tools[1]!.trim());
  expect(JSON.stringify(seen.at(-1))).toContain(users[1]!.trim());
}, 120_000);

it('a worker whose store never saw the session reads the references from history and sends the same transcript', async () => {
  const { sessions, recorder } = await serve({ activitiesApart: {} });
  const { id, tools, events } = await conversation(sessions, 2);

  const activities = await modelActivities(env.client, id);
  // Resolved on the first attempt: no TranscriptRefMiss, no request sent twice.
  expect(activities).toHaveLength(4);
  expect(activities.filter((a) => a.failure)).toEqual([]);
  expect(activities.flatMap((a) => a.input.newEntries).filter(isEntryRef).length).toBeGreaterThanOrEqual(6);
  const seen = recorder.requests(id).map((r) => r.messages);
  expect(seen).toEqual(expectedRequests(events));
  expect(JSON.stringify(seen.at(-1))).toContain(tools[1]!.trim());
}, 120_000);

it('when a worker cannot resolve a reference, the request fails TranscriptRefMiss once and is sent again inline', async () => {
  const { sessions, recorder } = await serve({
    activitiesApart: {
      readRefs: () => Promise.reject(new Error('history read refused (test)')),
    },
  });
  const { id, users, events } = await conversation(sessions, 1);

  const activities = await modelActivities(env.client, id);
  // Each request with a reference: one failed attempt, then the same request with every entry inline.
  expect(activities.map((a) => [a.input.requestIndex, a.failure ?? 'ok'])).toEqual([
    [0, 'TranscriptRefMiss'],
    [0, 'ok'],
    [1, 'TranscriptRefMiss'],
    [1, 'ok'],
  ]);
  expect(activities[1]!.input.newEntries.some(isEntryRef)).toBe(false);
  expect(JSON.stringify(activities[1]!.input)).toContain(users[0]!.trim());
  expect(events.filter((e) => e.type === 'turn/end').map((e) => e.data)).toMatchObject([
    { turn: 1, reason: { kind: 'completed' } },
  ]);
  expect(recorder.requests(id).map((r) => r.messages)).toEqual(expectedRequests(events));
}, 120_000);
