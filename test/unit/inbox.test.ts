/** The inbox as a fold of validated splices (STYLE 3; rules 3, 10, 27). */
import { describe, expect, it } from 'vitest';
import {
  applySplice,
  cancelSplice,
  claimSplice,
  EMPTY_INBOX,
  foldInbox,
  InboxSpliceError,
  insertSplice,
  removedBy,
  spliceProblem,
  spliceShape,
  type Inbox,
  type SpliceData,
} from '../../src/domain/index';
import { ctx, user } from '../support/interpreter';

const ids = (inbox: Inbox) => ({
  nextTurn: inbox.nextTurn.map((m) => m.id),
  nextStep: inbox.nextStep.map((m) => m.id),
});

describe('splice builders and fold', () => {
  it('inserts at the end of the target list, in order', () => {
    let inbox = EMPTY_INBOX;
    const splices: SpliceData[] = [];
    for (const [target, m] of [
      ['next-step', ctx('A')],
      ['next-turn', user('P')],
      ['next-step', ctx('B')],
    ] as const) {
      const s = insertSplice(inbox, target, m);
      splices.push(s);
      inbox = applySplice(inbox, s);
    }
    expect(splices.map((s) => [s.target, s.start, s.removedCount, s.inserted.map((m) => m.id)])).toEqual([
      ['next-step', 0, undefined, ['A']],
      ['next-turn', 0, undefined, ['P']],
      ['next-step', 1, undefined, ['B']],
    ]);
    expect(ids(inbox)).toEqual({ nextTurn: ['P'], nextStep: ['A', 'B'] });
    expect(foldInbox(splices)).toEqual(inbox);
  });

  it('claims from the front, at most what is there; nothing to claim gives no splice', () => {
    const inbox = foldInbox([
      insertSplice(EMPTY_INBOX, 'next-turn', user('P1')),
      { target: 'next-turn', start: 1, inserted: [user('P2')] },
    ]);
    expect(claimSplice(inbox, 'next-turn', 1)).toEqual({
      target: 'next-turn',
      start: 0,
      removedCount: 1,
      inserted: [],
    });
    expect(claimSplice(inbox, 'next-turn', 5)).toEqual({
      target: 'next-turn',
      start: 0,
      removedCount: 2,
      inserted: [],
    });
    expect(claimSplice(inbox, 'next-step', 3)).toBeUndefined();
    expect(claimSplice(inbox, 'next-turn', 0)).toBeUndefined();
    const claim = claimSplice(inbox, 'next-turn', 1)!;
    expect(removedBy(inbox, claim).map((m) => m.id)).toEqual(['P1']);
    expect(ids(applySplice(inbox, claim))).toEqual({ nextTurn: ['P2'], nextStep: [] });
  });

  it('cancels a whole list with outcome canceled; an empty list gives no splice', () => {
    const inbox = foldInbox([insertSplice(EMPTY_INBOX, 'next-step', ctx('A'))]);
    expect(cancelSplice(inbox, 'next-step')).toEqual({
      target: 'next-step',
      start: 0,
      removedCount: 1,
      inserted: [],
      outcome: 'canceled',
    });
    expect(cancelSplice(inbox, 'next-turn')).toBeUndefined();
  });

  it('names the three shapes', () => {
    expect(spliceShape({ target: 'next-step', start: 0, inserted: [ctx('A')] })).toBe('insert');
    expect(spliceShape({ target: 'next-step', start: 0, removedCount: 1, inserted: [] })).toBe('claim');
    expect(
      spliceShape({ target: 'next-step', start: 0, removedCount: 1, inserted: [], outcome: 'canceled' }),
    ).toBe('cancel');
  });

  it('never mutates the inbox it applies to', () => {
    const before = foldInbox([insertSplice(EMPTY_INBOX, 'next-step', ctx('A'))]);
    const snapshot = ids(before);
    applySplice(before, { target: 'next-step', start: 0, removedCount: 1, inserted: [] });
    applySplice(before, { target: 'next-step', start: 1, inserted: [ctx('B')] });
    expect(ids(before)).toEqual(snapshot);
    expect(EMPTY_INBOX).toEqual({ nextTurn: [], nextStep: [] });
  });

  it('folds from an initial inbox (continue-as-new)', () => {
    const carried = foldInbox([insertSplice(EMPTY_INBOX, 'next-step', ctx('A'))]);
    expect(ids(foldInbox([{ target: 'next-step', start: 1, inserted: [ctx('B')] }], carried))).toEqual({
      nextTurn: [],
      nextStep: ['A', 'B'],
    });
  });
});

describe('invalid splices are refused before they apply', () => {
  const inbox = foldInbox([insertSplice(EMPTY_INBOX, 'next-step', ctx('A'))]);
  const cases: [string, SpliceData, string][] = [
    [
      'start past the end',
      { target: 'next-step', start: 2, inserted: [ctx('B')] },
      'splice start expected 0..1 for next-step, got 2',
    ],
    [
      'negative start',
      { target: 'next-step', start: -1, inserted: [ctx('B')] },
      'splice start expected 0..1 for next-step, got -1',
    ],
    [
      'fractional start',
      { target: 'next-step', start: 0.5, inserted: [ctx('B')] },
      'splice start expected 0..1 for next-step, got 0.5',
    ],
    [
      'removing more than there is',
      { target: 'next-turn', start: 0, removedCount: 1, inserted: [] },
      'splice removes 1 from 0 but next-turn has 0',
    ],
    [
      'negative removal',
      { target: 'next-step', start: 0, removedCount: -1, inserted: [ctx('B')] },
      'splice removes -1 from 0 but next-step has 1',
    ],
    [
      'a splice that changes nothing',
      { target: 'next-step', start: 0, inserted: [] },
      'splice changes nothing',
    ],
    [
      'a canceled splice that inserts',
      { target: 'next-step', start: 0, removedCount: 1, inserted: [ctx('B')], outcome: 'canceled' },
      'a canceled splice inserts nothing',
    ],
    [
      'an id already pending',
      { target: 'next-turn', start: 0, inserted: [user('A')] },
      'splice inserts id A that is already pending',
    ],
    [
      'the same id twice in one splice',
      { target: 'next-turn', start: 0, inserted: [user('B'), user('B')] },
      'splice inserts id B that is already pending',
    ],
  ];
  it.each(cases)('%s', (_name, splice, problem) => {
    expect(spliceProblem(inbox, splice)).toBe(problem);
    expect(() => applySplice(inbox, splice)).toThrow(InboxSpliceError);
    expect(() => applySplice(inbox, splice)).toThrow(problem);
    expect(() => foldInbox([splice], inbox)).toThrow(problem);
  });

  it('accepts a claimed id being inserted again once it is no longer pending', () => {
    const claimed = applySplice(inbox, { target: 'next-step', start: 0, removedCount: 1, inserted: [] });
    expect(spliceProblem(claimed, { target: 'next-turn', start: 0, inserted: [user('A')] })).toBeUndefined();
  });
});
