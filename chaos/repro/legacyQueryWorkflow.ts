/**
 * The workflow of the legacy-query reproduction (legacyQuery.ts): a plain Temporal workflow, not a session. It
 * records what its signal handler saw and, only when the handler saw the activity's result, starts a timer — so a
 * run whose live execution and replay order the two differently fails its replay.
 */
import {
  condition,
  defineQuery,
  defineSignal,
  proxyActivities,
  setHandler,
  sleep,
} from '@temporalio/workflow';

const { slow } = proxyActivities<{ slow(): Promise<void> }>({
  startToCloseTimeout: '1 minute',
  taskQueue: 'legacy-query-activities',
});

export const seenSignal = defineSignal('seen');
export const stateQuery = defineQuery<{ state: string; seen: string[] }>('state');

export async function legacyQueryWorkflow(): Promise<string[]> {
  let state = 'waiting for the activity';
  const seen: string[] = [];
  setHandler(seenSignal, () => void seen.push(state));
  setHandler(stateQuery, () => ({ state, seen }));
  await slow();
  state = 'activity done';
  await condition(() => seen.length > 0);
  if (seen[0] === 'activity done') await sleep(1);
  return seen;
}
