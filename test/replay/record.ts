/**
 * Drivers of the representative scenarios whose histories make the replay corpus (test/replay/histories/), and the
 * function that runs them all and exports each history as `<scenario>-v<version>.json`. Used by record.test.ts:
 * `RECORD_HISTORIES=1 npx vitest run test/replay/record.test.ts` rewrites the corpus; without the variable the same
 * run records into a temporary folder and replays it (the fresh half of "replay both ways", STYLE.md 12).
 *
 * Each driver checks the few facts that make its history the scenario it is named after, so a behaviour change
 * cannot silently record a different scenario under an old name. Waits on queries only (no sleeps).
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleOption } from '@temporalio/worker';
import { SessionClient } from '../../src/client';
import type { SessionEvent } from '../../src/domain/events';
import {
  createTestSessionEnv,
  exportHistory,
  patientQuery,
  settle,
  waitUntil,
  type TestSessionEnv,
} from '../../src/testing';

/** Version suffix of the files this code records. Bump it when a recorded scenario is deliberately re-recorded. */
export const CORPUS_VERSION = 1;
export const CORPUS_DIR = path.join(__dirname, 'histories');

/** One run of one session to export. */
interface Recorded {
  name: string;
  sessionId: string;
  runId?: string;
}

interface Ctx {
  t: TestSessionEnv;
  env: TestWorkflowEnvironment;
  bundle: WorkflowBundleOption;
}

const ctx = (text: string) => ({ content: text, source: { kind: 'plugin', plugin: 'watcher' } });
const newId = (scenario: string) => `replay-${scenario}-${randomUUID()}`;
const types = (events: readonly SessionEvent[]) => events.map((e) => e.type);
const turnEndKinds = (events: readonly SessionEvent[]) =>
  events.flatMap((e) => (e.type === 'turn/end' ? [e.data.reason.kind] : []));

function check(condition: boolean, what: string, events: readonly SessionEvent[]): void {
  if (!condition)
    throw new Error(`recorded scenario is not what it claims (${what}): ${types(events).join(', ')}`);
}

const hasType = (type: string) => (events: readonly SessionEvent[]) => events.some((e) => e.type === type);

/** Scenario 2: idle inject, then a follow-up; one turn whose first batch is [A, P]. */
async function idleInjectFollowup({ t }: Ctx): Promise<Recorded[]> {
  const s = t.client;
  const id = newId('02');
  await s.start(id);
  await s.inject(id, ctx('A'));
  await waitUntil(
    () => s.state(id),
    (st) => st.pending.nextStep.length === 1,
    'A pending',
  );
  await s.followup(id, 'P');
  const events = await t.settle(id);
  check(
    turnEndKinds(events).join() === 'completed' &&
      events.filter((e) => e.type === 'user/message').length === 2,
    'one turn [A, P]',
    events,
  );
  return [{ name: 'scenario-02-idle-inject-followup', sessionId: id }];
}

/** Scenario 5: a tool body injects A into its own session; A enters after the tool result, at step 2. */
async function injectFromTool({ t }: Ctx): Promise<Recorded[]> {
  const s = t.client;
  const id = newId('05');
  await s.start(id, {
    tools: ['inject_self'],
    model: {
      provider: 'scripted',
      steps: [{ toolCalls: [{ name: 'inject_self', args: { content: 'A' } }] }, { text: 'done' }],
    },
  });
  await s.followup(id, 'P');
  const events = await t.settle(id);
  const result = events.findIndex((e) => e.type === 'tool/result');
  const entered = events.findIndex((e, i) => i > result && e.type === 'user/message');
  check(result > 0 && entered > result, 'A enters after the tool result', events);
  return [{ name: 'scenario-05-inject-from-tool', sessionId: id }];
}

/** Scenario 8 (workflow type agentSessionGuard): followup(secret), followup(safe) in one task → blocked; W wakes safe. */
async function preStepReject({ env, bundle }: Ctx): Promise<Recorded[]> {
  // Both follow-ups must reach the session in one workflow task: send them before any worker polls its queue.
  const taskQueue = `replay-late-${randomUUID()}`;
  const s = new SessionClient({ client: env.client, taskQueue, workflowType: 'agentSessionGuard' });
  const id = newId('08');
  await s.start(id);
  await s.followup(id, 'secret');
  await s.followup(id, 'safe');
  const late = await createTestSessionEnv({
    env,
    taskQueue,
    workflowBundle: bundle,
    workflowType: 'agentSessionGuard',
  });
  try {
    const first = await settle(s, id);
    check(turnEndKinds(first).join() === 'blocked', 'turn 1 blocked', first);
    await s.followup(id, 'W');
    const events = await settle(s, id, 3);
    check(
      turnEndKinds(events).join() === 'blocked,completed,completed',
      'safe and W run after the block',
      events,
    );
  } finally {
    await late.teardown();
  }
  return [{ name: 'scenario-08-prestep-reject', sessionId: id }];
}

/** Scenario 11: two tool calls, each with a context; both results precede both contexts, which enter at step 2. */
async function toolBatchContexts({ t }: Ctx): Promise<Recorded[]> {
  const s = t.client;
  const id = newId('11');
  const emit = (c: string) => ({ name: 'emit_context', args: { contexts: [{ content: c }] } });
  await s.start(id, {
    tools: ['emit_context'],
    model: {
      provider: 'scripted',
      steps: [{ toolCalls: [emit('ctx-c1'), emit('ctx-c2')] }, { text: 'done' }],
    },
  });
  await s.followup(id, 'P');
  const events = await t.settle(id);
  check(events.filter((e) => e.type === 'user/message').length === 3, 'P, ctx-c1, ctx-c2 entered', events);
  return [{ name: 'scenario-11-tool-batch-contexts', sessionId: id }];
}

/** Scenario 13: a steer during a batch of three tool calls; all three commit, the steer enters at step 2. */
async function steerDuringTools({ t }: Ctx): Promise<Recorded[]> {
  const s = t.client;
  const id = newId('13');
  const sleep = { name: 'sleep', args: { ms: 1500 } };
  await s.start(id, {
    tools: ['sleep'],
    model: { provider: 'scripted', steps: [{ toolCalls: [sleep, sleep, sleep] }, { text: 'done' }] },
  });
  await s.followup(id, 'P');
  await waitUntil(() => s.allEvents(id), hasType('tool/call'), 'the tool batch to start');
  await s.steer(id, 'S');
  const events = await t.settle(id);
  const lastResult = events.map((e) => e.type).lastIndexOf('tool/result');
  const steer = events.findIndex((e) => e.type === 'user/message' && e.data.message.content[0]?.text === 'S');
  check(
    events.filter((e) => e.type === 'tool/result').length === 3 && steer > lastResult,
    'S enters after the batch',
    events,
  );
  return [{ name: 'scenario-13-steer-during-tools', sessionId: id }];
}

/** Scenario 16: cancel during a model call with Q (next-turn) and A (next-step) pending; no turn 2. */
async function cancelDuringModel({ t }: Ctx): Promise<Recorded[]> {
  const s = t.client;
  const id = newId('16');
  await s.start(id, {
    model: { provider: 'scripted', steps: [{ text: 'partial answer', delayMs: 30_000 }] },
  });
  await s.followup(id, 'P');
  await waitUntil(() => s.allEvents(id), hasType('step/start'), 'step 1.1');
  await waitUntil(
    async () => t.recorder.requests(id).length,
    (n) => n === 1,
    'the model call',
  );
  await s.followup(id, 'Q');
  await s.inject(id, ctx('A'));
  await waitUntil(
    () => s.state(id),
    (st) => st.pending.nextStep.length === 1 && st.pending.nextTurn.length === 1,
    'Q and A pending',
  );
  await s.cancel(id);
  const events = await t.settle(id);
  check(turnEndKinds(events).join() === 'aborted', 'turn 1 aborted, no turn 2', events);
  return [{ name: 'scenario-16-cancel-during-model', sessionId: id }];
}

/** Scenario 20: dispose during a tool; the turn is aborted {disposed}, session/disposed is last, the workflow ends. */
async function disposeDuringTool({ t }: Ctx): Promise<Recorded[]> {
  const s = t.client;
  const id = newId('20');
  await s.start(id, {
    tools: ['sleep'],
    model: { provider: 'scripted', steps: [{ toolCalls: [{ name: 'sleep', args: { ms: 30_000 } }] }] },
  });
  await s.followup(id, 'P');
  await s.inject(id, ctx('late context'));
  await waitUntil(() => s.allEvents(id), hasType('tool/call'), 'the tool call');
  await s.dispose(id);
  // Not handle.result(): waiting on a result lets the time-skipping server jump ahead, and the next timer it would
  // jump to is the ten-year execution timeout of every idle session on it.
  await waitUntil(
    async () => (await s.handle(id).describe()).status.name,
    (status) => status === 'COMPLETED',
    'the workflow to complete',
  );
  const events = await s.allEvents(id);
  check(events.at(-1)?.type === 'session/disposed', 'session/disposed last', events);
  return [{ name: 'scenario-20-dispose-during-tool', sessionId: id }];
}

/** Scenario 22: a pending idle inject crosses continue-as-new; the next run's first turn enters [A, P]. Every run. */
async function continueAsNew({ t }: Ctx): Promise<Recorded[]> {
  const s = t.client;
  const id = newId('22');
  const runId = async () => (await s.handle(id).describe()).runId;
  await s.start(id, { continueAsNewAfterEvents: 10 });
  await s.followup(id, 'first');
  await t.settle(id);
  const firstRun = await runId();
  await s.followup(id, 'second'); // turn 2 ends past the budget: the run continues as new after it
  await waitUntil(runId, (r) => r !== firstRun, 'a new run');
  await s.inject(id, ctx('A'));
  await waitUntil(
    () => patientQuery(s, () => s.state(id)),
    (st) => st.pending.nextStep.length === 1,
    'A pending',
  );
  await s.followup(id, 'P');
  const events = await t.settle(id, 3);
  check(turnEndKinds(events).join() === 'completed,completed,completed', 'three turns across runs', events);
  // The chain, oldest first: follow previousRunId back from the latest run.
  const runs: string[] = [];
  for (let run: string | undefined = await runId(); run;) {
    runs.unshift(run);
    run = (await s.events(id, -1, 1, run)).previousRunId;
  }
  check(runs.length >= 2, `at least two runs (got ${runs.length})`, events);
  return runs.map((run, i) => ({
    name: `scenario-22-continue-as-new-run${i + 1}`,
    sessionId: id,
    runId: run,
  }));
}

export const SCENARIOS = [
  idleInjectFollowup,
  injectFromTool,
  preStepReject,
  toolBatchContexts,
  steerDuringTools,
  cancelDuringModel,
  disposeDuringTool,
  continueAsNew,
];

/**
 * Runs every scenario on `env` with a worker of `bundle` and writes each run's history to
 * `<outDir>/<scenario>-v<CORPUS_VERSION>.json`. Returns the files written.
 */
export async function recordCorpus(
  env: TestWorkflowEnvironment,
  bundle: WorkflowBundleOption,
  outDir: string,
): Promise<string[]> {
  const t = await createTestSessionEnv({ env, workflowBundle: bundle });
  try {
    // One after another, each exported as soon as it is done: nothing of one scenario may run on while the next
    // one waits (its activities run on wall-clock time while the server's clock is its own).
    const files: string[] = [];
    for (const scenario of SCENARIOS) {
      for (const r of await scenario({ t, env, bundle })) {
        const file = path.join(outDir, `${r.name}-v${CORPUS_VERSION}.json`);
        await exportHistory(env.client, r.sessionId, file, r.runId ? { runId: r.runId } : {});
        files.push(file);
      }
    }
    return files;
  } finally {
    await t.teardown();
  }
}
