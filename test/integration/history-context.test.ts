/**
 * Model activities fill a transcript cache miss from the session's workflow history (src/activities/historyContext.ts),
 * not by querying the workflow. On the dev server: a session with tool calls runs through several continue-as-new
 * runs; a cache that has never seen it assembles the last model request from the histories alone — following the
 * chain of runs — and gets exactly the transcript the workflow's own `__modelContext` query gives (the cache checks
 * it against the hash the workflow computed). Then the same for a session whose history is encrypted.
 */
import { randomBytes } from 'node:crypto';
import { Client } from '@temporalio/client';
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { EntryRefResolver, EntryStore } from '../../src/activities/entryStore';
import { historyContextReader, historyRefReader } from '../../src/activities/historyContext';
import { testingTools } from '../../src/activities/testingTools';
import {
  TranscriptCache,
  type ContextReader,
  type ResolvedModelStepInput,
} from '../../src/activities/transcriptCache';
import type { ModelStepInput } from '../../src/activities/types';
import { SessionClient } from '../../src/client';
import { encryptionDataConverter, type EncryptionKeyring } from '../../src/codec';
import { modelContextQuery } from '../../src/contract';
import { createDevServerEnv } from '../../src/devserver';
import type { ModelSpec } from '../../src/domain/wire';
import { createSessionWorker } from '../../src/worker';
import { newId, settle } from '../support/sessionEnv';
import type { TestWorkflowEnvironment } from '@temporalio/testing';

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

async function serve(taskQueue: string, encryption?: EncryptionKeyring) {
  const worker = await createSessionWorker({
    connection: env.nativeConnection,
    taskQueue,
    tools: testingTools,
    workflowBundle: { codePath: inject('workflowBundlePath') },
    ...(encryption ? { encryption } : {}),
  });
  running.push({ worker, done: worker.run() });
}

/** Each turn: one echo tool call, then an answer. */
const model = (turns: number): ModelSpec => ({
  provider: 'scripted',
  steps: Array.from({ length: turns }, (_, n) => [
    { toolCalls: [{ name: 'echo', args: { text: `echo of turn ${n + 1}` } }] },
    { text: `answer ${n + 1}` },
  ]).flat(),
});

/** The input of the session's last model request, decoded from its latest run's history. */
async function lastModelRequest(client: Client, id: string): Promise<ModelStepInput> {
  const history = await client.workflow.getHandle(id).fetchHistory();
  const scheduled = (history.events ?? []).filter(
    (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'modelStep',
  );
  return decodeFromPayloadsAtIndex<ModelStepInput>(
    client.options.loadedDataConverter,
    0,
    scheduled.at(-1)!.activityTaskScheduledEventAttributes!.input!.payloads,
  );
}

/** The request with its references resolved from its run's history, as a model activity with an empty store does. */
async function resolved(client: Client, request: ModelStepInput): Promise<ResolvedModelStepInput> {
  const refs = new EntryRefResolver(
    new EntryStore(),
    historyRefReader(() => client),
  );
  return { ...request, newEntries: await refs.resolve(request) };
}

/** Runs a session of `turns` turns that continues as new every few events; returns its last model request. */
async function runSession(taskQueue: string, client: Client) {
  const sessions = new SessionClient({ client, taskQueue, searchAttributes: 'off' });
  const id = newId('history-context');
  const turns = 5;
  await sessions.start(id, { model: model(turns), tools: ['echo'], continueAsNewAfterEvents: 40 });
  for (let n = 1; n <= turns; n++) await sessions.followup(id, `question ${n}`);
  await settle(sessions, id, turns);
  return { id, request: await lastModelRequest(client, id) };
}

function counting(reader: ContextReader) {
  const reads: string[] = [];
  const counted: ContextReader = (sessionId, runId, from, to) => {
    reads.push(runId);
    return reader(sessionId, runId, from, to);
  };
  return { reads, counted };
}

it('a cache miss is filled from the histories of every run and matches the workflow query', async () => {
  const taskQueue = newId('q');
  await serve(taskQueue);
  const { request: last } = await runSession(taskQueue, env.client);
  const request = await resolved(env.client, last);
  // The last request's prefix reaches back into earlier runs: the chain must be followed.
  expect(request.runId).not.toBe(request.chainId);
  expect(request.prefix.count).toBeGreaterThan(10);

  const fromHistory = counting(historyContextReader(() => env.client));
  const viaQuery: ContextReader = (sessionId, runId, from, to) =>
    env.client.workflow.getHandle(sessionId, runId).query(modelContextQuery, { from, to });
  const a = await new TranscriptCache(fromHistory.counted).assemble(request);
  const b = await new TranscriptCache(viaQuery).assemble(request);
  expect(a).toEqual(b);
  expect(a).toHaveLength(request.prefix.count + request.newEntries.length);
  expect(new Set(fromHistory.reads).size).toBeGreaterThan(1);
  expect(a.map((e) => e.role)).toContain('tool');
  expect(JSON.stringify(a)).toContain(`echo of turn 5`);
}, 120_000);

/**
 * The client the reader sees, counting the history events it is given; `reverse: false` makes the server look like
 * one without the newest-first read (gRPC UNIMPLEMENTED, as the time-skipping test server answers).
 */
function countingClient(client: Client, opts: { reverse: boolean }) {
  const counts = { events: 0, reverseCalls: 0 };
  const service = client.workflowService;
  const workflowService = {
    async getWorkflowExecutionHistoryReverse(
      request: Parameters<typeof service.getWorkflowExecutionHistoryReverse>[0],
    ) {
      counts.reverseCalls += 1;
      if (!opts.reverse) throw Object.assign(new Error('unimplemented'), { code: 12 });
      const response = await service.getWorkflowExecutionHistoryReverse(request);
      counts.events += response.history?.events?.length ?? 0;
      return response;
    },
    async getWorkflowExecutionHistory(request: Parameters<typeof service.getWorkflowExecutionHistory>[0]) {
      const response = await service.getWorkflowExecutionHistory(request);
      counts.events += response.history?.events?.length ?? 0;
      return response;
    },
  };
  return { counts, client: { options: client.options, workflowService } as unknown as Client };
}

it('a cache that is only behind reads the run newest first; a server without that read is read in order, with the same entries', async () => {
  const taskQueue = newId('q');
  await serve(taskQueue);
  const { request } = await runSession(taskQueue, env.client);
  const history = await env.client.workflow.getHandle(request.sessionId, request.runId).fetchHistory();
  const runEvents = history.events?.length ?? 0;
  const viaQuery: ContextReader = (sessionId, runId, from, to) =>
    env.client.workflow.getHandle(sessionId, runId).query(modelContextQuery, { from, to });
  // The last entries before the request that this run holds (the request's prefix reaches back into earlier runs).
  const run = await viaQuery(request.sessionId, request.runId, 0, request.prefix.count);
  expect(request.prefix.count - run.base).toBeGreaterThan(0);
  const from = Math.max(run.base, request.prefix.count - 2);
  const expected = run.entries.slice(from - run.base);

  const newestFirst = countingClient(env.client, { reverse: true });
  const tail = await historyContextReader(() => newestFirst.client)(
    request.sessionId,
    request.runId,
    from,
    request.prefix.count,
  );
  expect(tail.entries).toEqual(expected);
  expect(newestFirst.counts.reverseCalls).toBe(1);

  const inOrder = countingClient(env.client, { reverse: false });
  const same = await historyContextReader(() => inOrder.client)(
    request.sessionId,
    request.runId,
    from,
    request.prefix.count,
  );
  expect(same.entries).toEqual(tail.entries);
  expect(inOrder.counts.events).toBe(runEvents);
}, 120_000);

it('reads an encrypted history through the client codec', async () => {
  const keyring: EncryptionKeyring = { current: { id: 'k1', key: new Uint8Array(randomBytes(32)) } };
  const taskQueue = newId('q');
  await serve(taskQueue, keyring);
  const client = new Client({ connection: env.connection, dataConverter: encryptionDataConverter(keyring) });
  const { request: last } = await runSession(taskQueue, client);
  const request = await resolved(client, last);
  const entries = await new TranscriptCache(historyContextReader(() => client)).assemble(request);
  expect(entries).toHaveLength(request.prefix.count + request.newEntries.length);
  expect(JSON.stringify(entries)).toContain('question 5');

  // Without the key the history cannot be read: a clear failure, never a wrong transcript.
  const plain = historyContextReader(() => env.client);
  await expect(new TranscriptCache(plain).assemble(request)).rejects.toThrow();
}, 120_000);
