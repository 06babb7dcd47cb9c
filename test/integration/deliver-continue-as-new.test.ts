/**
 * Deliveries across continue-as-new on the dev server (a real server, where a workflow task that completes with
 * continue-as-new while updates arrive is rejected and in-flight updates are aborted): several callers deliver
 * concurrently while the session continues as new every few turns. Every `deliver` returns its receipt exactly
 * once — the client retries the transient failures itself, idempotently by message id — and every message is
 * inserted exactly once in the log.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { eventsQuery } from '../../src/contract';
import type { DeliveryReceipt } from '../../src/domain/wire';
import { newId, settle, startSessionTestEnv, type SessionTestEnv } from '../support/sessionEnv';

let t: SessionTestEnv;
beforeAll(async () => {
  t = await startSessionTestEnv('dev');
});
afterAll(async () => {
  await t?.teardown();
});

it('every delivery through continue-as-new boundaries returns its receipt once and is inserted once', async () => {
  const s = t.sessions();
  const id = newId();
  await s.start(id, { continueAsNewAfterEvents: 10 });
  const senders = 4;
  const perSender = 15;
  const receipts = await Promise.all(
    Array.from({ length: senders }, async (_, sender) => {
      const mine: DeliveryReceipt[] = [];
      for (let n = 0; n < perSender; n++) {
        const lane = n % 3 === 2 ? 'inject' : 'followup';
        const message =
          lane === 'inject'
            ? { id: `s${sender}-${n}`, content: `context ${n}`, source: { kind: 'plugin', plugin: 'test' } }
            : { id: `s${sender}-${n}`, content: `message ${n}` };
        mine.push(await s.deliver(id, lane, message));
      }
      return mine;
    }),
  );
  const all = receipts.flat();
  expect(all).toHaveLength(senders * perSender);
  expect(all.every((r) => !r.duplicate)).toBe(true);
  expect(new Set(all.map((r) => r.messageId)).size).toBe(senders * perSender);
  const followups = all.filter((r) => r.lane === 'followup').length;
  const events = await settle(s, id, followups);
  // Each message inserted exactly once, at the seq its receipt names.
  for (const r of all) {
    const inserts = events.filter(
      (e) => e.type === 'agent/inbox/spliced' && e.data.inserted.some((m) => m.id === r.messageId),
    );
    expect(
      inserts.map((e) => e.seq),
      r.messageId,
    ).toEqual([r.seq]);
  }
  // The session did continue as new while the deliveries arrived.
  const page = await s.handle(id).query(eventsQuery, { limit: 1 });
  expect(page.firstSeq).toBeGreaterThan(0);
}, 240_000);
