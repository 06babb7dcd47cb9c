/** The loop's pure decisions after pre-step and after a step (rules 15, 17, 20, 21). */
import { describe, expect, it } from 'vitest';
import { afterPreStep, afterStep, type StepOutcome } from '../../src/domain/index';
import { ctx, user } from '../support/interpreter';

describe('afterPreStep', () => {
  it('reject ends the turn blocked, with the reason when given (rule 15)', () => {
    expect(afterPreStep({ kind: 'reject' }, false)).toEqual({ kind: 'end', reason: { kind: 'blocked' } });
    expect(afterPreStep({ kind: 'reject', reason: 'secret' }, true)).toEqual({
      kind: 'end',
      reason: { kind: 'blocked', message: 'secret' },
    });
  });

  it('an empty enter ends the turn completed, unless tools owe the model a request (rule 17)', () => {
    expect(afterPreStep({ kind: 'enter', messages: [] }, false)).toEqual({
      kind: 'end',
      reason: { kind: 'completed' },
    });
    expect(afterPreStep({ kind: 'enter', messages: [] }, true)).toEqual({ kind: 'step', messages: [] });
  });

  it('enter opens a step with exactly the returned messages, in order (rules 13, 14)', () => {
    const messages = [ctx('A'), user('P'), ctx('X')];
    expect(afterPreStep({ kind: 'enter', messages }, false)).toEqual({ kind: 'step', messages });
  });
});

describe('afterStep', () => {
  const done: StepOutcome = {
    toolsOweRequest: false,
    concluded: false,
    maxTokens: false,
    nextStepPending: false,
  };

  it('a plain answer ends the turn completed; max-tokens ends it max-tokens', () => {
    expect(afterStep(done)).toEqual({ kind: 'end', reason: { kind: 'completed' } });
    expect(afterStep({ ...done, maxTokens: true })).toEqual({ kind: 'end', reason: { kind: 'max-tokens' } });
  });

  it('runs another step when next-step is not empty, whatever else happened (rule 20)', () => {
    for (const extra of [{}, { maxTokens: true }, { concluded: true }, { toolsOweRequest: true }]) {
      expect(afterStep({ ...done, ...extra, nextStepPending: true })).toEqual({ kind: 'continue' });
    }
  });

  it('tool results owed to the model continue the turn (rule 17)', () => {
    expect(afterStep({ ...done, toolsOweRequest: true })).toEqual({ kind: 'continue' });
  });

  it('a concluding tool ends the turn only when next-step is empty after the step (rule 21)', () => {
    expect(afterStep({ ...done, concluded: true, toolsOweRequest: true })).toEqual({
      kind: 'end',
      reason: { kind: 'completed' },
    });
    expect(afterStep({ ...done, concluded: true, toolsOweRequest: true, nextStepPending: true })).toEqual({
      kind: 'continue',
    });
  });
});
