/**
 * Provider rate limits on the dev server, against a fake OpenAI-compatible provider that enforces them
 * (test/support/limitedProvider.ts: a sliding window of 2 s, 429 + Retry-After past the cap). A 429 is waited out
 * inside the model activity's attempt (src/activities/waits.ts): many sessions over the cap all complete, none ends
 * MODEL_RATE_LIMITED, and calls that met only 429s ran as one activity attempt. A wait past the worker's bound ends
 * the turn MODEL_RATE_LIMITED saying so; a cancel during a wait ends the turn aborted; a 5xx (the fake fails on
 * demand) still costs an attempt.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionClient } from '../../src/client';
import type { SessionEvent } from '../../src/domain/events';
import { createProviders } from '../../src/activities/providers';
import { newId, settle, waitUntil } from '../support/sessionEnv';
import { LimitedProvider } from '../support/limitedProvider';
import { ofType, startWorkerEnv, turnEnds, type WorkerEnv } from './support';

const model = { provider: 'openai-compatible' as const, model: 'limited' };
let capped: LimitedProvider;
let closed: LimitedProvider;
let t: WorkerEnv;
/** A worker whose calls wait at most 3 s for rate limits, and one with the default bound; both meet `closed`. */
let shortBound: SessionClient;
let longBound: SessionClient;

beforeAll(async () => {
  capped = await LimitedProvider.start({ windowMs: 2000, requestsPerWindow: 5 });
  // Admits nothing: every request is answered 429 with Retry-After: 1.
  closed = await LimitedProvider.start({ windowMs: 1000, requestsPerWindow: 0 });
  t = await startWorkerEnv(
    { providers: createProviders({ openaiCompatible: { baseURL: capped.url } }) },
    'dev',
  );
  shortBound = await t.addWorker({
    providers: createProviders({ openaiCompatible: { baseURL: closed.url }, rateLimitWaitMs: 3000 }),
  });
  longBound = await t.addWorker({
    providers: createProviders({ openaiCompatible: { baseURL: closed.url } }),
  });
}, 120_000);
afterAll(async () => {
  await t?.teardown();
  await capped?.close();
  await closed?.close();
});

/** The attempt of every started model activity in the session's history (all runs). */
async function modelAttempts(client: SessionClient, id: string): Promise<number[]> {
  const history = await client.client.workflow.getHandle(id).fetchHistory();
  const scheduled = new Map<string, string>();
  const attempts: number[] = [];
  for (const e of history.events ?? []) {
    const s = e.activityTaskScheduledEventAttributes;
    if (s) scheduled.set(String(e.eventId), s.activityType?.name ?? '');
    const started = e.activityTaskStartedEventAttributes;
    if (started && scheduled.get(String(started.scheduledEventId)) === 'modelStep')
      attempts.push(started.attempt ?? 0);
  }
  return attempts;
}

const closedTurns = (events: readonly SessionEvent[]) => turnEnds(events).length;

describe('429s are waited out inside the attempt', () => {
  it('10 sessions × 2 followups against 5 requests per 2 s: every turn completes, one attempt each', async () => {
    const ids = Array.from({ length: 10 }, () => newId('rl'));
    await Promise.all(ids.map((id) => t.client.start(id, { model })));
    await Promise.all(
      ids.flatMap((id) => [
        t.client.followup(id, `first of ${id}`),
        t.client.followup(id, `second of ${id}`),
      ]),
    );
    // Both followups of a session may make one turn or two; every followup is answered either way.
    const logs = await Promise.all(
      ids.map(async (id) => {
        await waitUntil(
          () => t.client.allEvents(id),
          (events) =>
            ofType(events, 'assistant/message').some((m) =>
              m.data.message.content.some((b) => b.text.includes(`second of ${id}`)),
            ),
          `session ${id} to answer its second followup`,
          4000,
        );
        return settle(t.client, id);
      }),
    );
    const ends = logs.flatMap((events) => turnEnds(events));
    expect(ends.length).toBeGreaterThanOrEqual(ids.length);
    expect(ends.filter((e) => e.kind !== 'completed')).toEqual([]);
    expect(logs.map(closedTurns).every((n) => n >= 1)).toBe(true);
    // Demand passed the cap (the provider answered 429s), and the provider never admitted more than its cap in any
    // 2 s (it enforces a sliding window; in-flight requests were refused, not admitted).
    expect(capped.limited).toBeGreaterThan(0);
    expect(capped.maxInAnySpan()).toBeLessThanOrEqual(5);
    // Only 429s met: every model call ran as its first attempt.
    const attempts = (await Promise.all(ids.map((id) => modelAttempts(t.client, id)))).flat();
    expect(attempts.length).toBe(capped.admitted.length);
    expect(new Set(attempts)).toEqual(new Set([1]));
    console.log(
      `rate limits: ${ends.length} turns, ${capped.admitted.length} requests admitted, ${capped.limited} answered 429, ` +
        `at most ${capped.maxInAnySpan()} admitted in any 2 s (cap 5), attempts ${JSON.stringify([...new Set(attempts)])}`,
    );
  }, 240_000);

  it('a 5xx on demand is a failed attempt (retried by Temporal), unlike a 429', async () => {
    capped.failNext(1, 503);
    const failedBefore = capped.failed;
    const id = newId('rl-5xx');
    await t.client.start(id, { model });
    await t.client.followup(id, 'after an outage');
    const events = await settle(t.client, id);
    expect(turnEnds(events)).toEqual([{ kind: 'completed' }]);
    expect(capped.failed).toBe(failedBefore + 1);
    expect(await modelAttempts(t.client, id)).toEqual([2]);
  }, 60_000);

  it('a wait past the bound ends the turn MODEL_RATE_LIMITED, saying how long it waited', async () => {
    const id = newId('rl-bound');
    await shortBound.start(id, { model });
    await shortBound.followup(id, 'go');
    const events = await settle(shortBound, id);
    const [end] = turnEnds(events);
    expect(end).toMatchObject({ kind: 'error', error: { code: 'MODEL_RATE_LIMITED' } });
    const message = end?.kind === 'error' ? end.error.message : '';
    expect(message).toMatch(/^openai-compatible rate-limited the request \(429\): Rate limit reached/);
    expect(message).toMatch(
      /still rate-limited after waiting [\d.]+ s in \d+ wait\(s\), and the next wait \([\d.]+ s\) would pass the worker's bound of 3 s \(AGENT_SESSIONS_MODEL_RATE_LIMIT_WAIT_MS\)$/,
    );
    // Final at once: one attempt, not the retry policy's five.
    expect(await modelAttempts(shortBound, id)).toEqual([1]);
  }, 60_000);

  it('a cancel during a 429 wait ends the turn aborted', async () => {
    const id = newId('rl-cancel');
    const before = closed.limited;
    await longBound.start(id, { model });
    await longBound.followup(id, 'go');
    // Waiting: the provider has refused the call at least twice (it was sent again after the first wait).
    await waitUntil(
      async () => closed.limited,
      (n) => n >= before + 2,
      'the call to be refused twice',
      2000,
    );
    await longBound.cancel(id);
    const events = await settle(longBound, id);
    expect(turnEnds(events)).toEqual([{ kind: 'aborted', reason: { kind: 'user' } }]);
    expect(await modelAttempts(longBound, id)).toEqual([1]);
  }, 60_000);
});
