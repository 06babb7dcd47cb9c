/**
 * Fork on the dev server (SessionClient.fork, `agent-sessions fork`): a new session starts from the source's
 * model-visible transcript up to a turn boundary, frozen in its own history (`session/forked`); both go on
 * independently and replay; a seq that is not a turn boundary is refused naming the nearest; a source that continued
 * as new, or was disposed, forks the same.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { InvalidInputError, type SessionClient } from '../../src/client';
import type { SessionEvent } from '../../src/domain';
import { textOf } from '../../src/domain/messages';
import { exportHistory, replayHistories } from '../../src/testing';
import { assertBuilt, cli, cliEnv } from '../cli/cliSupport';
import {
  newId,
  settle,
  startSessionTestEnv,
  userTexts,
  waitUntil,
  type SessionTestEnv,
} from '../support/sessionEnv';

let t: SessionTestEnv;
let s: SessionClient;
beforeAll(async () => {
  t = await startSessionTestEnv('dev');
  s = t.sessions();
});
afterAll(async () => {
  await t?.teardown();
});

const scripted = (...texts: string[]) => ({
  provider: 'scripted' as const,
  steps: texts.map((text) => ({ text })),
});
const turnEnds = (events: readonly SessionEvent[]) =>
  events.flatMap((e) => (e.type === 'turn/end' ? [e.seq] : []));

/** A session with `n` finished turns: prompt k gets answer k. */
async function sessionWithTurns(
  id: string,
  n: number,
  extra: Record<string, unknown> = {},
): Promise<SessionEvent[]> {
  const answers = Array.from({ length: n }, (_, k) => `answer ${k + 1}`);
  await s.start(id, { model: scripted(...answers), labels: ['fork-test'], ...extra });
  for (let k = 1; k <= n; k++) await s.followup(id, { id: `${id}-p${k}`, content: `prompt ${k}` });
  return settle(s, id, n);
}

describe('fork', () => {
  it('starts from the source at turn 3 of 5; both go on independently; both replay', async () => {
    const source = newId('source');
    const events = await sessionWithTurns(source, 5);
    const third = turnEnds(events)[2]!;
    const fork = newId('fork');
    await expect(
      s.fork(source, { newId: fork, throughSeq: third, model: scripted('the fork answers') }),
    ).resolves.toEqual({ sessionId: fork, from: source, throughSeq: third, messages: 6 });

    // Sent at once: the snapshot is still the fork's first event.
    await s.followup(fork, 'and now?');
    const forked = await settle(s, fork);
    expect(forked[0]).toMatchObject({
      seq: 0,
      type: 'session/forked',
      data: { from: source, throughSeq: third },
    });
    // What the fork's model saw: turns 1-3 of the source, then its own prompt — never turns 4 and 5.
    const request = t.recorder.requests(fork)[0]!;
    expect(userTexts(request)).toEqual(['prompt 1', 'prompt 2', 'prompt 3', 'and now?']);
    expect(request.messages.filter((m) => m.role === 'assistant').map((m) => textOf(m.content))).toEqual([
      'answer 1',
      'answer 2',
      'answer 3',
    ]);
    // The fork copied the source's config (labels) and took its own model; its inbox started empty.
    await waitUntil(
      () => s.row(fork),
      (row) => row.labels?.includes('fork-test') === true,
      'the fork in visibility with the copied labels',
    );
    expect(forked.filter((e) => e.type === 'turn/start')).toHaveLength(1);

    // The source goes on; the fork does not change.
    await s.followup(source, 'prompt 6');
    expect(turnEnds(await settle(s, source, 6))).toHaveLength(6);
    expect(await s.allEvents(fork)).toEqual(forked);

    const dir = mkdtempSync(path.join(os.tmpdir(), 'fork-replay-'));
    await exportHistory(t.env.client, source, path.join(dir, 'source.json'));
    await exportHistory(t.env.client, fork, path.join(dir, 'fork.json'));
    expect(
      await replayHistories(dir, { workflowBundle: { codePath: inject('workflowBundlePath') } }),
    ).toMatchObject({ replayed: 2 });
  });

  it('refuses a seq that is not a turn boundary, naming the nearest ones', async () => {
    const source = newId('source-b');
    const ends = turnEnds(await sessionWithTurns(source, 2));
    const err = await s
      .fork(source, { newId: newId('nope'), throughSeq: ends[0]! + 1 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidInputError);
    expect((err as InvalidInputError).field).toBe('fork.throughSeq');
    expect((err as Error).message).toBe(
      `invalid fork: fork.throughSeq: ${ends[0]! + 1} is not the end of a turn of ${source}; the nearest: ${ends[0]}, ${ends[1]}`,
    );
  });

  it('forks a source that continued as new, and one that was disposed', async () => {
    const long = newId('source-can');
    const events = await sessionWithTurns(long, 4, { continueAsNewAfterEvents: 10 });
    const runs = new Set<string>();
    for await (const e of t.env.client.workflow.list({ query: `WorkflowId = '${long}'` })) runs.add(e.runId);
    expect(runs.size).toBeGreaterThan(1);
    const fromLong = newId('fork-can');
    await expect(s.fork(long, { newId: fromLong })).resolves.toMatchObject({
      throughSeq: turnEnds(events).at(-1),
      messages: 8,
    });

    await s.dispose(long);
    const fromDisposed = newId('fork-disposed');
    await expect(s.fork(long, { newId: fromDisposed, model: scripted('still here') })).resolves.toMatchObject(
      {
        messages: 8,
      },
    );
    await s.followup(fromDisposed, 'prompt 5');
    await settle(s, fromDisposed);
    expect(userTexts(t.recorder.requests(fromDisposed)[0]!)).toEqual([
      'prompt 1',
      'prompt 2',
      'prompt 3',
      'prompt 4',
      'prompt 5',
    ]);
  });

  it('the CLI forks and shows where a session came from', async () => {
    assertBuilt();
    const source = newId('source-cli');
    const ends = turnEnds(await sessionWithTurns(source, 2));
    const fork = newId('fork-cli');
    const env = cliEnv({ TEMPORAL_ADDRESS: t.env.address, TASK_QUEUE: t.taskQueue });
    const made = await cli(
      ['fork', source, fork, '--through', String(ends[0]), '--script', '[{"text":"the fork speaks"}]'],
      env,
    );
    expect(made).toMatchObject({
      code: 0,
      stdout: `forked ${source} at seq ${ends[0]} into ${fork} (2 messages)\n`,
    });
    await s.followup(fork, 'hello fork');
    const answered = await settle(s, fork);
    expect(
      answered
        .filter((e) => e.type === 'assistant/message')
        .map((e) => e.type === 'assistant/message' && textOf(e.data.message.content)),
    ).toEqual(['the fork speaks']);
    const shown = await cli(['events', fork], env);
    expect(shown.stdout.split('\n')[0]).toContain(
      `session/forked from ${source} at seq ${ends[0]} with 2 messages`,
    );
    const bad = await cli(['fork', source, newId('x'), '--through', '1'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('is not the end of a turn');
  });
});
