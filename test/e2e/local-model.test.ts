/**
 * The end-to-end tier: durable sessions driven by a real language model, the `local` provider (llama.cpp in the
 * worker, the GGUF `npm run setup` installs). A Temporal dev server; an in-process worker with the demo tools; and,
 * for the crash, workers that are the real CLI (`node bin/agent-sessions.js worker`) killed with SIGKILL.
 * Covered: a tool round trip (the model calls a tool, then answers after its result); a worker killed during
 * generation (the model activity is retried, the step has exactly one assistant/message); a cancel mid-generation
 * (an interrupted assistant/message with the text so far, and the next turn still answers); a steer during a tool
 * batch (it enters at the next step); a compaction whose summary the model writes. Assertions are on structure and
 * sources, never on the model's wording.
 *
 * The model must be installed: under CI a missing model fails here (`.ci/run`'s setup phase should have failed
 * first); elsewhere the file is skipped with the command to run. Needs `npm run build` (npm test runs it first).
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { DefaultLogger, NativeConnection, Runtime, type Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { demoTools } from '../../src/activities/demoTools';
import { toolCallGrammar } from '../../src/activities/providers/local/grammar';
import { testingTools } from '../../src/activities/testingTools';
import {
  createLocalProvider,
  defaultLocalModelPath,
  disposeLocalModels,
} from '../../src/activities/providers';
import { defineTool, ToolRegistry } from '../../src/activities/tools';
import { SessionClient } from '../../src/client';
import { spawnDevServer, type DevServerProcess } from '../../src/devserver';
import type { SessionEvent } from '../../src/domain/events';
import { assertLogValid } from '../../src/testing';
import { createSessionWorker } from '../../src/worker';
import { eventually } from '../support/eventually';
import { killWorker, ROOT, startWorker, type WorkerProcess } from '../support/workerProcess';

const STARTED = temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED;
const MODEL = defaultLocalModelPath();
const installed = MODEL !== undefined && existsSync(MODEL);
if (!installed && process.env.CI)
  throw new Error(`the local model is missing (${MODEL}): .ci/run's setup phase (npm run setup) installs it`);
if (!installed)
  console.warn(`test/e2e skipped: the local model is not installed (${MODEL}); run \`npm run setup\``);

const SYSTEM = 'You are a helpful assistant. Be brief. Use a tool when it helps.';
const STORY = 'Tell me a long story about a lighthouse keeper, a storm and a lost ship, in many paragraphs.';

let dataDir: string;
let server: DevServerProcess;
let connection: Connection;
let nativeConnection: NativeConnection;
let worker: Worker;
let running: Promise<void>;
let sessions: SessionClient;

/** A tool the test holds open: it runs until `release()`, heartbeating, so messages can arrive during the batch. */
let lookupStarted: () => void = () => {};
let lookupReleased = false;
const lookupTool = defineTool({
  name: 'lookup',
  description: 'Looks up facts about a topic.',
  input: z.object({ topic: z.string().min(1).max(80) }),
  async execute({ topic }, ctx) {
    lookupStarted();
    while (!lookupReleased) await ctx.sleep(100);
    return `Facts about ${topic}: it is sunny there today.`;
  },
});

beforeAll(async () => {
  if (!installed) return;
  if (!existsSync(path.join(ROOT, 'dist/cli/main.js')))
    throw new Error('dist/ is missing: run `npm run build` first (npm test does it in pretest)');
  Runtime.install({ logger: new DefaultLogger('WARN') });
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'agent-sessions-e2e-'));
  server = await spawnDevServer({ dataDir });
  connection = await Connection.connect({ address: server.address });
  nativeConnection = await NativeConnection.connect({ address: server.address });
  const taskQueue = `e2e-${randomUUID()}`;
  worker = await createSessionWorker({
    connection: nativeConnection,
    taskQueue,
    tools: [...demoTools, lookupTool],
    providers: { local: createLocalProvider().provider },
    workflowBundle: { codePath: inject('workflowBundlePath') },
  });
  running = worker.run();
  sessions = new SessionClient({ client: new Client({ connection }), taskQueue });
});

afterAll(async () => {
  killAll();
  await Promise.all([...cliWorkers].map((w) => w.exited));
  if (worker) {
    worker.shutdown();
    await running;
  }
  await nativeConnection?.close();
  await connection?.close();
  await server?.stop();
  await disposeLocalModels();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

/** Waits until `turns` turns have ended and the session is idle; returns the log, checked. */
async function settled(client: SessionClient, id: string, turns: number, timeoutMs = 120_000) {
  await eventually(
    () => client.state(id),
    (s) => s.status === 'idle' && s.turn >= turns,
    `${turns} turn(s) of ${id} to end`,
    timeoutMs,
  );
  const events = await client.allEvents(id);
  assertLogValid(events);
  return events;
}

/** The partial text in the heartbeat of the session's running model activity, if any. */
async function heartbeatText(client: SessionClient, id: string): Promise<string> {
  const description = await client.handle(id).describe();
  const activity = (description.raw.pendingActivities ?? []).find(
    (a) => a.activityType?.name === 'modelStep' && a.state === STARTED,
  );
  const data = activity?.heartbeatDetails?.payloads?.[0]?.data;
  if (!data) return '';
  return (JSON.parse(Buffer.from(data).toString('utf8')) as { partialText?: string }).partialText ?? '';
}

function ofType<T extends SessionEvent['type']>(events: readonly SessionEvent[], type: T) {
  return events.filter((e): e is Extract<SessionEvent, { type: T }> => e.type === type);
}

const textOf = (e: Extract<SessionEvent, { type: 'assistant/message' }>) =>
  e.data.message.content.map((b) => b.text).join('');

// ---- real worker processes (the CLI), for the crash ----

const cliWorkers = new Set<WorkerProcess>();
const cliQueue = `e2e-cli-${randomUUID()}`;

function killAll(): void {
  for (const w of cliWorkers) w.child.kill('SIGKILL');
}

/** Starts `agent-sessions worker` (demo tools, the local provider from its defaults); resolves once it polls. */
function startCliWorker(): Promise<WorkerProcess> {
  return startWorker(
    {
      TEMPORAL_ADDRESS: server.address,
      TEMPORAL_NAMESPACE: 'default',
      TASK_QUEUE: cliQueue,
      AGENT_SESSIONS_TOOLSETS: 'demo',
    },
    cliWorkers,
    60_000,
  );
}

/** Attempt numbers with which the session's model activities started (from the workflow history). */
async function modelAttempts(client: SessionClient, id: string): Promise<number[]> {
  const history = await client.handle(id).fetchHistory();
  const scheduled = new Set<string>();
  const attempts: number[] = [];
  for (const e of history.events ?? []) {
    if (e.activityTaskScheduledEventAttributes?.activityType?.name === 'modelStep')
      scheduled.add(String(e.eventId));
    const started = e.activityTaskStartedEventAttributes;
    if (started && scheduled.has(String(started.scheduledEventId))) attempts.push(started.attempt ?? 0);
  }
  return attempts;
}

describe.skipIf(!installed)('a real model (local provider) drives durable sessions', () => {
  it('every tool of the demo and testing toolsets compiles to a tool-call grammar llama.cpp accepts', async () => {
    const { getLlama } = await import('node-llama-cpp');
    const llama = await getLlama({ gpu: false, build: 'never' });
    const registry = new ToolRegistry([...demoTools, ...testingTools, lookupTool]);
    const specs = registry.names().map((name) => registry.spec(name)!);
    for (const spec of specs) await llama.createGrammar({ grammar: toolCallGrammar([spec]) });
    await llama.createGrammar({ grammar: toolCallGrammar(specs) });
  });

  it('tool round trip: the model calls a tool, reads its result in the next step, and answers in text', async () => {
    const id = `e2e-tools-${randomUUID()}`;
    await sessions.start(id, {
      model: { provider: 'local' },
      system: SYSTEM,
      tools: ['clock', 'calculator'],
    });
    await sessions.followup(id, 'What is 17 times 23?');
    const events = await settled(sessions, id, 1);

    expect(ofType(events, 'turn/end').map((e) => e.data.reason.kind)).toEqual(['completed']);
    const calls = ofType(events, 'tool/call');
    expect(calls).toHaveLength(1);
    expect(['clock', 'calculator']).toContain(calls[0]!.data.name);
    expect(calls[0]!.data).toMatchObject({ turn: 1, step: 1 });
    const results = ofType(events, 'tool/result');
    expect(results.map((r) => r.data.callId)).toEqual([calls[0]!.data.callId]);

    const answers = ofType(events, 'assistant/message');
    expect(answers.map((a) => `${a.data.turn}.${a.data.step}`)).toEqual(['1.1', '1.2']);
    expect(answers[0]!.data.message.toolCalls?.map((c) => c.callId)).toEqual([calls[0]!.data.callId]);
    // Step 2 answers in text, after the result, without calling again; both steps report usage.
    expect(answers[1]!.data.message.toolCalls ?? []).toEqual([]);
    expect(textOf(answers[1]!).trim().length).toBeGreaterThan(0);
    expect(events.indexOf(results[0]!)).toBeLessThan(events.indexOf(answers[1]!));
    for (const a of answers) expect(a.data.usage?.outputTokens).toBeGreaterThan(0);

    // What the model saw in step 2: the question from the user, its call, the result from the tool, then only
    // tool context (the clock leaves a card from plugin:clock), and last its answer.
    const transcript = await sessions.transcript(id);
    const entries = transcript.messages;
    expect(entries.slice(0, 3).map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(entries[0]).toMatchObject({ role: 'user', source: { kind: 'user' } });
    expect(entries[2]).toMatchObject({ role: 'tool', callId: calls[0]!.data.callId });
    for (const context of entries.slice(3, -1))
      expect(context).toMatchObject({ role: 'user', source: { kind: 'plugin', plugin: 'clock' } });
    expect(entries.at(-1)!.role).toBe('assistant');
  });

  it('a worker killed with SIGKILL during generation: the model activity is retried; one assistant/message for the step', async () => {
    const first = await startCliWorker();
    const client = new SessionClient({ client: new Client({ connection }), taskQueue: cliQueue });
    const id = `e2e-crash-${randomUUID()}`;
    await client.start(id, { model: { provider: 'local', toolChoice: 'none' }, system: SYSTEM });
    await client.followup(id, { id: 'm-story', content: STORY });
    // Generation is under way: the worker heartbeats the text decoded so far.
    await eventually(
      () => heartbeatText(client, id),
      (text) => text.length > 0,
      'the first decoded text in a heartbeat',
    );
    await killWorker(first);
    await startCliWorker();
    const events = await settled(client, id, 1, 150_000);

    expect(ofType(events, 'user/message').map((e) => e.data.message.id)).toEqual(['m-story']);
    const answers = ofType(events, 'assistant/message');
    expect(answers.map((a) => `${a.data.turn}.${a.data.step}`)).toEqual(['1.1']);
    expect(answers[0]!.data.interrupted).toBeUndefined();
    expect(textOf(answers[0]!).length).toBeGreaterThan(0);
    expect(['completed', 'max-tokens']).toContain(ofType(events, 'turn/end')[0]!.data.reason.kind);
    // The kill hit the running call: it completed on a later attempt.
    expect((await modelAttempts(client, id))[0]).toBeGreaterThanOrEqual(2);
  });

  it('a cancel mid-generation keeps the text so far as an interrupted answer; the next turn still answers', async () => {
    const id = `e2e-cancel-${randomUUID()}`;
    await sessions.start(id, { model: { provider: 'local', toolChoice: 'none' }, system: SYSTEM });
    await sessions.followup(id, STORY);
    const seen = await eventually(
      () => heartbeatText(sessions, id),
      (text) => text.length >= 20,
      'some decoded text in a heartbeat',
    );
    await sessions.cancel(id);
    let events = await settled(sessions, id, 1);

    expect(ofType(events, 'turn/end').map((e) => e.data.reason.kind)).toEqual(['aborted']);
    const interrupted = ofType(events, 'assistant/message');
    expect(interrupted).toHaveLength(1);
    expect(interrupted[0]!.data.interrupted).toBe(true);
    // The text so far: at least what a heartbeat showed before the cancel, and it starts with it.
    expect(textOf(interrupted[0]!).startsWith(seen)).toBe(true);

    await sessions.followup(id, 'Say hello in one short sentence.');
    events = await settled(sessions, id, 2);
    expect(ofType(events, 'turn/end').map((e) => e.data.reason.kind)).toEqual(['aborted', 'completed']);
    const next = ofType(events, 'assistant/message').filter((a) => a.data.turn === 2);
    expect(next).toHaveLength(1);
    expect(next[0]!.data.interrupted).toBeUndefined();
    expect(textOf(next[0]!).trim().length).toBeGreaterThan(0);
  });

  it('a steer sent during a tool batch enters at the next step, after the results', async () => {
    lookupReleased = false;
    const started = new Promise<void>((resolve) => (lookupStarted = resolve));
    const id = `e2e-steer-${randomUUID()}`;
    await sessions.start(id, { model: { provider: 'local' }, system: SYSTEM, tools: ['lookup'] });
    await sessions.followup(id, 'Look up the weather in Paris.');
    await started;
    await sessions.steer(id, { id: 'm-steer', content: 'Answer in one short sentence.' });
    // The steer waits in next-step while the tool runs; then the tool finishes.
    await eventually(
      () => sessions.state(id),
      (s) => s.pending.nextStep.includes('m-steer'),
      'the steer to be pending for the next step',
    );
    lookupReleased = true;
    const events = await settled(sessions, id, 1);

    expect(ofType(events, 'turn/end').map((e) => e.data.reason.kind)).toEqual(['completed']);
    const call = ofType(events, 'tool/call')[0]!;
    expect(call.data).toMatchObject({ name: 'lookup', turn: 1, step: 1 });
    const result = ofType(events, 'tool/result').find((r) => r.data.callId === call.data.callId)!;
    const steer = ofType(events, 'user/message').find((m) => m.data.message.id === 'm-steer')!;
    expect(steer.data.message.source).toEqual({ kind: 'user' });
    const step2 = events.findIndex((e) => e.type === 'step/start' && e.data.turn === 1 && e.data.step === 2);
    const answer2 = ofType(events, 'assistant/message').find((a) => a.data.turn === 1 && a.data.step === 2)!;
    // Order: the result (step 1), then step 2 opens with the steer, then the model's step-2 answer.
    expect(events.indexOf(result)).toBeLessThan(step2);
    expect(step2).toBeLessThan(events.indexOf(steer));
    expect(events.indexOf(steer)).toBeLessThan(events.indexOf(answer2));
    // The model saw it: in the transcript the steer follows the tool result, with its source.
    const entries = (await sessions.transcript(id)).messages;
    expect(entries.slice(0, 4).map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'user']);
    expect(entries[3]).toMatchObject({ id: 'm-steer', source: { kind: 'user' } });
  });

  it('compaction by the real model: the oldest part becomes its summary, and the session goes on', async () => {
    const id = `e2e-compact-${randomUUID()}`;
    await sessions.start(id, {
      model: { provider: 'local' },
      system: SYSTEM,
      context: { maxTokens: 256, compactAt: 0.1, keepRecent: 1 },
    });
    // The first message is long, as a part worth compacting is: a summary of a one-line exchange can be as long as it.
    const facts = [
      'My name is Ada and I keep bees on a hill near the sea. I have six hives: two by the old oak, one by the gate, ' +
        'two in the orchard among the apple trees, and one on the roof of the shed. I started with one hive ten ' +
        'years ago, after my grandmother gave me her smoker, her veil and her notebooks. I sell the honey at the ' +
        'market in town every Saturday, in small jars with a yellow label. Remember all of that.',
      'The hive by the old oak has a new queen since May; the one by the gate is weak. What should I check first?',
    ];
    for (const [i, fact] of facts.entries()) {
      await sessions.followup(id, { id: `fact-${i}`, content: fact });
      await settled(sessions, id, i + 1);
    }
    const events = await sessions.allEvents(id);
    assertLogValid(events);
    // Each turn answered (a small model may stop at its token limit: that is still an answer).
    for (const end of ofType(events, 'turn/end'))
      expect(['completed', 'max-tokens']).toContain(end.data.reason.kind);
    const summaries = ofType(events, 'compaction/summary');
    expect(summaries.length).toBeGreaterThanOrEqual(1);
    const first = summaries[0]!.data;
    // The local model wrote the summary (any wording), and the projection shrank.
    expect(first.model).toMatch(/^local/);
    expect(first.summary.trim().length).toBeGreaterThan(0);
    expect(first.tokensAfter, `summary: ${first.summary}`).toBeLessThan(first.tokensBefore);
    // The model saw the summary first, and the log still holds every message.
    const entries = (await sessions.transcript(id)).messages;
    expect(entries[0]).toMatchObject({ role: 'user', source: { kind: 'compaction' } });
    expect(ofType(events, 'user/message').map((e) => e.data.message.id)).toEqual(['fact-0', 'fact-1']);
  });
});
