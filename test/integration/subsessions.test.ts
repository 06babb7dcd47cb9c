/**
 * Sub-sessions on the dev server (docs/protocol.md "Sub-sessions"): a `delegate` call starts a child workflow of the
 * same type (`<parent>/sub/<callId>`), sends it the task as a followup, and its result is the child's answer; two
 * children run in parallel and their results commit in call order; a cancel of the parent's turn cancels the child's
 * turn and the call settles ABORTED; both histories replay with the current workflow code.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { subsessionTools } from '../../src/activities/subsessionTools';
import type { SessionEvent } from '../../src/domain/events';
import { textOf } from '../../src/domain/messages';
import { assertLogValid, exportHistory, replayHistories } from '../../src/testing';
import {
  newId,
  settle,
  startSessionTestEnv,
  summarize,
  waitUntil,
  type SessionTestEnv,
} from '../support/sessionEnv';

let t: SessionTestEnv;
beforeAll(async () => {
  t = await startSessionTestEnv('dev', subsessionTools);
});
afterAll(async () => {
  await t?.teardown();
});

/** The whole log of a session whose workflow has completed (a sub-session disposes itself after its turn). */
async function closedLog(id: string): Promise<SessionEvent[]> {
  await t.env.client.workflow.getHandle(id).result();
  const events = await t.sessions().allEvents(id);
  assertLogValid(events);
  return events;
}

function resultText(events: readonly SessionEvent[], callId: string): string {
  const e = events.find((x) => x.type === 'tool/result' && x.data.callId === callId);
  if (e?.type !== 'tool/result') throw new Error(`no result for ${callId}`);
  return textOf(e.data.content);
}

describe('sub-sessions as child workflows', () => {
  it('runs two children in parallel; their answers commit in call order; both histories replay', async () => {
    const s = t.sessions();
    const id = newId('parent');
    await s.start(id, {
      tools: ['echo', 'delegate'],
      model: {
        provider: 'scripted',
        steps: [
          {
            toolCalls: [
              { name: 'delegate', args: { task: 'alpha', script: [{ text: 'alpha done', delayMs: 1500 }] } },
              { name: 'delegate', args: { task: 'beta', tools: ['echo'], script: [{ text: 'beta done' }] } },
            ],
          },
          { text: 'both done' },
        ],
      },
    });
    await s.followup(id, 'split it');
    const events = await settle(s, id);
    const first = `${id}/sub/call_0_0`;
    const second = `${id}/sub/call_0_1`;
    const lines = summarize(events);
    expect(lines.slice(0, 10)).toEqual([
      'insert next-turn split it',
      'turn/start 1',
      'claim next-turn 1',
      'step/start 1.1',
      'user/message split it',
      'assistant/message  +2 calls',
      'tool/call delegate call_0_0',
      'subsession/started call_0_0',
      'tool/call delegate call_0_1',
      'subsession/started call_0_1',
    ]);
    // The second child answers first (the first one's model is slow); results still commit in call order.
    expect(lines.slice(10, 14)).toEqual([
      'subsession/ended call_0_1 completed',
      'subsession/ended call_0_0 completed',
      'tool/result call_0_0',
      'tool/result call_0_1',
    ]);
    expect(lines.slice(-3)).toEqual(['assistant/message both done', 'step/end 1.2', 'turn/end 1 completed']);
    expect(events.find((e) => e.type === 'subsession/started')?.data).toEqual({
      turn: 1,
      step: 1,
      callId: 'call_0_0',
      session: first,
    });
    expect(resultText(events, 'call_0_0')).toBe('alpha done');
    expect(resultText(events, 'call_0_1')).toBe('beta done');

    // Each child: the task as a normal followup with a deterministic id, one turn, then disposed.
    const child = await closedLog(second);
    expect(summarize(child)).toEqual([
      'insert next-turn beta',
      'turn/start 1',
      'claim next-turn 1',
      'step/start 1.1',
      'user/message beta',
      'assistant/message beta done',
      'step/end 1.1',
      'turn/end 1 completed',
      'session/disposed',
    ]);
    expect(child[0]?.type === 'agent/inbox/spliced' && child[0].data.inserted[0]?.id).toBe('task-call_0_1');
    // The child may use only what the parent may, narrowed by the call's `tools`.
    expect(t.recorder.requests(second)[0]?.tools).toEqual(['echo']);
    expect(t.recorder.requests(first)[0]?.tools.slice().sort()).toEqual(['delegate', 'echo']);
    expect(summarize(await closedLog(first)).at(-1)).toBe('session/disposed');

    // Replay: the parent (child workflow commands, signals to it) and a child (its result) with the current code.
    await s.dispose(id);
    // From exported files, as `agent-sessions replay` does (the parent replays under its own id, which the file
    // harness reads from its children's ids).
    const dir = mkdtempSync(path.join(os.tmpdir(), 'subsessions-replay-'));
    try {
      for (const [name, wf] of [
        ['parent', id],
        ['first', first],
        ['second', second],
      ] as const) {
        await t.env.client.workflow.getHandle(wf).result();
        await exportHistory(t.env.client, wf, path.join(dir, `${name}.json`));
      }
      const summary = await replayHistories(dir, {
        workflowBundle: { codePath: inject('workflowBundlePath') },
      });
      expect(summary.replayed).toBe(3);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a cancel of the parent's turn cancels the child's turn; the call settles ABORTED", async () => {
    const s = t.sessions();
    const id = newId('parent');
    await s.start(id, {
      tools: ['delegate'],
      model: {
        provider: 'scripted',
        steps: [
          {
            toolCalls: [
              { name: 'delegate', args: { task: 'slow', script: [{ text: 'never', delayMs: 120_000 }] } },
            ],
          },
        ],
      },
    });
    await s.followup(id, 'go');
    const child = `${id}/sub/call_0_0`;
    await waitUntil(
      () => s.state(child).catch(() => undefined),
      (st) => st?.status === 'running',
      'the sub-session to run its turn',
    );
    await s.cancel(id);
    const events = await settle(s, id);
    expect(summarize(events).slice(-6)).toEqual([
      'tool/call delegate call_0_0',
      'subsession/started call_0_0',
      'subsession/ended call_0_0 aborted',
      'tool/result call_0_0 error ABORTED',
      'step/end 1.1',
      'turn/end 1 aborted',
    ]);
    const childLog = await closedLog(child);
    expect(summarize(childLog).slice(-2)).toEqual(['turn/end 1 aborted', 'session/disposed']);
    await s.dispose(id);
  });

  it('disposing the parent while a child runs aborts the call and ends the child', async () => {
    const s = t.sessions();
    const id = newId('parent');
    await s.start(id, {
      tools: ['delegate'],
      model: {
        provider: 'scripted',
        steps: [
          {
            toolCalls: [
              { name: 'delegate', args: { task: 'slow', script: [{ text: 'never', delayMs: 120_000 }] } },
            ],
          },
        ],
      },
    });
    await s.followup(id, 'go');
    const child = `${id}/sub/call_0_0`;
    await waitUntil(
      () => s.state(child).catch(() => undefined),
      (st) => st?.status === 'running',
      'the sub-session to run its turn',
    );
    await s.dispose(id);
    await t.env.client.workflow.getHandle(id).result();
    const events = await t.sessions().allEvents(id);
    assertLogValid(events);
    expect(summarize(events).slice(-4)).toEqual([
      'tool/result call_0_0 error ABORTED',
      'step/end 1.1',
      'turn/end 1 aborted',
      'session/disposed',
    ]);
    expect(summarize(await closedLog(child)).slice(-2)).toEqual(['turn/end 1 aborted', 'session/disposed']);
  });

  it("the parent's budget counts what its sub-session used", async () => {
    const s = t.sessions();
    const id = newId('parent');
    await s.start(id, {
      tools: ['delegate'],
      budget: { inputTokens: 300, onExceeded: 'stop' },
      model: {
        provider: 'scripted',
        steps: [
          {
            toolCalls: [
              {
                name: 'delegate',
                args: {
                  task: 'big',
                  script: [{ text: 'read it all', usage: { inputTokens: 500, outputTokens: 5 } }],
                },
              },
            ],
            usage: { inputTokens: 10, outputTokens: 2 },
          },
          { text: 'never asked' },
        ],
      },
    });
    await s.followup(id, 'go');
    const events = await settle(s, id);
    const ended = events.find((e) => e.type === 'subsession/ended');
    expect(ended?.type === 'subsession/ended' && ended.data.used).toEqual({
      modelCalls: 1,
      toolCalls: 0,
      inputTokens: 500,
      outputTokens: 5,
      costMicros: 0,
    });
    expect(summarize(events).slice(-3)).toEqual([
      'step/end 1.1',
      'budget/exceeded inputTokens stop',
      'turn/end 1 error',
    ]);
    expect((await s.state(id)).budget?.used).toEqual({
      modelCalls: 2,
      toolCalls: 1,
      inputTokens: 510,
      outputTokens: 7,
      costMicros: 0,
    });
    await s.dispose(id);
  });
});
