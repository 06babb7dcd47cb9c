/**
 * The smallest bundle of the `manySessions` memory comparison: one bare signal→activity workflow and nothing else
 * (no agentSession, no zod), so the memory a cached workflow of it takes is the SDK's own per-workflow floor.
 */
import { condition, defineSignal, proxyActivities, setHandler } from '@temporalio/workflow';
import type { BenchActivities } from './activities';

const { noop } = proxyActivities<BenchActivities>({ startToCloseTimeout: '1 minute' });

export const bareSignal = defineSignal<[{ message: { content: string } }]>('followup');

/** Each signal runs one activity, nothing else (as bench/workflows.ts bareSignalActivity). */
export async function bareSignalActivity(): Promise<void> {
  const queue: string[] = [];
  setHandler(bareSignal, (p) => void queue.push(p.message.content));
  for (;;) {
    await condition(() => queue.length > 0);
    await noop(queue.shift()!);
  }
}
