/** Errors the SessionClient throws, small and named so callers can branch on them. */

/** The input failed validation before anything was sent; `field` names what to fix. */
export class InvalidInputError extends Error {
  override name = 'InvalidInputError';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
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
