/**
 * The client's errors answer `instanceof` across copies of the client (src/client/errors.ts): a program that loads
 * both `agent-sessions` and `@agent-sessions/client` (docs/decisions/2026-12-06-packages.md) can catch an error of
 * one copy with the class of the other. Two copies here: the module as first imported, and a fresh load of it.
 */
import { expect, it, vi } from 'vitest';
import * as first from '../../src/client/errors';

it('an error from one copy of the client is an instance of the same class in another copy, and of no other', async () => {
  vi.resetModules();
  const second = await import('../../src/client/errors.js');
  expect(second.SessionNotFoundError).not.toBe(first.SessionNotFoundError); // really two copies

  const notFound = new second.SessionNotFoundError('s-1');
  expect(notFound).toBeInstanceOf(first.SessionNotFoundError);
  expect(notFound).toBeInstanceOf(Error);
  expect(notFound).not.toBeInstanceOf(first.SessionDisposedError);
  expect(new first.InvalidInputError('message.content', 'empty')).toBeInstanceOf(second.InvalidInputError);
  expect(new Error('plain')).not.toBeInstanceOf(first.BudgetRefusedError);
  expect(null).not.toBeInstanceOf(first.BudgetRefusedError);

  // A subclass keeps JavaScript's own check: its parent's instances are not its instances.
  class Narrower extends first.DeliveryRejectedError {}
  expect(new Narrower('no')).toBeInstanceOf(second.DeliveryRejectedError);
  expect(new first.DeliveryRejectedError('no')).not.toBeInstanceOf(Narrower);
});
