/** How a turn's end reads (src/domain/turnEnd.ts): the one line the CLI, the Temporal UI and the viewer show. */
import { describe, expect, it } from 'vitest';
import { turnEndText } from '../../src/domain/turnEnd';

describe('turnEndText', () => {
  it('words every kind of end in one line', () => {
    expect(turnEndText({ kind: 'completed' })).toBe('completed');
    expect(turnEndText({ kind: 'max-tokens' })).toBe('max-tokens');
    expect(turnEndText({ kind: 'aborted', reason: { kind: 'user' } })).toBe('aborted (user)');
    expect(turnEndText({ kind: 'aborted', reason: { kind: 'disposed' } })).toBe('aborted (disposed)');
    expect(turnEndText({ kind: 'aborted', reason: { kind: 'hook', reason: 'off topic' } })).toBe(
      'aborted (hook: off topic)',
    );
    expect(turnEndText({ kind: 'blocked' })).toBe('blocked');
    expect(turnEndText({ kind: 'blocked', message: 'refused' })).toBe('blocked: refused');
    expect(turnEndText({ kind: 'error', error: { code: 'MODEL_FAILED', message: 'boom' } })).toBe(
      'error MODEL_FAILED: boom',
    );
  });

  it('cuts the free text to maxChars, ending in …', () => {
    const error = { kind: 'error', error: { code: 'X', message: 'a'.repeat(10) } } as const;
    expect(turnEndText(error, 10)).toBe(`error X: ${'a'.repeat(10)}`);
    expect(turnEndText(error, 5)).toBe('error X: aaaa…');
    expect(turnEndText({ kind: 'blocked', message: 'abcdef' }, 3)).toBe('blocked: ab…');
  });
});
