/**
 * Workflows of the benchmark (bundled from source): our agentSession, and the baselines measured beside it in the
 * same run — a naive agent workflow that sends the whole transcript to every model activity (what Temporal agent
 * integrations do today), a bare signal→activity workflow (the latency floor) and a trivial workflow of sequential
 * no-op activities (the replay baseline). Deterministic (workflow sandbox).
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

/** One turn per followup (signal) or ask (update); each step sends the whole transcript to the model activity. */
export async function naiveSession(opts: { model: string }): Promise<void> {
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
  for (;;) {
    await condition(() => queue.length > 0);
    transcript.push({ role: 'user', content: queue.shift()! });
    for (;;) {
      const answer = await naiveModel({ model: opts.model, requestIndex: steps++, messages: transcript });
      transcript.push({ role: 'assistant', content: answer.text, toolCalls: answer.toolCalls });
      if (answer.toolCalls.length === 0) break;
      const results = await Promise.all(answer.toolCalls.map((c) => naiveTool(c)));
      for (const r of results) transcript.push({ role: 'tool', content: r });
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
