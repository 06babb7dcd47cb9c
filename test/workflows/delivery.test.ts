/**
 * Semantics A, B and E on the time-skipping server: delivery, idle inject, waking, duplicates, bad input, turns.
 * Scenarios 1, 2, 3, 14, 23, 24, 25 of docs/semantics.md.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../src/client';
import {
  newId,
  settle,
  startSessionTestEnv,
  summarize,
  userTexts,
  waitUntil,
  withoutWorkerYet,
  type SessionTestEnv,
} from '../support/sessionEnv';

let t: SessionTestEnv;
beforeAll(async () => {
  t = await startSessionTestEnv();
});
afterAll(async () => {
  await t?.teardown();
});

const plugin = (name: string) => ({ kind: 'plugin', plugin: name });

describe('idle inject (scenarios 1–3)', () => {
  it('1: an idle inject appends one insertion splice and nothing else', async () => {
    const s = t.sessions();
    const id = newId();
    await s.start(id);
    await s.inject(id, { content: 'A', source: plugin('watcher') });
    const events = await waitUntil(
      () => s.allEvents(id),
      (e) => e.length > 0,
      'the splice',
    );
    expect(summarize(events)).toEqual(['insert next-step A']);
    const state = await s.state(id);
    expect(state.status).toBe('idle');
    expect(state.turn).toBe(0);
    expect(state.pending.nextStep).toHaveLength(1);
    expect(t.recorder.requests(id)).toHaveLength(0);
  });

  it('2: idle inject then follow-up enters [A, P] in one turn, A before P', async () => {
    const s = t.sessions();
    const id = newId();
    await s.start(id);
    await s.inject(id, { content: 'A', source: plugin('watcher') });
    await s.followup(id, 'P');
    const events = await settle(s, id);
    expect(summarize(events)).toEqual([
      'insert next-step A',
      'insert next-turn P',
      'turn/start 1',
      'claim next-step 1',
      'claim next-turn 1',
      'step/start 1.1',
      'user/message A',
      'user/message P',
      'assistant/message echo: P',
      'step/end 1.1',
      'turn/end 1 completed',
    ]);
    expect(userTexts(t.recorder.requests(id)[0]!)).toEqual(['A', 'P']);
  });

  it('3: three idle injects then a follow-up give the first batch [A, B, C, P]', async () => {
    const s = t.sessions();
    const id = newId();
    await s.start(id);
    for (const x of ['A', 'B', 'C']) await s.inject(id, { content: x, source: plugin('watcher') });
    await s.followup(id, 'P');
    const events = await settle(s, id);
    expect(events.filter((e) => e.type === 'user/message').map((e) => summarize([e])[0])).toEqual([
      'user/message A',
      'user/message B',
      'user/message C',
      'user/message P',
    ]);
    expect(summarize(events).slice(3, 7)).toEqual([
      'insert next-turn P',
      'turn/start 1',
      'claim next-step 3',
      'claim next-turn 1',
    ]);
    expect(userTexts(t.recorder.requests(id)[0]!)).toEqual(['A', 'B', 'C', 'P']);
  });
});

describe('turns (scenarios 14, 23)', () => {
  it('14: five follow-ups in one workflow task run as turns 1..5, one user/message each, in order', async () => {
    // Started and signalled before any worker polls: the first workflow task holds all five.
    const late = withoutWorkerYet(t);
    const s = late.s;
    const id = newId();
    await s.start(id);
    for (const [i, x] of ['F1', 'F2', 'F3', 'F4', 'F5'].entries())
      await s.followup(id, { id: `${id}-${i}`, content: x });
    await late.startWorker();
    const events = await settle(s, id, 5);
    const perTurn = new Map<number, string[]>();
    let turn = 0;
    for (const e of events) {
      if (e.type === 'turn/start') turn = e.data.turn;
      if (e.type === 'user/message') perTurn.set(turn, [...(perTurn.get(turn) ?? []), summarize([e])[0]!]);
    }
    expect([...perTurn.keys()]).toEqual([1, 2, 3, 4, 5]);
    expect([...perTurn.values()].every((v) => v.length === 1)).toBe(true);
    expect(
      events.filter((e) => e.type === 'turn/end').map((e) => e.type === 'turn/end' && e.data.reason.kind),
    ).toEqual(Array(5).fill('completed'));
    const requests = t.recorder.requests(id);
    expect(requests).toHaveLength(5);
    // Each later turn's request holds the earlier turns' answers: one send, one turn (rule 22).
    expect(requests[4]!.messages.filter((m) => m.role === 'assistant')).toHaveLength(4);
    // All five were inserted in the first task, before turn 1 opened (rule 9).
    expect(summarize(events).slice(0, 6)).toEqual([
      'insert next-turn F1',
      'insert next-turn F2',
      'insert next-turn F3',
      'insert next-turn F4',
      'insert next-turn F5',
      'turn/start 1',
    ]);
    await late.stop();
  });

  it('9: messages on different lanes that arrive before the first workflow task keep their arrival order', async () => {
    const late = withoutWorkerYet(t);
    const s = late.s;
    const id = newId();
    await s.start(id);
    await s.followup(id, 'P');
    await s.inject(id, { content: 'A', source: plugin('watcher') });
    await s.steer(id, 'S');
    await s.inject(id, { content: 'B', source: plugin('watcher') });
    await late.startWorker();
    const events = await settle(s, id);
    expect(summarize(events).slice(0, 7)).toEqual([
      'insert next-turn P',
      'insert next-step A',
      'insert next-step S',
      'insert next-step B',
      'turn/start 1',
      'claim next-step 3',
      'claim next-turn 1',
    ]);
    // Every event of that first task carries the same workflow time (rule 8: one task).
    expect(new Set(events.slice(0, 7).map((e) => e.time)).size).toBe(1);
    expect(userTexts(t.recorder.requests(id)[0]!)).toEqual(['A', 'S', 'B', 'P']);
    await late.stop();
  });

  it('23: steer while idle wakes like a follow-up, and its batch carries pending injected context', async () => {
    const s = t.sessions();
    const id = newId();
    await s.start(id);
    await s.inject(id, { content: 'A', source: plugin('watcher') });
    await s.steer(id, 'S');
    const events = await settle(s, id);
    expect(summarize(events)).toEqual([
      'insert next-step A',
      'insert next-step S',
      'turn/start 1',
      'claim next-step 2',
      'step/start 1.1',
      'user/message A',
      'user/message S',
      'assistant/message echo: S',
      'step/end 1.1',
      'turn/end 1 completed',
    ]);
  });
});

describe('idempotency and bad input (scenarios 23-dup, 24)', () => {
  it('the same followup id sent three times gives one insertion and one turn', async () => {
    const s = t.sessions();
    const id = newId();
    await s.start(id);
    for (let i = 0; i < 3; i++) await s.followup(id, { id: 'msg-1', content: 'once' });
    const receipt = await s.deliver(id, 'followup', { id: 'msg-1', content: 'once' });
    expect(receipt).toEqual({ messageId: 'msg-1', lane: 'followup', duplicate: true, seq: 0 });
    const events = await settle(s, id);
    expect(events.filter((e) => e.type === 'agent/inbox/spliced' && e.data.inserted.length)).toHaveLength(1);
    expect(events.filter((e) => e.type === 'turn/start')).toHaveLength(1);
    // A duplicate through the update reports the original lane even when sent on another lane.
    expect(await s.deliver(id, 'steer', { id: 'msg-1', content: 'once' })).toEqual({
      messageId: 'msg-1',
      lane: 'followup',
      duplicate: true,
      seq: 0,
    });
  });

  it('24: an invalid followup signal appends nothing and counts a refusal; the update names the bad field', async () => {
    const s = t.sessions();
    const id = newId();
    await s.start(id);
    const handle = s.handle(id);
    await handle.signal('followup', { message: { content: 42 } });
    await handle.signal('followup', 'not an object');
    await handle.signal('inject', { message: { content: 'no source' } });
    const state = await waitUntil(
      () => s.state(id),
      (st) => st.refused === 3,
      'three refusals',
    );
    expect(state.lastRefusal).toMatch(/inject: message.source/);
    expect((await s.events(id)).events).toEqual([]);
    // The same payload through the acknowledged path is rejected with the field named.
    const rejection = (args: unknown) =>
      handle.executeUpdate('deliver', { args: [args] }).then(
        () => 'accepted',
        (err: { cause?: { message?: string } }) => err.cause?.message ?? String(err),
      );
    expect(await rejection({ lane: 'followup', message: { content: 42 } })).toMatch(
      /^invalid deliver payload: message\.content: /,
    );
    expect(await rejection({ lane: 'shout', message: { content: 'x' } })).toMatch(
      /^invalid deliver payload: lane: /,
    );
    expect(await rejection({ lane: 'inject', message: { content: 'x' } })).toBe(
      'invalid deliver payload: message.source: required for inject',
    );
    expect(await rejection({ lane: 'followup', message: { content: 'x'.repeat(300_000) } })).toMatch(
      /at most 262144 characters/,
    );
    // The client library rejects before sending.
    await expect(s.followup(id, { content: '' })).rejects.toBeInstanceOf(InvalidInputError);
    await expect(s.inject(id, { content: 'x' })).rejects.toThrow(/message.source: required for inject/);
    // The workflow is still healthy: a good message runs a turn.
    const receipt = await s.deliver(id, 'followup', 'fine');
    expect(receipt.duplicate).toBe(false);
    const events = await settle(s, id);
    expect(events.filter((e) => e.type === 'turn/end')).toHaveLength(1);
    const history = await handle.fetchHistory();
    const taskFailures = (history.events ?? []).filter((e) => e.workflowTaskFailedEventAttributes);
    expect(taskFailures).toHaveLength(0);
  });

  it('24: a payload that is not JSON at all is refused like any bad input and never blocks the session', async () => {
    const s = t.sessions();
    const id = newId();
    await s.start(id);
    const raw = (encoding: string, data: string) => ({
      metadata: { encoding: new TextEncoder().encode(encoding) },
      data: new TextEncoder().encode(data),
    });
    const signalRaw = (signalName: string, encoding: string, data: string) =>
      t.env.client.workflowService.signalWorkflowExecution({
        namespace: 'default',
        workflowExecution: { workflowId: id },
        signalName,
        input: { payloads: [raw(encoding, data)] },
        identity: 'test',
      });
    await signalRaw('followup', 'json/plain', '{"message": ');
    await signalRaw('dispose', 'application/x-unknown', 'x');
    const state = await waitUntil(
      () => s.state(id),
      (st) => st.refused === 2,
      'two refusals',
    );
    expect(state.lastRefusal).toMatch(
      /^dispose: payload with encoding application\/x-unknown cannot be decoded/,
    );
    expect(state.status).toBe('idle');
    // Through the acknowledged path the caller is told why.
    const update = await t.env.client.workflowService
      .updateWorkflowExecution({
        namespace: 'default',
        workflowExecution: { workflowId: id },
        request: {
          meta: { updateId: 'bad-json' },
          input: { name: 'deliver', args: { payloads: [raw('json/plain', '{"lane": ')] } },
        },
        waitPolicy: { lifecycleStage: 3 },
      })
      .then((r) => r.outcome?.failure?.message ?? 'accepted');
    expect(update).toMatch(/^invalid deliver payload: payload with encoding json\/plain cannot be decoded/);
    // Nothing entered, the session was not disposed, and a good message still runs a turn.
    expect((await s.events(id)).events).toEqual([]);
    await s.followup(id, 'after the bad payloads');
    const events = await settle(s, id);
    expect(events.filter((e) => e.type === 'turn/end')).toHaveLength(1);
    const history = await s.handle(id).fetchHistory();
    expect((history.events ?? []).filter((e) => e.workflowTaskFailedEventAttributes)).toHaveLength(0);
  });
});

describe('transcript (scenario 25)', () => {
  it('25: context and direct input are two user/messages told apart by source alone, without wrappers', async () => {
    const s = t.sessions();
    const id = newId();
    await s.start(id);
    await s.inject(id, { content: 'A', source: { kind: 'plugin', plugin: 'watcher' } });
    await s.followup(id, 'P');
    const events = await settle(s, id);
    const entered = events.flatMap((e) => (e.type === 'user/message' ? [e.data.message] : []));
    expect(entered.map((m) => [m.content, m.source])).toEqual([
      [[{ type: 'text', text: 'A' }], { kind: 'plugin', plugin: 'watcher' }],
      [[{ type: 'text', text: 'P' }], { kind: 'user' }],
    ]);
    const transcript = await s.transcript(id);
    expect(transcript.messages.slice(0, 2)).toEqual([
      {
        role: 'user',
        id: entered[0]!.id,
        content: [{ type: 'text', text: 'A' }],
        source: { kind: 'plugin', plugin: 'watcher' },
      },
      { role: 'user', id: entered[1]!.id, content: [{ type: 'text', text: 'P' }], source: { kind: 'user' } },
    ]);
    const request = t.recorder.requests(id)[0]!;
    expect(request.messages.slice(0, 2).map((m) => m.content)).toEqual([
      [{ type: 'text', text: 'A' }],
      [{ type: 'text', text: 'P' }],
    ]);
  });
});
