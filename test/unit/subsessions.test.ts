/**
 * Sub-sessions (docs/protocol.md "Sub-sessions"), the pure parts: the delegate call's plan (child id and config,
 * tools, depth and per-turn limits), how the child's outcome becomes the call's result, and the parent's log through
 * the one loop with the in-memory interpreter (started/ended inside the step, refusals the model reads, results in
 * call order). The child workflow itself is exercised on a real server in test/integration/subsessions.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { checkLog, type ToolDescriptor } from '../../src/domain/index';
import {
  delegateOutcome,
  MAX_SUBSESSIONS_PER_TURN,
  planDelegate,
  subsessionId,
} from '../../src/domain/subsession';
import { outline, queuedScript, InMemorySession, user, type ModelPlan } from '../support/interpreter';

const TOOLS: ToolDescriptor[] = [
  { name: 'read', exclusive: false },
  { name: 'write', exclusive: false },
  { name: 'delegate', exclusive: false, kind: 'delegate' },
];
const allowed = new Map(TOOLS.map((t) => [t.name, t]));
const call = (args: Record<string, unknown>, callId = 'c1') => ({
  callId,
  name: 'delegate',
  arguments: args,
});

describe('planning a delegate call', () => {
  it('derives the child id from the parent and the call, and sends the task as a followup with a known id', () => {
    const plan = planDelegate({
      parentId: 'p1',
      config: {
        model: { provider: 'scripted', steps: [{ text: 'parent' }] },
        system: 'be brief',
        tools: ['*'],
      },
      allowed,
      call: call({ task: 'look it up', script: [{ text: 'found' }] }),
      startedInTurn: 0,
    });
    expect(plan).toEqual({
      kind: 'start',
      start: {
        session: 'p1/sub/c1',
        message: { id: 'task-c1', content: 'look it up' },
        config: {
          model: { provider: 'scripted', steps: [{ text: 'found' }] },
          system: 'be brief',
          tools: ['read', 'write', 'delegate'],
          subsession: { parent: 'p1', callId: 'c1', depth: 1, messageId: 'task-c1' },
        },
      },
    });
    expect(subsessionId('a/sub/x', 'y')).toBe('a/sub/x/sub/y');
  });

  it("gives the child only the parent's tools it asks for; a tool the parent may not use is refused", () => {
    const base = { parentId: 'p', config: {}, allowed, startedInTurn: 0 };
    const narrowed = planDelegate({ ...base, call: call({ task: 't', tools: ['read'] }) });
    expect(narrowed.kind === 'start' && narrowed.start.config.tools).toEqual(['read']);
    expect(planDelegate({ ...base, call: call({ task: 't', tools: ['read', 'shell'] }) })).toEqual({
      kind: 'refused',
      error: {
        code: 'SUBSESSION_REFUSED',
        message: "a sub-session may only use this session's tools; not available here: shell",
      },
    });
  });

  it('drops delegate from a child at the depth limit, and refuses a call from a session at it', () => {
    const child = { parent: 'p', callId: 'c0', depth: 1, messageId: 'task-c0' };
    const fromChild = planDelegate({
      parentId: 'p/sub/c0',
      config: { subsession: child },
      allowed,
      call: call({ task: 't' }),
      startedInTurn: 0,
    });
    expect(fromChild.kind === 'start' && fromChild.start.config).toMatchObject({
      tools: ['read', 'write'],
      subsession: { depth: 2, parent: 'p/sub/c0' },
    });
    expect(
      planDelegate({
        parentId: 'p/sub/c0/sub/c1',
        config: { subsession: { ...child, depth: 2 } },
        allowed,
        call: call({ task: 't' }),
        startedInTurn: 0,
      }),
    ).toMatchObject({ kind: 'refused', error: { code: 'SUBSESSION_REFUSED' } });
  });

  it('refuses bad arguments and a call past the per-turn limit', () => {
    const base = { parentId: 'p', config: {}, allowed };
    expect(planDelegate({ ...base, call: call({}), startedInTurn: 0 })).toMatchObject({
      kind: 'refused',
      error: { code: 'TOOL_INVALID_ARGUMENTS' },
    });
    expect(
      planDelegate({ ...base, call: call({ task: 't' }), startedInTurn: MAX_SUBSESSIONS_PER_TURN }),
    ).toMatchObject({ kind: 'refused', error: { code: 'SUBSESSION_REFUSED' } });
  });
});

describe("the child's outcome as the call's result", () => {
  const ended = (reason: object) =>
    ({ status: 'ended' as const, turn: 1, seq: 9, reason, answer: 'A' }) as never;
  it('a completed turn answers with its text, even if a cancel came after it', () => {
    for (const canceled of [false, true])
      expect(delegateOutcome(ended({ kind: 'completed' }), canceled)).toEqual({
        result: { content: [{ type: 'text', text: 'A' }], additionalContexts: [], concludesTurn: false },
        reason: { kind: 'completed' },
      });
  });
  it("ABORTED when the parent's turn was cancelled; SUBSESSION_FAILED otherwise", () => {
    const aborted = { kind: 'aborted', reason: { kind: 'user' } };
    expect(delegateOutcome(ended(aborted), true).result.error?.code).toBe('ABORTED');
    expect(delegateOutcome({ status: 'discarded' }, true)).toMatchObject({
      result: { error: { code: 'ABORTED' } },
      reason: aborted,
    });
    const failed = delegateOutcome(
      ended({ kind: 'error', error: { code: 'MODEL_FAILED', message: 'down' } }),
      false,
    );
    expect(failed.result.error).toEqual({
      code: 'SUBSESSION_FAILED',
      message: 'the sub-session failed: down (MODEL_FAILED)',
    });
    expect(delegateOutcome(undefined, false).result.error?.code).toBe('SUBSESSION_FAILED');
  });
});

describe("the parent's log", () => {
  let sims: InMemorySession[] = [];
  afterEach(() => {
    for (const s of sims) expect(checkLog(s.log)).toEqual({ ok: true });
    sims = [];
  });
  const sim = (models: ModelPlan[]) => {
    const s = new InMemorySession(queuedScript({ models, tools: TOOLS }), {
      config: { tools: TOOLS.map((t) => t.name) },
    });
    sims.push(s);
    return s;
  };

  it('logs subsession/started after each tool/call and subsession/ended before its result; past the limit, refused', () => {
    const n = MAX_SUBSESSIONS_PER_TURN + 1;
    const calls = Array.from({ length: n }, (_, i) => ({
      name: 'delegate',
      callId: `d${i}`,
      args: { task: `t${i}` },
      result: `r${i}`,
    }));
    const s = sim([{ toolCalls: calls }, { text: 'done' }]);
    s.followup(user('P'));
    const log = outline(s.log);
    expect(log.filter((l) => l.startsWith('subsession/started'))).toHaveLength(MAX_SUBSESSIONS_PER_TURN);
    expect(log).toContain('subsession/started d0 session/sub/d0');
    expect(log.slice(log.indexOf('tool/call d0'), log.indexOf('tool/call d0') + 2)).toEqual([
      'tool/call d0',
      'subsession/started d0 session/sub/d0',
    ]);
    expect(log.indexOf('subsession/ended d0 completed')).toBeLessThan(log.indexOf('tool/result d0'));
    expect(log).toContain(`tool/result d${n - 1} SUBSESSION_REFUSED`);
    expect(log.filter((l) => l.startsWith('tool/result')).map((l) => l.split(' ')[1])).toEqual(
      calls.map((c) => c.callId),
    );
    expect(s.core.lastTurnEnd()?.reason).toEqual({ kind: 'completed' });
  });
});
