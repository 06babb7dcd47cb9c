/**
 * Tool approval (docs/protocol.md "Tool approval"), run through the one loop (src/domain/driver.ts) by the in-memory
 * interpreter: a call that needs a person's decision waits for it while the rest of its batch goes on; approve runs
 * it, deny and the timeout answer it without running it, a cancel or dispose aborts it; results still commit in the
 * model's call order (rule 18). Every log also passes the invariant checker, which knows the approval rules.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { checkLog, type ToolDescriptor } from '../../src/domain/index';
import {
  outline,
  queuedScript,
  InMemorySession,
  user,
  type ModelPlan,
  type Script,
} from '../support/interpreter';

let sims: InMemorySession[] = [];
afterEach(() => {
  const done = sims;
  sims = [];
  for (const s of done) expect(checkLog(s.log)).toEqual({ ok: true });
});

/** Worker tools: `deploy` always needs approval, `rm` when its predicate says so, `read` never. */
const WORKER_TOOLS: ToolDescriptor[] = [
  { name: 'deploy', exclusive: false, approval: 'always' },
  { name: 'rm', exclusive: false, approval: 'check' },
  { name: 'read', exclusive: false },
  { name: 'migrate', exclusive: true, approval: 'always' },
];

function sim(
  models: ModelPlan[],
  options: { approvals?: { tools: string[] | '*'; timeoutMs?: number }; script?: Partial<Script> } = {},
): InMemorySession {
  const s = new InMemorySession(queuedScript({ models, tools: WORKER_TOOLS, ...options.script }), {
    config: {
      tools: WORKER_TOOLS.map((t) => t.name),
      ...(options.approvals ? { approvals: options.approvals } : {}),
    },
  });
  sims.push(s);
  return s;
}

/** The text of the tool result of a call, as the model reads it. */
function resultText(s: InMemorySession, callId: string): string {
  const e = s.log.find((x) => x.type === 'tool/result' && x.data.callId === callId);
  if (e?.type !== 'tool/result') throw new Error(`no result for ${callId}`);
  return e.data.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
}

const deployThenAnswer: ModelPlan[] = [
  { toolCalls: [{ name: 'deploy', callId: 'd1', args: { env: 'prod' }, result: 'deployed' }] },
  { text: 'done' },
];

describe('a call that needs approval', () => {
  it('waits, logged, without running; approve runs it and the turn goes on', () => {
    const s = sim(deployThenAnswer);
    s.followup(user('P'));
    expect(s.waitingForApproval).toBe(true);
    expect(s.ran).toEqual([]);
    expect(s.core.stateView().approvals).toEqual([
      expect.objectContaining({ callId: 'd1', name: 'deploy', arguments: { env: 'prod' }, turn: 1, step: 1 }),
    ]);
    expect(s.core.status()).toBe('running');

    expect(s.approve({ callId: 'd1', decision: 'approve' })).toEqual({
      accepted: true,
      receipt: { callId: 'd1', decision: 'approve', duplicate: false },
    });
    expect(s.ran).toEqual(['d1']);
    expect(outline(s.log).slice(5)).toEqual([
      'assistant/message 1.1 [d1]',
      'approval? d1',
      'approval d1 approve by caller',
      'tool/call d1',
      'tool/result d1',
      'step/end 1.1',
      'step/start 1.2',
      'assistant/message 1.2',
      'step/end 1.2',
      'turn/end 1 completed',
    ]);
    expect(s.core.stateView().approvals).toEqual([]);
    expect(s.requests[1]!.at(-1)).toMatchObject({ role: 'tool', callId: 'd1' });
  });

  it('deny answers it DENIED with the reason, which the model reads; the tool never runs', () => {
    const s = sim(deployThenAnswer);
    s.followup(user('P'));
    s.approve({ callId: 'd1', decision: 'deny', reason: 'not on a Friday' });
    expect(s.ran).toEqual([]);
    expect(outline(s.log)).toContain('tool/result d1 DENIED');
    expect(resultText(s, 'd1')).toBe('error: the call was denied: not on a Friday');
    expect(JSON.stringify(s.requests[1])).toContain('not on a Friday');
    expect(s.core.lastTurnEnd()?.reason).toEqual({ kind: 'completed' });
  });

  it("the session's timeout answers it APPROVAL_TIMEOUT through a durable timer", () => {
    const day = 24 * 3_600_000;
    const s = sim(deployThenAnswer, { approvals: { tools: [], timeoutMs: day } });
    s.followup(user('P'));
    expect([...s.approvalTimers]).toEqual([['d1', day]]);
    s.timeout('d1');
    expect(s.ran).toEqual([]);
    expect(outline(s.log)).toEqual(
      expect.arrayContaining(['approval d1 deny by timeout', 'tool/result d1 APPROVAL_TIMEOUT']),
    );
    expect(resultText(s, 'd1')).toContain(`within ${day} ms`);
    // A decision after the timeout is refused, naming the call and how it was resolved.
    expect(s.approve({ callId: 'd1', decision: 'approve' }).refused).toBe(
      'call "d1" was already resolved (deny by timeout); no call is waiting for a decision',
    );
  });

  it('cancel resolves it by cancel and aborts it before dispatch; the turn ends aborted (rule 29)', () => {
    const s = sim(deployThenAnswer);
    s.followup(user('P'));
    s.signal({ signal: 'cancel', payload: {} });
    expect(s.ran).toEqual([]);
    expect(outline(s.log).slice(-5)).toEqual([
      'approval d1 deny by cancel',
      'tool/call d1',
      'tool/result d1 ABORTED_BEFORE_DISPATCH',
      'step/end 1.1',
      'turn/end 1 aborted',
    ]);
    expect(s.core.stateView()).toMatchObject({ status: 'idle', approvals: [] });
  });

  it('dispose while waiting aborts it and disposes the session', () => {
    const s = sim(deployThenAnswer);
    s.followup(user('P'));
    s.signal({ signal: 'dispose', payload: {} });
    expect(outline(s.log).slice(-4)).toEqual([
      'tool/result d1 ABORTED_BEFORE_DISPATCH',
      'step/end 1.1',
      'turn/end 1 aborted',
      'session/disposed',
    ]);
    expect(s.ran).toEqual([]);
  });
});

describe('a batch with calls that wait', () => {
  it('the other calls run meanwhile; results still commit in the model call order (rule 18)', () => {
    const s = sim([
      {
        toolCalls: [
          { name: 'deploy', callId: 'd1', args: {} },
          { name: 'read', callId: 'r1', args: {} },
        ],
      },
    ]);
    s.followup(user('P'));
    // r1 ran and settled, but its result waits behind d1's.
    expect(s.ran).toEqual(['r1']);
    expect(outline(s.log).slice(-3)).toEqual([
      'assistant/message 1.1 [d1,r1]',
      'approval? d1',
      'tool/call r1',
    ]);
    expect(outline(s.log)).not.toContain('tool/result r1');
    s.approve({ callId: 'd1', decision: 'approve' });
    const lines = outline(s.log);
    expect(lines.indexOf('tool/result d1')).toBeLessThan(lines.indexOf('tool/result r1'));
    expect(s.ran).toEqual(['r1', 'd1']);
  });

  it('two approvals resolved in the opposite order still commit in call order', () => {
    const s = sim([
      {
        toolCalls: [
          { name: 'deploy', callId: 'd1', args: { n: 1 } },
          { name: 'deploy', callId: 'd2', args: { n: 2 } },
        ],
      },
    ]);
    s.followup(user('P'));
    expect(s.core.stateView().approvals.map((a) => a.callId)).toEqual(['d1', 'd2']);
    s.approve({ callId: 'd2', decision: 'approve' });
    expect(s.ran).toEqual(['d2']);
    expect(s.waitingForApproval).toBe(true);
    s.approve({ callId: 'd1', decision: 'deny' });
    const lines = outline(s.log);
    expect(lines.filter((l) => l.startsWith('tool/result'))).toEqual([
      'tool/result d1 DENIED',
      'tool/result d2',
    ]);
    expect(lines.indexOf('tool/call d2')).toBeLessThan(lines.indexOf('tool/call d1'));
  });

  it('an approved exclusive call runs alone', () => {
    const s = sim([
      {
        toolCalls: [
          { name: 'migrate', callId: 'm1', args: {} },
          { name: 'read', callId: 'r1', args: {} },
          { name: 'read', callId: 'r2', args: {} },
        ],
      },
    ]);
    s.followup(user('P'));
    expect(s.ran).toEqual(['r1', 'r2']);
    s.approve({ callId: 'm1', decision: 'approve' });
    expect(s.ran).toEqual(['r1', 'r2', 'm1']);
    expect(outline(s.log).filter((l) => l.startsWith('tool/result'))).toEqual([
      'tool/result m1',
      'tool/result r1',
      'tool/result r2',
    ]);
  });
});

describe('who requires approval', () => {
  it('a session adds tools (by name, or all with *); it cannot lift what the worker requires', () => {
    const named = sim([{ toolCalls: [{ name: 'read', callId: 'r1', args: {} }] }], {
      approvals: { tools: ['read'] },
    });
    named.followup(user('P'));
    expect(named.waitingForApproval).toBe(true);

    const all = sim([{ toolCalls: [{ name: 'read', callId: 'r1', args: {} }] }], {
      approvals: { tools: '*' },
    });
    all.followup(user('P'));
    expect(all.waitingForApproval).toBe(true);

    // Naming no tools does not lift the worker's requirement on deploy.
    const none = sim(deployThenAnswer, { approvals: { tools: [] } });
    none.followup(user('P'));
    expect(none.waitingForApproval).toBe(true);
    for (const s of [named, all, none]) s.signal({ signal: 'cancel', payload: {} });
  });

  it('a worker predicate decides per call; a predicate that fails requires approval (fail closed)', () => {
    const calls = [
      { name: 'rm', callId: 'safe', args: { path: '/tmp/x' } },
      { name: 'rm', callId: 'risky', args: { path: '/' } },
    ];
    const s = sim([{ toolCalls: calls }], { script: { checkApprovals: () => ['risky'] } });
    s.followup(user('P'));
    expect(s.ran).toEqual(['safe']);
    expect(s.core.stateView().approvals.map((a) => a.callId)).toEqual(['risky']);
    s.approve({ callId: 'risky', decision: 'deny' });

    const failing = sim([{ toolCalls: calls }], { script: { checkApprovals: () => 'fail' } });
    failing.followup(user('P'));
    expect(failing.ran).toEqual([]);
    expect(failing.core.stateView().approvals.map((a) => a.callId)).toEqual(['safe', 'risky']);
    failing.signal({ signal: 'cancel', payload: {} });
  });
});

describe('while a call waits', () => {
  it('a steer and an inject are accepted and enter at the next pre-step; the call never runs without its decision', () => {
    const s = sim([
      { toolCalls: [{ name: 'deploy', callId: 'd1', args: {} }] },
      // The next step calls deploy again: it needs its own decision.
      { toolCalls: [{ name: 'deploy', callId: 'd2', args: {} }] },
      { text: 'ok' },
    ]);
    s.followup(user('P'));
    s.steer(user('S', 'stop, use staging'));
    s.inject(user('I', 'context'));
    expect(s.ran).toEqual([]);
    expect(s.waitingForApproval).toBe(true);
    expect(s.core.stateView().pending.nextStep).toEqual(['S', 'I']);
    s.approve({ callId: 'd1', decision: 'deny', reason: 'staging first' });
    // Step 2 entered the steer and the context; its deploy call waits for its own decision.
    expect(outline(s.log)).toEqual(
      expect.arrayContaining(['user/message S', 'user/message I', 'approval? d2']),
    );
    expect(s.ran).toEqual([]);
    expect(s.waitingForApproval).toBe(true);
    s.approve({ callId: 'd2', decision: 'approve' });
    expect(s.ran).toEqual(['d2']);
    expect(s.core.lastTurnEnd()?.reason).toEqual({ kind: 'completed' });
  });

  it('the session never continues as new (it is inside a turn)', () => {
    const s = sim(deployThenAnswer);
    s.followup(user('P'));
    s.suggestContinueAsNewAtNextQuietPoint();
    s.inject(user('I'));
    expect(s.continuedAsNew).toBe(0);
    expect(s.driver.canContinueAsNew()).toBe(false);
    s.approve({ callId: 'd1', decision: 'approve' });
    expect(s.continuedAsNew).toBe(1);
  });
});

describe('the approve update', () => {
  it('refuses an unknown call naming it and the calls that wait; a repeated decision is a duplicate', () => {
    const s = sim(deployThenAnswer);
    s.followup(user('P'));
    expect(s.approve({ callId: 'nope', decision: 'approve' }).refused).toBe(
      'call "nope" is not waiting for approval in this session; calls waiting: d1',
    );
    expect(s.approve({ callId: 'd1', decision: 'maybe' }).refused).toMatch(
      /^invalid approve payload: decision/,
    );
    expect(s.approve({ callId: 'd1', decision: 'approve', extra: 1 }).refused).toMatch(
      /invalid approve payload/,
    );
    expect(s.approve({ callId: 'd1', decision: 'approve' }).receipt).toEqual({
      callId: 'd1',
      decision: 'approve',
      duplicate: false,
    });
    expect(s.approve({ callId: 'd1', decision: 'approve' }).receipt).toEqual({
      callId: 'd1',
      decision: 'approve',
      duplicate: true,
    });
    expect(s.approve({ callId: 'd1', decision: 'deny' }).refused).toBe(
      'call "d1" was already resolved (approve by caller); no call is waiting for a decision',
    );
    // One decision event, however many updates.
    expect(outline(s.log).filter((l) => l.startsWith('approval d1'))).toEqual([
      'approval d1 approve by caller',
    ]);
  });
});
