/**
 * SessionClient's handling of `deliver` failures, against a scripted stand-in for the Temporal client (no server):
 * transient failures (a rejected workflow task, an aborted update, an RPC timeout, a run that continued as new
 * under the call) are retried, bounded, with the message id fixed before the first attempt; a disposed session is
 * told by failure type or by the workflow having completed, never by message text; the session's InvalidPayload
 * refusal becomes InvalidInputError naming the field. The same paths against a real server are in
 * test/workflows (client, delivery and continue-as-new tests).
 */
import {
  ApplicationFailure,
  ServiceError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
  type Client,
} from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import {
  DeliveryRejectedError,
  InvalidInputError,
  SessionClient,
  SessionDisposedError,
  SessionNotFoundError,
} from '../../src/client';
import { DEFAULT_DELIVERY_RETRY, deliveryBackoffMs, deliveryFailureKind } from '../../src/client/retry';
import type { DeliverInput, DeliveryReceipt } from '../../src/domain/wire';

/** A gRPC error as @grpc/grpc-js raises it, wrapped the way the Temporal client rethrows update RPC failures. */
function rpcFailure(code: number, details: string): ServiceError {
  const cause = Object.assign(new Error(`${code} ${details}`), { code, details, metadata: {} });
  return new ServiceError('Workflow Update failed', { cause });
}
const workflowTaskFailed = () =>
  rpcFailure(9, 'Unable to perform workflow execution update due to unexpected workflow task failure.');
const updateAborted = () => rpcFailure(14, 'workflow update was aborted');
const rpcTimeout = () =>
  new WorkflowUpdateRPCTimeoutOrCancelledError('Workflow update call timeout or cancelled');
const closedUnderCall = () =>
  new WorkflowNotFoundError('workflow update was aborted by closing workflow', 's1', undefined);
const refused = (type: string, message: string) =>
  new WorkflowUpdateFailedError('Workflow Update failed', ApplicationFailure.create({ type, message }));

type Outcome = Error | ((input: DeliverInput) => DeliveryReceipt);
const accepted: Outcome = (input) => ({ messageId: input.message.id!, lane: input.lane, duplicate: false });
const duplicate: Outcome = (input) => ({ messageId: input.message.id!, lane: input.lane, duplicate: true });

/**
 * What SessionClient uses of the Temporal client: each update attempt takes the next scripted outcome; `describe`
 * reports the status of the session's latest run (`missing`: there is none, it throws not-found).
 */
function fakeTemporal(outcomes: Outcome[], status = 'RUNNING') {
  const attempts: DeliverInput[] = [];
  const startOperations: unknown[] = [];
  const signals: string[] = [];
  const attempt = (input: DeliverInput) => {
    attempts.push(input);
    const next = outcomes.shift();
    if (!next) throw new Error('no scripted outcome left');
    if (next instanceof Error) throw next;
    return next(input);
  };
  const workflow = {
    getHandle: (workflowId: string) => ({
      executeUpdate: async (_def: unknown, opts: { args: [DeliverInput] }) => attempt(opts.args[0]),
      signal: async (def: { name: string }) => {
        signals.push(def.name);
        if (status !== 'RUNNING')
          throw new WorkflowNotFoundError('workflow not found', workflowId, undefined);
      },
      describe: async () => {
        if (status === 'missing')
          throw new WorkflowNotFoundError('workflow not found', workflowId, undefined);
        return { status: { name: status } };
      },
    }),
    executeUpdateWithStart: async (
      _def: unknown,
      opts: { args: [DeliverInput]; startWorkflowOperation: unknown },
    ) => {
      startOperations.push(opts.startWorkflowOperation);
      return attempt(opts.args[0]);
    },
  };
  const sessions = new SessionClient({
    client: { workflow } as unknown as Client,
    deliveryRetry: { initialDelayMs: 1, maxDelayMs: 2 },
  });
  return { sessions, attempts, startOperations, signals };
}

describe('deliver retries transient failures by itself', () => {
  it.each([
    ['a workflow task the server rejected (WorkflowNotReady)', workflowTaskFailed],
    ['an aborted update', updateAborted],
    ['an update RPC that timed out', rpcTimeout],
    ['a run that closed under the call (continue-as-new)', closedUnderCall],
    [
      'an update the closing run did not process',
      () =>
        refused('UnprocessedUpdate', 'Workflow Update is rejected because it was not processed by worker.'),
    ],
  ])('%s: retried with the same message id, and the caller gets the receipt', async (_what, failure) => {
    const t = fakeTemporal([failure(), failure(), accepted]);
    const receipt = await t.sessions.deliver('s1', 'followup', 'hello');
    expect(t.attempts).toHaveLength(3);
    const ids = new Set(t.attempts.map((a) => a.message.id));
    expect(ids.size).toBe(1);
    expect(receipt).toEqual({ messageId: [...ids][0], lane: 'followup', duplicate: false });
  });

  it('an earlier attempt that landed is this call’s own message, not a duplicate, when the client made the id', async () => {
    const t = fakeTemporal([rpcTimeout(), duplicate]);
    expect(await t.sessions.deliver('s1', 'followup', 'hello')).toMatchObject({ duplicate: false });
    // With the caller's own id, a duplicate may be the caller's earlier call: the session's answer stands.
    const mine = fakeTemporal([rpcTimeout(), duplicate]);
    expect(await mine.sessions.deliver('s1', 'followup', { id: 'm-1', content: 'hello' })).toEqual({
      messageId: 'm-1',
      lane: 'followup',
      duplicate: true,
    });
  });

  it('gives up after the configured attempts and throws the last failure as Temporal raised it', async () => {
    const failures = Array.from({ length: DEFAULT_DELIVERY_RETRY.attempts + 1 }, updateAborted);
    const t = fakeTemporal([...failures]);
    const err = await t.sessions.deliver('s1', 'steer', 'hello').catch((e: unknown) => e);
    expect(err).toBe(failures[DEFAULT_DELIVERY_RETRY.attempts - 1]);
    expect(t.attempts).toHaveLength(DEFAULT_DELIVERY_RETRY.attempts);
  });

  it('deliverWithStart retries too, with a fresh start operation per attempt (one can be used once)', async () => {
    const t = fakeTemporal([workflowTaskFailed(), accepted]);
    await t.sessions.deliverWithStart('s1', 'followup', 'hello');
    expect(t.startOperations).toHaveLength(2);
    expect(t.startOperations[0]).not.toBe(t.startOperations[1]);
    expect(t.attempts[0]!.message.id).toBe(t.attempts[1]!.message.id);
  });
});

describe('deliver tells answers from transient failures', () => {
  it('SessionDisposed (the failure type) is a disposed session, at once', async () => {
    const t = fakeTemporal([refused('SessionDisposed', 'no more messages')]);
    await expect(t.sessions.deliver('s1', 'followup', 'hello')).rejects.toBeInstanceOf(SessionDisposedError);
    expect(t.attempts).toHaveLength(1);
  });

  it('the words "session disposed" under another failure type are a rejection, not a disposed session', async () => {
    const t = fakeTemporal([refused('SomethingElse', 'session disposed')]);
    await expect(t.sessions.deliver('s1', 'followup', 'hello')).rejects.toBeInstanceOf(DeliveryRejectedError);
  });

  it('a run that closed because the session completed is a disposed session, not retried', async () => {
    const t = fakeTemporal([closedUnderCall()], 'COMPLETED');
    await expect(t.sessions.deliver('s1', 'followup', 'hello')).rejects.toBeInstanceOf(SessionDisposedError);
    expect(t.attempts).toHaveLength(1);
  });

  it('a session that does not exist is not found', async () => {
    const t = fakeTemporal([closedUnderCall()], 'missing');
    await expect(t.sessions.deliver('s1', 'followup', 'hello')).rejects.toBeInstanceOf(SessionNotFoundError);
  });

  it('the session validator’s InvalidPayload becomes InvalidInputError naming the field', async () => {
    const t = fakeTemporal([
      refused('InvalidPayload', 'invalid deliver payload: message.content: at most 64 blocks'),
    ]);
    const err = await t.sessions.deliver('s1', 'followup', 'hello').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidInputError);
    expect((err as InvalidInputError).field).toBe('message.content');
    expect((err as InvalidInputError).message).toBe(
      'invalid deliver payload: message.content: at most 64 blocks',
    );
    expect(t.attempts).toHaveLength(1);
  });

  it('a refusal of another type is DeliveryRejectedError with the session’s message', async () => {
    const t = fakeTemporal([
      refused('UnknownTool', 'session names tool "rm_rf" that this worker does not register'),
    ]);
    await expect(t.sessions.deliver('s1', 'followup', 'hello')).rejects.toThrow(
      new DeliveryRejectedError('session names tool "rm_rf" that this worker does not register'),
    );
  });

  it('a signal to a session whose workflow completed is a disposed session', async () => {
    const t = fakeTemporal([], 'COMPLETED');
    await expect(t.sessions.followup('s1', 'late')).rejects.toBeInstanceOf(SessionDisposedError);
    expect(t.signals).toEqual(['followup']);
  });
});

describe('retry policy', () => {
  it('classifies by class, gRPC code and failure type', () => {
    expect(deliveryFailureKind(workflowTaskFailed())).toBe('transient');
    expect(deliveryFailureKind(updateAborted())).toBe('transient');
    expect(deliveryFailureKind(rpcFailure(3, 'workflow update was aborted'))).toBe('final');
    expect(deliveryFailureKind(new Error('workflow update was aborted'))).toBe('final');
    expect(deliveryFailureKind(refused('AcceptedUpdateCompletedWorkflow', 'x'))).toBe('run-closed');
    expect(deliveryFailureKind(refused('InvalidPayload', 'x'))).toBe('final');
  });

  it('doubles the wait up to its cap, with jitter in the upper half', () => {
    const policy = { attempts: 5, initialDelayMs: 100, maxDelayMs: 300 };
    expect([1, 2, 3, 4].map((n) => deliveryBackoffMs(policy, n, () => 0))).toEqual([50, 100, 150, 150]);
    expect([1, 2, 3, 4].map((n) => deliveryBackoffMs(policy, n, () => 1))).toEqual([100, 200, 300, 300]);
  });
});
