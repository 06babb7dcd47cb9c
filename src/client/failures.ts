/**
 * Which Temporal failure becomes which client error (./errors.ts), decided by failure type and workflow status,
 * never by message text. Every call of SessionClient that reaches a session goes through `explainFailure`
 * (`explained`, or `deliverExplained` after the retries of ./retry.ts). Does I/O only to ask the status of a
 * session whose run closed under a call.
 */
import {
  ApplicationFailure,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  type Client,
} from '@temporalio/client';
import { FailureTypes } from '../contract';
import {
  ApprovalRefusedError,
  BudgetRefusedError,
  DeliveryRejectedError,
  InvalidInputError,
  SessionDisposedError,
  SessionNotFoundError,
  TurnWaitTimeoutError,
} from './errors';
import type { DeliveryReceipt } from '../domain/wire';
import { idIsOurs, type MessageArg } from './inputs';
import { deliveryFailureKind, retryDelivery, type DeliveryRetryPolicy } from './retry';

/** The status of the session's latest run (`RUNNING` after a continue-as-new), or undefined when none exists. */
export async function sessionStatus(client: Client, sessionId: string): Promise<string | undefined> {
  try {
    return (await client.workflow.getHandle(sessionId).describe()).status.name;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
}

/**
 * The client's error for `err`: an update refused with `SessionDisposed` → SessionDisposedError, with
 * `InvalidPayload` → InvalidInputError naming the field, `TurnWaitTimeout`, `BudgetRefused`, `ApprovalRefused` →
 * their errors, any other refusal → DeliveryRejectedError; a run that closed under the call (not found, or an
 * update the server failed because the run ended) → SessionDisposedError when the session's workflow completed (a
 * disposed session, rule 31), SessionNotFoundError when there is none or it ended otherwise. Anything else, and a
 * session still running (the attempts ran out while it moved between runs), is returned as Temporal raised it.
 */
export async function explainFailure(client: Client, sessionId: string, err: unknown): Promise<unknown> {
  const runClosed = deliveryFailureKind(err) === 'run-closed';
  if (err instanceof WorkflowUpdateFailedError && !runClosed) {
    const cause = err.cause;
    const type = cause instanceof ApplicationFailure ? cause.type : undefined;
    const message = cause?.message ?? err.message;
    if (type === FailureTypes.SessionDisposed) return new SessionDisposedError(sessionId);
    if (type === FailureTypes.InvalidPayload) return InvalidInputError.fromSession(message);
    if (type === FailureTypes.TurnWaitTimeout) return new TurnWaitTimeoutError(message);
    if (type === FailureTypes.BudgetRefused) return new BudgetRefusedError(message);
    if (type === FailureTypes.ApprovalRefused) return new ApprovalRefusedError(message);
    return new DeliveryRejectedError(message);
  }
  if (!runClosed) return err;
  let status: string | undefined;
  try {
    status = await sessionStatus(client, sessionId);
  } catch {
    return err;
  }
  if (status === 'COMPLETED') return new SessionDisposedError(sessionId);
  if (status === undefined) return new SessionNotFoundError(sessionId);
  // Still running: the attempts ran out while the session moved between runs.
  if (status === 'RUNNING') return err;
  return new SessionNotFoundError(sessionId, `its workflow is ${status.toLowerCase()}`);
}

/** Runs `call`, throwing what it throws as the client's error (`explainFailure`). */
export async function explained<T>(client: Client, sessionId: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw await explainFailure(client, sessionId, err);
  }
}

/**
 * Runs a `deliver` attempt until it answers, retrying transient failures with `policy` (./retry.ts), and throws
 * the failure that ends it as the client's error.
 */
export function deliverExplained(
  client: Client,
  policy: DeliveryRetryPolicy,
  sessionId: string,
  message: MessageArg,
  attempt: () => Promise<DeliveryReceipt>,
): Promise<DeliveryReceipt> {
  return retryDelivery(policy, idIsOurs(message), attempt, {
    status: () => sessionStatus(client, sessionId),
    explain: (err) => explainFailure(client, sessionId, err),
  });
}
