/**
 * Transcript entries sent by reference (src/domain/entryRefs.ts), through the one loop and the in-memory
 * interpreter, which rebuilds every reference from its record of what the run's Temporal history holds (delivery
 * payloads, tool activity results, model answers of the current run) and never from the driver's state. What the
 * model sees must be exactly the log (rule 14); what a request sends inline must be only what history does not hold
 * in that form.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { checkLog, projectTranscript } from '../../src/domain/index';
import { isEntryRef, type WireEntry } from '../../src/domain/entryRefs';
import { ctx, queuedScript, InMemorySession, user, type Script } from '../support/interpreter';

let sims: InMemorySession[] = [];
function sim(script: Script = {}, config = { tools: ['read'] } as object): InMemorySession {
  const s = new InMemorySession(script, { config });
  sims.push(s);
  return s;
}
afterEach(() => {
  for (const s of sims) {
    expect(checkLog(s.log)).toEqual({ ok: true });
    // Rule 14 for every request: the model saw exactly the model-visible part of the log at that moment.
    s.requests.forEach((request, i) =>
      expect(request).toEqual(projectTranscript(s.log.slice(0, s.requestAt[i]))),
    );
  }
  sims = [];
});

/** Each new entry of a request as `ref:<where>` or `inline:<role>`. */
const shape = (entries: readonly WireEntry[]) =>
  entries.map((e) => (isEntryRef(e) ? `ref:${e.ref.in}` : `inline:${e.role}`));

const bytes = (entries: readonly WireEntry[]) => JSON.stringify(entries).length;

const BIG = 'x'.repeat(4000);

describe('references', () => {
  it('send the user message, the tool result and the last answer by reference; the model still sees them whole', () => {
    const s = sim(
      queuedScript({
        models: [
          { text: 'let me read', toolCalls: [{ name: 'read', result: BIG }] },
          { text: 'it says x' },
          { text: 'second answer' },
        ],
      }),
    );
    s.followup(user('q1', 'question one'));
    s.followup(user('q2', 'question two'));

    expect(s.sent.map(shape)).toEqual([
      ['ref:delivery'],
      ['ref:model', 'ref:tool'],
      ['ref:model', 'ref:delivery'],
    ]);
    // The model saw the tool's 4,000 characters; the request that sent them carried a few dozen bytes.
    expect(JSON.stringify(s.requests[1])).toContain(BIG);
    expect(bytes(s.sent[1]!)).toBeLessThan(300);
    expect(s.requests[2]!.at(-1)).toMatchObject({
      role: 'user',
      id: 'q2',
      content: [{ text: 'question two' }],
    });
    expect(s.requests[2]!.at(-2)).toMatchObject({ role: 'assistant', content: [{ text: 'it says x' }] });
  });

  it('keep inline what history does not hold in that form: a message a pre-step listener added, a blocked tool result, a hook context, an id the workflow made', () => {
    const s = sim(
      queuedScript({
        preSteps: [{ kind: 'extra', messages: [ctx('added')] }],
        models: [{ toolCalls: [{ name: 'read', result: 'secret' }] }, { text: 'done' }],
        postTool: () => ({
          kind: 'ok',
          result: {
            kind: 'block',
            feedback: 'withheld',
            additionalContexts: [{ content: [{ type: 'text', text: 'from the hook' }] }],
          },
        }),
      }),
      { tools: ['read'], hooks: ['post-guard'] },
    );
    s.followup(user('q1', 'original'));
    s.signal({ signal: 'followup', payload: { message: { content: 'no id given' } } });

    expect(s.sent.map(shape)).toEqual([
      ['ref:delivery', 'inline:user'],
      ['ref:model', 'inline:tool', 'inline:user'],
      ['ref:model', 'inline:user'],
    ]);
    expect(s.requests[0]![1]).toMatchObject({ id: 'added', source: { kind: 'plugin' } });
    expect(s.requests[1]!.find((e) => e.role === 'tool')).toMatchObject({ content: [{ text: 'withheld' }] });
    expect(s.requests[2]!.at(-1)).toMatchObject({ role: 'user', content: [{ text: 'no id given' }] });
  });

  it('name the delivery that was accepted, not a later duplicate with the same id and other content', () => {
    const s = sim(queuedScript({ preSteps: [{ kind: 'default' }] }));
    s.inject(user('m1', 'the first content'));
    s.inject(user('m1', 'a duplicate, ignored (rule 4)'));
    s.followup(user('go'));
    expect(s.sent.map(shape)).toEqual([['ref:delivery', 'ref:delivery']]);
    expect(s.requests[0]![0]).toMatchObject({ id: 'm1', content: [{ text: 'the first content' }] });
  });

  it('never reach into an earlier run: after continue-as-new the carried answer goes inline', () => {
    const s = sim();
    s.followup(user('q1'));
    s.continueAsNew();
    s.followup(user('q2'));
    expect(s.continuedAsNew).toBe(1);
    expect(s.sent.map(shape)).toEqual([['ref:delivery'], ['inline:assistant', 'ref:delivery']]);
    expect(s.requests[1]!.map((e) => e.role)).toEqual(['user', 'assistant', 'user']);
  });
});
