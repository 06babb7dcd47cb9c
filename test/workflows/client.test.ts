/**
 * SessionClient over a real server: signal-with-start, update-with-start, receipts, and `watch` with its derived
 * inserted / claimed / discarded notifications.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidInputError, SessionDisposedError, type WatchItem } from '../../src/client';
import { newId, settle, startSessionTestEnv, type SessionTestEnv } from '../support/sessionEnv';

let t: SessionTestEnv;
beforeAll(async () => {
  t = await startSessionTestEnv('dev');
});
afterAll(async () => {
  await t?.teardown();
});

describe('SessionClient', () => {
  it('startWith starts a session and delivers its first message in one call (signal-with-start)', async () => {
    const s = t.sessions();
    const id = newId();
    const messageId = await s.startWith(id, 'followup', 'hello');
    const events = await settle(s, id);
    const entered = events.find((e) => e.type === 'user/message');
    expect(entered?.type === 'user/message' && entered.data.message.id).toBe(messageId);
    // A second startWith on the running session only delivers.
    await s.startWith(id, 'followup', 'again');
    expect((await settle(s, id, 2)).filter((e) => e.type === 'turn/end')).toHaveLength(2);
  });

  it('deliverWithStart returns the receipt, and a retry with the same id reports the original (update-with-start)', async () => {
    const s = t.sessions();
    const id = newId();
    const first = await s.deliverWithStart(
      id,
      'followup',
      { id: 'uws-1', content: 'hi' },
      { system: 'be brief' },
    );
    expect(first).toEqual({ messageId: 'uws-1', lane: 'followup', duplicate: false, seq: 0 });
    const again = await s.deliverWithStart(id, 'followup', { id: 'uws-1', content: 'hi' });
    // A duplicate reports the seq of the first insertion.
    expect(again).toEqual({ ...first, duplicate: true });
    await settle(s, id);
    expect((await s.transcript(id)).system).toBe('be brief');
  });

  it('rejects bad input before sending, naming the field and the limit', async () => {
    const s = t.sessions();
    const err = await s.followup('whatever', { content: 'x', id: 'has space' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidInputError);
    expect((err as InvalidInputError).field).toBe('message.id');
    await expect(s.start(newId(), { maxParallelToolCalls: 0 })).rejects.toThrow(/maxParallelToolCalls/);
    await expect(s.followup('whatever', 'x'.repeat(300_000))).rejects.toThrow(/at most 262144 characters/);
  });

  it('watch yields every event with inserted, claimed and discarded notifications derived from the splices', async () => {
    const s = t.sessions();
    const id = newId();
    await s.start(id, { model: { provider: 'scripted', steps: [{ text: 'slow', delayMs: 20_000 }] } });
    const seen: WatchItem[] = [];
    const abort = new AbortController();
    const watching = (async () => {
      for await (const item of s.watch(id, { signal: abort.signal, pollMs: 50 })) {
        seen.push(item);
        if (item.kind === 'event' && item.event.type === 'session/disposed') break;
      }
    })();
    await s.inject(id, { content: 'ctx', source: { kind: 'plugin', plugin: 'p' } });
    await s.followup(id, 'P');
    const waitSeen = async (ok: () => boolean) => {
      for (let i = 0; i < 400 && !ok(); i++) await new Promise((r) => setTimeout(r, 25));
      expect(ok()).toBe(true);
    };
    await waitSeen(() => seen.some((x) => x.kind === 'event' && x.event.type === 'step/start'));
    await s.followup(id, 'Q');
    await waitSeen(() => seen.some((x) => x.kind === 'inserted' && x.message.content[0]?.text === 'Q'));
    await s.dispose(id);
    await watching;
    abort.abort();
    const derived = seen
      .filter((x) => x.kind !== 'event')
      .map((x) =>
        x.kind === 'inserted'
          ? `inserted ${x.target} ${x.message.content[0]?.text}`
          : `${x.kind} ${x.target} ${x.messages.map((m) => m.content[0]?.text).join(',')}`,
      );
    expect(derived).toEqual([
      'inserted next-step ctx',
      'inserted next-turn P',
      'claimed next-step ctx',
      'claimed next-turn P',
      'inserted next-turn Q',
      'discarded next-turn Q',
    ]);
    expect(seen.filter((x) => x.kind === 'event').map((x) => x.kind === 'event' && x.event.seq)).toEqual(
      (await s.allEvents(id)).map((e) => e.seq),
    );
    await expect(s.steer(id, 'late')).rejects.toBeInstanceOf(SessionDisposedError);
  });
});
