/**
 * Deliveries that wait for their turn (`deliver` with `wait`): each completes when its message's turn has ended, or
 * fails with TurnWaitTimeout. While a waiter waits for a later turn the session does not continue as new (the quiet
 * point comes again after the next turn), so a wait never spans two runs. Deterministic (workflow sandbox).
 */
import { ApplicationFailure, condition } from '@temporalio/workflow';
import { FailureTypes } from '../contract';
import type { SessionDriver } from '../domain/driver';
import type { DeliveryReceipt } from '../domain/wire';

export class TurnWaiters {
  /** Message ids of deliveries waiting for their message's turn to end (an id may be waited on twice). */
  private readonly waiting: string[] = [];

  constructor(private readonly driver: SessionDriver) {}

  /** Whether a delivery still waits for a turn that has not ended (then this run does not continue as new). */
  waitingForLaterTurn(): boolean {
    return this.waiting.some((id) => this.driver.waitOutcome(id) === undefined);
  }

  /** Completes `receipt` with its turn's outcome once the turn has ended; fails after `timeoutMs`. */
  async waitForTurn(receipt: DeliveryReceipt, timeoutMs: number): Promise<DeliveryReceipt> {
    this.waiting.push(receipt.messageId);
    try {
      // The timer's summary names it on the Temporal UI's timeline (metadata only: replay does not compare it).
      const ended = await condition(
        () => this.driver.waitOutcome(receipt.messageId) !== undefined,
        timeoutMs,
        {
          summary: `wait for the turn of ${receipt.messageId}`,
        },
      );
      if (!ended)
        throw ApplicationFailure.create({
          type: FailureTypes.TurnWaitTimeout,
          nonRetryable: true,
          message: `message ${receipt.messageId} was accepted, but its turn did not end within ${timeoutMs} ms`,
          details: [receipt],
        });
      return { ...receipt, outcome: this.driver.waitOutcome(receipt.messageId)! };
    } finally {
      this.waiting.splice(this.waiting.indexOf(receipt.messageId), 1);
    }
  }
}
