/**
 * The wire protocol without TypeScript: a session driven by the Temporal CLI binary alone (start, the three lane
 * signals, the `events` / `state` queries, the `deliver` update, dispose) against a dev server with a session worker.
 * Proves that any caller that can send JSON signals, queries and updates can use a session (docs/protocol.md).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDevServerEnv, resolveTemporalCli } from '../../src/devserver';
import type { SessionEvent } from '../../src/domain/events';
import { assertLogValid } from '../../src/domain/invariants';
import type { SessionStateView } from '../../src/domain/session';
import { testingTools } from '../../src/activities/testingTools';
import { createSessionWorker } from '../../src/worker';
import { newId, summarize } from '../support/sessionEnv';

let env: TestWorkflowEnvironment;
let worker: Worker;
let running: Promise<void>;
let cliPath: string;
/** An empty HOME, so no CLI config file or profile of the machine changes what the commands do. */
let home: string;
const taskQueue = `cli-${newId('q')}`;

beforeAll(async () => {
  const cli = resolveTemporalCli({ allowDownload: false });
  if (cli.type !== 'existing-path')
    throw new Error('the Temporal CLI binary is needed (run `npm run setup`)');
  cliPath = cli.path;
  home = mkdtempSync(path.join(os.tmpdir(), 'agent-sessions-cli-home-'));
  env = await createDevServerEnv();
  worker = await createSessionWorker({
    connection: env.nativeConnection,
    taskQueue,
    tools: testingTools,
    workflowBundle: { codePath: inject('workflowBundlePath') },
  });
  running = worker.run();
});

afterAll(async () => {
  if (worker) {
    worker.shutdown();
    await running;
  }
  await env?.teardown();
  if (home) rmSync(home, { recursive: true, force: true });
});

/** Runs `temporal <args> --address … --namespace default -o json` and returns its stdout. Rejects with stderr. */
function temporal(args: string[]): Promise<string> {
  const full = [
    ...args,
    '--address',
    env.address,
    '--namespace',
    'default',
    '--output',
    'json',
    '--color',
    'never',
  ];
  return new Promise((resolve, reject) => {
    execFile(
      cliPath,
      full,
      { env: { PATH: process.env.PATH ?? '', HOME: home }, timeout: 30_000 },
      (err, stdout, stderr) =>
        err
          ? reject(new Error(`temporal ${args.join(' ')} failed: ${stderr || err.message}`))
          : resolve(stdout),
    );
  });
}

/**
 * Array fields of the protocol's query results. The CLI (1.9.1) prints an empty JSON array inside a query result as
 * `null` (the TypeScript client reads `[]` from the same payload), and the protocol itself never sends `null`.
 */
const ARRAY_FIELDS = new Set([
  'events',
  'inserted',
  'content',
  'toolCalls',
  'nextTurn',
  'nextStep',
  'messages',
]);
const cliArrays = (key: string, value: unknown) => (value === null && ARRAY_FIELDS.has(key) ? [] : value);

/** `temporal workflow query` and the single result it prints as JSON. */
async function query<T>(workflowId: string, name: string, input: unknown = {}): Promise<T> {
  const out = JSON.parse(
    await temporal([
      'workflow',
      'query',
      '--workflow-id',
      workflowId,
      '--name',
      name,
      '--input',
      JSON.stringify(input),
    ]),
    cliArrays,
  ) as { queryResult?: unknown[] };
  expect(out.queryResult).toHaveLength(1);
  return out.queryResult![0] as T;
}

async function signal(workflowId: string, name: string, input: unknown): Promise<void> {
  await temporal([
    'workflow',
    'signal',
    '--workflow-id',
    workflowId,
    '--name',
    name,
    '--input',
    JSON.stringify(input),
  ]);
}

/** Polls the `events` query through the CLI until `done` holds (bounded attempts), paging with afterSeq. */
async function eventsUntil(
  workflowId: string,
  done: (events: SessionEvent[]) => boolean,
  what: string,
): Promise<SessionEvent[]> {
  let events: SessionEvent[] = [];
  for (let attempt = 0; attempt < 100; attempt++) {
    events = [];
    for (;;) {
      const afterSeq = events.at(-1)?.seq ?? -1;
      const page = await query<{ events: SessionEvent[]; lastSeq: number }>(workflowId, 'events', {
        afterSeq,
      });
      events.push(...page.events);
      if (page.events.length === 0 || events.at(-1)!.seq >= page.lastSeq) break;
    }
    if (done(events)) return events;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}; last log: ${JSON.stringify(summarize(events))}`);
}

const turnsEnded = (n: number) => (events: SessionEvent[]) =>
  events.filter((e) => e.type === 'turn/end').length >= n;

describe('a session driven by the Temporal CLI alone', () => {
  it('starts, takes the three lanes by signal, answers queries, acknowledges deliver, and disposes', async () => {
    const id = newId('cli');
    const started = JSON.parse(
      await temporal([
        'workflow',
        'start',
        '--task-queue',
        taskQueue,
        '--type',
        'agentSession',
        '--workflow-id',
        id,
        '--input',
        '{}',
      ]),
    ) as { workflowId?: string; runId?: string };
    expect(started.workflowId).toBe(id);

    await signal(id, 'followup', { message: { content: 'hi from the CLI' } });
    const turn1 = await eventsUntil(id, turnsEnded(1), 'turn 1 to end');
    expect(summarize(turn1)).toEqual([
      'insert next-turn hi from the CLI',
      'turn/start 1',
      'claim next-turn 1',
      'step/start 1.1',
      'user/message hi from the CLI',
      'assistant/message echo: hi from the CLI',
      'step/end 1.1',
      'turn/end 1 completed',
    ]);
    const hi = turn1.find((e) => e.type === 'user/message');
    expect(hi?.type === 'user/message' && hi.data.message).toMatchObject({
      role: 'user',
      content: [{ type: 'text', text: 'hi from the CLI' }],
      source: { kind: 'user' },
    });

    // An idle inject waits; the steer that follows wakes the session and its batch carries the context.
    await signal(id, 'inject', { message: { content: 'ctx', source: { kind: 'plugin', plugin: 'cli' } } });
    await signal(id, 'steer', { message: { content: 'steer from the CLI' } });
    const turn2 = await eventsUntil(id, turnsEnded(2), 'turn 2 to end');
    expect(summarize(turn2).slice(turn1.length)).toEqual([
      'insert next-step ctx',
      'insert next-step steer from the CLI',
      'turn/start 2',
      'claim next-step 2',
      'step/start 2.1',
      'user/message ctx',
      'user/message steer from the CLI',
      'assistant/message echo: steer from the CLI',
      'step/end 2.1',
      'turn/end 2 completed',
    ]);
    const sources = turn2.flatMap((e) => (e.type === 'user/message' ? [e.data.message.source] : []));
    expect(sources).toEqual([{ kind: 'user' }, { kind: 'plugin', plugin: 'cli' }, { kind: 'user' }]);

    // The acknowledged path: the update returns the receipt; the same id again is a duplicate.
    const deliver = (message: unknown) =>
      temporal([
        'workflow',
        'update',
        'execute',
        '--workflow-id',
        id,
        '--name',
        'deliver',
        '--input',
        JSON.stringify({ lane: 'followup', message }),
      ]);
    const receipt = JSON.parse(await deliver({ id: 'cli-1', content: 'again' })) as { result?: object };
    expect(receipt.result).toEqual({
      messageId: 'cli-1',
      lane: 'followup',
      duplicate: false,
      seq: expect.any(Number),
    });
    const again = JSON.parse(await deliver({ id: 'cli-1', content: 'again' })) as { result?: unknown };
    // A duplicate reports the seq of the first insertion.
    expect(again.result).toEqual({ ...receipt.result, duplicate: true });
    // A bad payload is rejected by the update's validator with the field named.
    await expect(deliver({ content: 42 })).rejects.toThrow(/message\.content/);

    const turn3 = await eventsUntil(id, turnsEnded(3), 'turn 3 to end');
    expect(summarize(turn3).slice(turn2.length)).toEqual([
      'insert next-turn again',
      'turn/start 3',
      'claim next-turn 1',
      'step/start 3.1',
      'user/message again',
      'assistant/message echo: again',
      'step/end 3.1',
      'turn/end 3 completed',
    ]);
    const entered = turn3.flatMap((e) => (e.type === 'user/message' ? [e.data.message.id] : []));
    expect(entered.at(-1)).toBe('cli-1');

    const state = await query<SessionStateView>(id, 'state');
    expect(state).toMatchObject({
      status: 'idle',
      turn: 3,
      step: 1,
      pending: { nextTurn: [], nextStep: [] },
      refused: 0,
    });

    // Dispose completes the workflow; queries keep working on the completed session.
    await signal(id, 'dispose', {});
    const final = await eventsUntil(
      id,
      (events) => events.at(-1)?.type === 'session/disposed',
      'session/disposed',
    );
    expect(final).toHaveLength(turn3.length + 1);
    assertLogValid(final);
    const described = JSON.parse(await temporal(['workflow', 'describe', '--workflow-id', id])) as {
      workflowExecutionInfo?: { status?: string };
    };
    expect(described.workflowExecutionInfo?.status).toMatch(/COMPLETED/);
    expect((await query<SessionStateView>(id, 'state')).status).toBe('disposed');
  });
});
