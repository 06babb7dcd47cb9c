/**
 * Errors the SessionClient throws, small and named so callers can branch on them. `instanceof` holds across copies
 * of this module: both packages carry the client (`agent-sessions` and `@agent-sessions/client`,
 * docs/decisions/2026-12-06-packages.md), and a program may load both.
 */
import { issueField } from '../domain/util';

/**
 * The input failed validation — the client's before anything was sent, or the session's (an `InvalidPayload`
 * failure of the `deliver` update); `field` names what to fix (`message.content`, `config.tools[1]`).
 */
export class InvalidInputError extends Error {
  override name = 'InvalidInputError';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }

  /**
   * From the message of the session's `InvalidPayload` failure, which names the field first, after an optional
   * `invalid … payload: ` prefix ("invalid deliver payload: message.content: must not be empty").
   */
  static fromSession(message: string): InvalidInputError {
    const field = /^(?:invalid [^:]*: )?([\w.[\]]+): /.exec(message)?.[1] ?? 'payload';
    return new InvalidInputError(field, message);
  }
}

/** The session was disposed: it accepts no more messages (rule 31). */
export class SessionDisposedError extends Error {
  override name = 'SessionDisposedError';
  constructor(readonly sessionId: string) {
    super(`session ${sessionId} is disposed: it accepts no more messages`);
  }
}

/** No session with this id exists (or it ended without being disposed). */
export class SessionNotFoundError extends Error {
  override name = 'SessionNotFoundError';
  constructor(
    readonly sessionId: string,
    detail?: string,
  ) {
    super(`session ${sessionId} not found${detail ? `: ${detail}` : ''}`);
  }
}

/** The session refused a delivery (the `deliver` update's validator or handler said no). */
export class DeliveryRejectedError extends Error {
  override name = 'DeliveryRejectedError';
}

/** A waiting delivery (`ask`) timed out: the message was accepted, but its turn did not end in time. */
export class TurnWaitTimeoutError extends Error {
  override name = 'TurnWaitTimeoutError';
}

/** An `approve` named a call that is not waiting for a decision (unknown, or already resolved another way). */
export class ApprovalRefusedError extends Error {
  override name = 'ApprovalRefusedError';
}

/** A `budget` decision came while the session was not waiting at its budget. */
export class BudgetRefusedError extends Error {
  override name = 'BudgetRefusedError';
}

// Each error class answers `instanceof` by a marker on its prototype named with Symbol.for, which every copy of
// this module shares; a subclass of one keeps JavaScript's own check.
for (const clazz of [
  InvalidInputError,
  SessionDisposedError,
  SessionNotFoundError,
  DeliveryRejectedError,
  TurnWaitTimeoutError,
  ApprovalRefusedError,
  BudgetRefusedError,
]) {
  const marker = Symbol.for(`agent-sessions.${clazz.name}`);
  Object.defineProperty(clazz.prototype, marker, { value: true });
  Object.defineProperty(clazz, Symbol.hasInstance, {
    value: function (this: unknown, value: unknown): boolean {
      if (this !== clazz) return Function.prototype[Symbol.hasInstance].call(this, value);
      return typeof value === 'object' && value !== null && marker in value;
    },
  });
}

/** The InvalidInputError of a zod failure: the first issue, its field named from `root`. */
export function invalidInput(
  issues: readonly { path: readonly PropertyKey[]; message: string }[],
  root: string,
): InvalidInputError {
  const first = issues[0];
  const field = issueField([root, ...(first?.path ?? [])]);
  return new InvalidInputError(field, `invalid ${root}: ${field}: ${first?.message ?? 'invalid'}`);
}
