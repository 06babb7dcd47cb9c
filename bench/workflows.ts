/**
 * Workflows of the benchmark (bundled from source): our agentSession, and the baselines measured beside it in the
 * same run — a naive agent workflow that sends the whole transcript to every model activity (what Temporal agent
 * integrations do today) and, with `floor`, the engine's floor for the same turns; a bare signal→activity workflow
 * (the latency floor) and a trivial workflow of sequential no-op activities (the replay baseline). Deterministic
 * (workflow sandbox).
 */
import {
  condition,
  defineQuery,
  defineSignal,
  defineUpdate,
  proxyActivities,
  setHandler,
} from '@temporalio/workflow';
import type { BenchActivities, NaiveEntry } from './activities';

export { agentSession } from '../src/workflows';

const { naiveModel, naiveTool, noop } = proxyActivities<BenchActivities>({ startToCloseTimeout: '1 minute' });

export const naiveFollowup = defineSignal<[{ message: { content: string } }]>('followup');
export const naiveSteps = defineQuery<number>('steps');
/** A message in, the step count when its turn has ended (as our `ask`: one update, no polling). */
export const naiveAsk = defineUpdate<number, [{ content: string }]>('ask');

/**
 * One turn per followup (signal) or ask (update); each step sends the whole transcript to the model activity. With
 * `floor`, the engine's floor for the same turn shape: the same updates, activities and results, but the model
 * activity gets no messages and nothing is kept — no design that runs each model and tool call as an activity can
 * do less per step.
 */
export async function naiveSession(opts: { model: string; floor?: boolean }): Promise<void> {
  const transcript: NaiveEntry[] = [];
  const queue: string[] = [];
  let steps = 0;
  let enqueued = 0;
  let turnsDone = 0;
  setHandler(naiveFollowup, (p) => {
    queue.push(p.message.content);
    enqueued++;
  });
  setHandler(naiveSteps, () => steps);
  setHandler(naiveAsk, async ({ content }) => {
    queue.push(content);
    const turn = ++enqueued;
    await condition(() => turnsDone >= turn);
    return steps;
  });
  const keep = (entry: NaiveEntry) => void (opts.floor || transcript.push(entry));
  for (;;) {
    await condition(() => queue.length > 0);
    keep({ role: 'user', content: queue.shift()! });
    for (;;) {
      const answer = await naiveModel({ model: opts.model, requestIndex: steps++, messages: transcript });
      keep({ role: 'assistant', content: answer.text, toolCalls: answer.toolCalls });
      if (answer.toolCalls.length === 0) break;
      const results = await Promise.all(answer.toolCalls.map((c) => naiveTool(c)));
      for (const r of results) keep({ role: 'tool', content: r });
    }
    turnsDone++;
  }
}

export const bareSignal = defineSignal<[{ message: { content: string } }]>('followup');

/** The floor: each signal runs one activity, nothing else. */
export async function bareSignalActivity(): Promise<void> {
  const queue: string[] = [];
  setHandler(bareSignal, (p) => void queue.push(p.message.content));
  for (;;) {
    await condition(() => queue.length > 0);
    await noop(queue.shift()!);
  }
}

/** A history of about `activities * 6 + 5` events with no logic of its own. */
export async function trivialActivities(activities: number): Promise<void> {
  for (let i = 0; i < activities; i++) await noop(String(i));
}
