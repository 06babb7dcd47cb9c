/**
 * Usage accounting and the current details (issue: operability): token totals counted from the model's reported
 * usage, per model label, carried through continue-as-new; the one-glance details the Temporal UI shows. On the
 * same driver the workflow runs (the in-memory interpreter).
 */
import { describe, expect, it } from 'vitest';
import { currentDetails } from '../../src/domain/details';
import { ctx, InMemorySession, user } from '../support/interpreter';

describe('token usage totals', () => {
  it('sums reported usage per model across turns and continue-as-new; answers without usage count nothing', () => {
    const usage = [{ inputTokens: 120, outputTokens: 7 }, undefined, { inputTokens: 300, outputTokens: 40 }];
    const session = new InMemorySession(
      {
        model: ({ request }) => ({
          text: `a${request}`,
          ...(usage[request] ? { usage: usage[request] } : {}),
        }),
      },
      { config: { model: { provider: 'openai', model: 'gpt-4o-mini' } } },
    );
    session.followup(user('one'));
    session.followup(user('two'));
    expect(session.core.stateView().usage).toEqual({
      inputTokens: 120,
      outputTokens: 7,
      steps: 1,
      byModel: { 'openai:gpt-4o-mini': { inputTokens: 120, outputTokens: 7, steps: 1 } },
    });
    session.continueAsNew();
    session.followup(user('three'));
    expect(session.continuedAsNew).toBe(1);
    expect(session.core.stateView().usage).toEqual({
      inputTokens: 420,
      outputTokens: 47,
      steps: 2,
      byModel: { 'openai:gpt-4o-mini': { inputTokens: 420, outputTokens: 47, steps: 2 } },
    });
    // The log keeps each step's usage where the provider reported it.
    const reported = session.log.filter((e) => e.type === 'assistant/message').map((e) => e.data.usage);
    expect(reported).toEqual(usage);
  });

  it('a session that names no model counts under "default"', () => {
    const session = new InMemorySession({ model: () => ({ text: 'x', usage: { inputTokens: 5 } }) });
    session.followup(user('hi'));
    expect(session.core.stateView().usage.byModel).toEqual({
      default: { inputTokens: 5, outputTokens: 0, steps: 1 },
    });
  });
});

describe('current details', () => {
  it('idle, then the last turn error and the pending messages, then usage', () => {
    const session = new InMemorySession({
      model: ({ turn }) =>
        turn === 1 ? { fail: 'provider said no' } : { text: 'ok', usage: { inputTokens: 9 } },
    });
    expect(currentDetails(session.core, { kind: 'work' })).toBe('**idle** · 0 turns · waiting for a message');
    session.followup(user('one'));
    expect(currentDetails(session.core, { kind: 'work' })).toBe(
      '**idle** · 1 turn · waiting for a message\nlast turn (1): error MODEL_FAILED: provider said no',
    );
    session.followup(user('two'));
    expect(currentDetails(session.core, { kind: 'model', model: 'default' })).toBe(
      '**idle** · 2 turns · waiting for the model (default)\nusage: 9 input · 0 output tokens',
    );
  });

  it('a running turn shows turn, step, what it waits for and the pending lanes', () => {
    let seen = '';
    const session = new InMemorySession(
      {
        model: ({ step }) =>
          step === 1 ? { toolCalls: [{ name: 'echo', result: 'hi' }] } : { text: 'done' },
        during: (point) => {
          if (point.at === 'model' && point.step === 1)
            return [
              { lane: 'followup', message: user('later') },
              { lane: 'inject', message: ctx('note') },
            ];
          if (point.at === 'tool' && point.turn === 1)
            seen = currentDetails(session.core, { kind: 'tools', names: ['echo'] });
          return [];
        },
      },
      { config: { tools: ['echo'] } },
    );
    session.followup(user('one'));
    expect(seen).toBe(
      '**running** · turn 1 · step 1 · running tools: echo\npending: 1 for the next turn · 1 for the next step',
    );
  });
});
