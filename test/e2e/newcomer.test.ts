/**
 * The first hour of a newcomer, answered by the real local model (issue 35): the dev chat's session (demoConfig of
 * the local model: its system text and the demo tools) on a worker with the dev chat's toolsets and the local
 * provider, driven turn by turn through SessionClient as the chat sends lines (a followup when idle, a steer while a
 * turn runs). Each answer is checked for what the newcomer needs: 391; the time in words; 400 (from "that number");
 * 400 without an internal line; a French greeting without a tool call; 169 (the steer taken). A second script with
 * other numbers and questions checks that the same mechanisms, not the wording, get the answers.
 *
 * Greedy decoding: a run differs from the last only by the clock's time. Each test logs `newcomer <script>: n/m
 * right` and each answer, so a loop of runs can count them. Skipped, like test/e2e/local-model.test.ts, when the
 * model is not installed (outside CI).
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, type Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  createLocalProvider,
  defaultLocalModelPath,
  disposeLocalModels,
} from '../../src/activities/providers';
import { demoConfig, demoModel } from '../../src/cli/demo';
import { SessionClient } from '../../src/client';
import { spawnDevServer, type DevServerProcess } from '../../src/devserver';
import type { SessionEvent } from '../../src/domain/events';
import { assertLogValid } from '../../src/testing';
import { createSessionWorker, toolsFromToolsets } from '../../src/worker';
import { eventually } from '../support/eventually';

const MODEL = defaultLocalModelPath();
const installed = MODEL !== undefined && existsSync(MODEL);
if (!installed && process.env.CI)
  throw new Error(`the local model is missing (${MODEL}): .ci/run's setup phase (npm run setup) installs it`);

const DAY = '(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)';
const MONTH = '(January|February|March|April|May|June|July|August|September|October|November|December)';
/** The time in words ("It is 11:48 UTC on Sunday, …"), never an ISO timestamp. */
const TIME_IN_WORDS = new RegExp(`\\b\\d{2}:\\d{2} UTC on ${DAY}\\b`);
const ISO = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/;
/** Lines the provider uses internally; an answer never repeats them. */
const INTERNAL = /now answer my question|tool says|let me use the/i;

interface Line {
  text: string;
  /** Sent while this turn runs, as the chat sends a line typed then. */
  steer?: string;
  /** What a right answer holds. */
  right: (answer: string, calls: string[]) => boolean;
  expected: string;
}

const number = (n: number) => (answer: string) => new RegExp(`(?<![\\d.])${n}(?![\\d])`).test(answer);
const clean = (answer: string) => !INTERNAL.test(answer) && !ISO.test(answer);

const NEWCOMER: Line[] = [
  { text: 'What is 17 times 23?', expected: '391', right: number(391) },
  { text: 'What time is it?', expected: 'the time in words', right: (a) => TIME_IN_WORDS.test(a) },
  { text: 'And what is that number plus 9?', expected: '400', right: number(400) },
  { text: 'What is 391 plus 9?', expected: '400, no internal line', right: number(400) },
  {
    text: 'Thanks. Can you say hello in French?',
    expected: 'a French greeting, no tool call',
    right: (a, calls) => /\b(bonjour|salut|bonsoir|coucou)\b/i.test(a) && calls.length === 0,
  },
  {
    text: 'What is 12 times 12?',
    steer: 'Actually, use 13 times 13 instead.',
    expected: '169 (the steer taken)',
    right: number(169),
  },
];

/** Other numbers, another clock question, a reference back, a greeting: the mechanisms, not the script's words. */
const VARIANT: Line[] = [
  { text: 'What is 25 times 4?', expected: '100', right: number(100) },
  {
    text: 'What is the date today?',
    expected: 'the date in words',
    right: (a) => new RegExp(`${DAY}, \\d{1,2} ${MONTH} \\d{4}`).test(a),
  },
  { text: 'And what is that number minus 30?', expected: '70', right: number(70) },
  { text: 'How much is 144 divided by 12?', expected: '12', right: number(12) },
  {
    text: 'Hello! Who are you?',
    expected: 'a text answer, no tool call',
    right: (a, calls) => a.trim().length > 0 && calls.length === 0,
  },
  {
    text: 'What is 6 times 7?',
    steer: 'Sorry, use 8 times 9 instead.',
    expected: '72 (the steer taken)',
    right: number(72),
  },
];

let dataDir: string;
let server: DevServerProcess;
let connection: Connection;
let nativeConnection: NativeConnection;
let worker: Worker;
let running: Promise<void>;
let sessions: SessionClient;

beforeAll(async () => {
  if (!installed) return;
  Runtime.install({ logger: new DefaultLogger('WARN') });
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'agent-sessions-newcomer-'));
  server = await spawnDevServer({ dataDir });
  connection = await Connection.connect({ address: server.address });
  nativeConnection = await NativeConnection.connect({ address: server.address });
  const taskQueue = `newcomer-${randomUUID()}`;
  // The dev chat's worker: its toolsets (src/cli/dev.ts) and the local provider.
  worker = await createSessionWorker({
    connection: nativeConnection,
    taskQueue,
    tools: toolsFromToolsets(['testing', 'demo']),
    providers: { local: createLocalProvider().provider },
    workflowBundle: { codePath: inject('workflowBundlePath') },
  });
  running = worker.run();
  sessions = new SessionClient({ client: new Client({ connection }), taskQueue });
});

afterAll(async () => {
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

function ofType<T extends SessionEvent['type']>(events: readonly SessionEvent[], type: T) {
  return events.filter((e): e is Extract<SessionEvent, { type: T }> => e.type === type);
}

/** Sends the script line by line; returns each turn's last answer, its tool calls, and whether it is right. */
async function converse(name: string, script: readonly Line[]) {
  const id = `newcomer-${name}-${randomUUID()}`;
  // The dev chat's session with no provider key and the model installed.
  const model = demoModel({}, ['scripted', 'local'], true);
  expect(model).toEqual({ provider: 'local' });
  await sessions.start(id, demoConfig(model));
  const turns: { line: Line; answer: string; calls: string[]; right: boolean }[] = [];
  for (const [i, line] of script.entries()) {
    const turn = i + 1;
    await sessions.followup(id, { id: `line-${turn}`, content: line.text });
    if (line.steer) {
      // While the turn runs: its first model step has started, so the steer enters at a later step of this turn.
      await eventually(
        () => sessions.allEvents(id),
        (events) => events.some((e) => e.type === 'step/start' && e.data.turn === turn),
        `turn ${turn} to start`,
      );
      await sessions.steer(id, { id: `steer-${turn}`, content: line.steer });
    }
    await eventually(
      () => sessions.state(id),
      (s) => s.status === 'idle' && s.turn >= turn,
      `turn ${turn} to end`,
      150_000,
    );
    const events = await sessions.allEvents(id);
    const answers = ofType(events, 'assistant/message').filter((a) => a.data.turn === turn);
    const answer = (answers.at(-1)?.data.message.content ?? []).map((b) => b.text).join('');
    const calls = ofType(events, 'tool/call')
      .filter((c) => c.data.turn === turn)
      .map((c) => `${c.data.name} ${JSON.stringify(c.data.arguments ?? {})}`);
    turns.push({ line, answer, calls, right: line.right(answer, calls) && clean(answer) });
  }
  const events = await sessions.allEvents(id);
  assertLogValid(events);
  const right = turns.filter((t) => t.right).length;
  console.log(
    `newcomer ${name}: ${right}/${turns.length} right\n` +
      turns
        .map(
          (t, i) =>
            `  ${t.right ? 'ok ' : 'BAD'} ${i + 1}. ${t.line.text}${t.line.steer ? ` [steer: ${t.line.steer}]` : ''} → ${JSON.stringify(t.answer)}` +
            ` (calls: ${t.calls.join('; ') || 'none'}; expected ${t.line.expected})`,
        )
        .join('\n'),
  );
  return { id, events, turns };
}

describe.skipIf(!installed)('the newcomer script, answered by the local model', () => {
  it('six answers right: 391, the time in words, 400, 400, a French greeting, 169 after the steer', async () => {
    const { events, turns } = await converse('script', NEWCOMER);
    for (const t of turns)
      expect.soft(t.right, `${t.line.text} → ${t.answer} (${t.line.expected})`).toBe(true);
    // The steer entered turn 6 (it was sent while the turn ran) and every turn ended normally.
    const steer = ofType(events, 'user/message').find((m) => m.data.message.id === 'steer-6');
    expect(steer).toBeDefined();
    expect(ofType(events, 'turn/end').map((e) => e.data.reason.kind)).toEqual(
      NEWCOMER.map(() => 'completed'),
    );
  });

  it('the same mechanisms on other questions: other numbers, the date, a reference back, a greeting, a steer', async () => {
    const { turns } = await converse('variant', VARIANT);
    for (const t of turns)
      expect.soft(t.right, `${t.line.text} → ${t.answer} (${t.line.expected})`).toBe(true);
  });
});
