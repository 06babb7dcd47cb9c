/**
 * Security of session input (issue 5, item 6), on the time-skipping server: a session naming a tool or hook the
 * worker does not register is refused at start (the `deliver` update is rejected naming it; a plain start ends its
 * first turn in error naming it) and then disposes itself (issue 35), and no session input can name a URL, a command, a key or a base URL — the schema
 * refuses it before anything runs, in the client and in the workflow.
 */
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { WorkflowFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineHook } from '../../src/activities/hooks';
import { DeliveryRejectedError, InvalidInputError, SessionDisposedError } from '../../src/client';
import { SessionConfigSchema, type SessionConfig } from '../../src/domain/wire';
import { newId, settle, waitUntil } from '../support/sessionEnv';
import { ofType, startWorkerEnv, turnEnds, type WorkerEnv } from '../providers/support';

let t: WorkerEnv;
beforeAll(async () => {
  t = await startWorkerEnv({
    hooks: [defineHook({ name: 'noop', kind: 'pre-step', run: () => ({}) })],
  });
});
afterAll(async () => {
  await t?.teardown();
});

describe('unknown tools and hooks are refused at start', () => {
  it('deliverWithStart naming an unregistered tool is rejected, naming it; the session only disposes itself', async () => {
    const id = newId();
    const attempt = t.client.deliverWithStart(id, 'followup', 'hi', { tools: ['echo', 'rm_rf'] });
    await expect(attempt).rejects.toBeInstanceOf(DeliveryRejectedError);
    await expect(attempt).rejects.toThrow(
      new RegExp(
        `^session names tool "rm_rf" that worker \\S+ on task queue "${t.taskQueue}" does not register`,
      ),
    );
    await waitUntil(
      () => t.client.state(id),
      (s) => s.status === 'disposed',
      'the refused session to dispose itself',
    );
    expect((await t.client.allEvents(id)).map((e) => e.type)).toEqual(['session/disposed']);
    // A later delivery finds it disposed.
    await expect(t.client.deliver(id, 'followup', 'again')).rejects.toBeInstanceOf(SessionDisposedError);
  });

  it('deliverWithStart naming an unregistered hook is rejected, naming it', async () => {
    const id = newId();
    await expect(
      t.client.deliverWithStart(id, 'followup', 'hi', { hooks: ['noop', 'ghost'] }),
    ).rejects.toThrow(
      /^session names hook "ghost" that worker \S+ on task queue "[^"]+" does not register \(registered: noop\)/,
    );
    expect((await t.client.allEvents(id)).filter((e) => e.type !== 'session/disposed')).toEqual([]);
  });

  it('with registered names the first delivery is accepted after one check, and the turn runs', async () => {
    const id = newId();
    const receipt = await t.client.deliverWithStart(id, 'followup', 'hi', {
      tools: ['echo'],
      hooks: ['noop'],
    });
    expect(receipt).toMatchObject({ lane: 'followup', duplicate: false });
    await t.client.deliver(id, 'followup', 'second');
    const events = await settle(t.client, id, 2);
    expect(turnEnds(events)).toEqual([{ kind: 'completed' }, { kind: 'completed' }]);
    const history = await t.client.handle(id).fetchHistory();
    const scheduled = (history.events ?? []).flatMap(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? [],
    );
    expect(scheduled.filter((n) => n === 'describeTools')).toHaveLength(1);
    expect(scheduled.filter((n) => n === 'describeHooks')).toHaveLength(1);
  });

  it('a plain start naming an unregistered hook ends turn 1 in error naming it, with no step and no model call', async () => {
    const id = newId();
    await t.client.start(id, { hooks: ['ghost'] });
    await t.client.followup(id, 'hi');
    await waitUntil(
      () => t.client.state(id),
      (s) => s.status === 'disposed',
      'the refused session to dispose itself',
    );
    const events = await settle(t.client, id);
    expect(turnEnds(events)).toEqual([
      {
        kind: 'error',
        error: {
          code: 'UNKNOWN_HOOK',
          message: expect.stringMatching(
            /^session names hook "ghost" that worker \S+ on task queue "[^"]+" does not register \(registered: noop\); /,
          ) as string,
        },
      },
    ]);
    expect(ofType(events, 'step/start')).toHaveLength(0);
    expect(events.at(-1)?.type).toBe('session/disposed');
    expect(t.recorder.requests(id)).toHaveLength(0);
  });

  it('a session naming a provider the worker has not configured gets a turn error saying what to set', async () => {
    const id = newId();
    await t.client.start(id, { model: { provider: 'anthropic', model: 'claude-x' } });
    await t.client.followup(id, 'hi');
    const [reason] = turnEnds(await settle(t.client, id));
    expect(reason).toEqual({
      kind: 'error',
      error: {
        code: 'MODEL_REQUEST_INVALID',
        message:
          'model provider "anthropic" is not configured on this worker: set ANTHROPIC_API_KEY (and optionally ANTHROPIC_BASE_URL) on the worker (configured: scripted)',
      },
    });
  });
});

describe('no session input names a URL, a command or a credential', () => {
  const marker = `/tmp/agent-sessions-pwned-${randomUUID()}`;
  const attempts: [string, unknown][] = [
    ['a hook given as a URL', { hooks: ['https://evil.example/hook'] }],
    ['a hook given as a command', { hooks: [{ name: 'x', command: ['touch', marker] }] }],
    ['a hook given with an http endpoint', { hooks: [{ name: 'x', http: { url: 'http://evil.example' } }] }],
    [
      'a model with a base URL',
      { model: { provider: 'openai', model: 'gpt-4o', baseURL: 'http://evil.example/v1' } },
    ],
    ['a model with an API key', { model: { provider: 'openai-compatible', model: 'm', apiKey: 'stolen' } }],
    ['a tool with a command', { tools: [{ name: 'sh', command: 'bash -c id' }] }],
    ['an unknown top-level field', { hooksFile: '/etc/hooks.json' }],
  ];

  it.each(attempts)('the schema refuses %s', (_what, config) => {
    expect(SessionConfigSchema.safeParse(config).success).toBe(false);
  });

  it('the client refuses such a config before sending anything', async () => {
    for (const [, config] of attempts) {
      await expect(t.client.start(newId(), config as SessionConfig)).rejects.toBeInstanceOf(
        InvalidInputError,
      );
    }
  });

  it('started around the client, the workflow fails at once with InvalidPayload and runs nothing', async () => {
    const id = newId();
    const handle = await t.env.client.workflow.start('agentSession', {
      workflowId: id,
      taskQueue: t.taskQueue,
      args: [{ hooks: [{ name: 'x', command: ['touch', marker] }] }],
    });
    const failure = await handle.result().then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    expect((failure as WorkflowFailedError).cause?.message).toMatch(/^invalid session config: hooks\[0\]/);
    expect(existsSync(marker)).toBe(false);
  });
});
