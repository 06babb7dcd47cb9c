/**
 * The session's signal, update and query handlers, registered under the names of the one table of wire names
 * (../domain/wireNames.ts, through ../contract's handles) with the descriptions the Temporal UI shows. Each handler
 * delegates to the driver in a line or two; refusals become non-retryable ApplicationFailures of their failure type.
 * The `deliver` update checks the session's tool and hook names first (./names.ts) and can wait for its message's
 * turn (./waiters.ts). Deterministic (workflow sandbox).
 */
import { ApplicationFailure, patched, setDefaultSignalHandler, setHandler } from '@temporalio/workflow';
import {
  approveUpdate,
  budgetUpdate,
  cancelSignal,
  configQuery,
  deliverUpdate,
  disposeSignal,
  eventsQuery,
  followupSignal,
  injectSignal,
  modelContextQuery,
  stateQuery,
  steerSignal,
  transcriptQuery,
  upgradeSignal,
} from '../contract';
import { SessionRefusal, type SessionDriver } from '../domain/driver';
import { eventsPage, modelContextPage } from '../domain/pages';
import { isSignalName, wireDescription, type WireName } from '../domain/wireNames';
import { DEFAULT_WAIT_MS, type DeliverInput, type DeliveryReceipt, type SessionConfig } from '../domain/wire';
import { throwIfFailed, type SessionNames } from './names';
import type { TurnTracing } from './telemetry';
import type { TurnWaiters } from './waiters';

/** The wire's signals, in the order they are registered (the table's). */
const SIGNALS = [
  followupSignal,
  steerSignal,
  injectSignal,
  cancelSignal,
  disposeSignal,
  upgradeSignal,
] as const;

/** Whether `name` is one of the wire's signals (a refused signal's metric tag; any other name is the sender's). */
export function isWireSignal(name: string): boolean {
  return isSignalName(name);
}

function described(def: { name: string }): { description: string } {
  return { description: wireDescription(def.name as WireName) };
}

/** Marks runs whose `deliver` update checks the session's tool and hook names before accepting (rule 5). */
const DELIVER_CHECKS_CONFIG = 'deliver-checks-config';

/** What the handlers read besides the driver. */
export interface HandlerContext {
  driver: SessionDriver;
  /** The config the session was started with. */
  config: SessionConfig;
  names: SessionNames;
  waiters: TurnWaiters;
  tracing: TurnTracing;
  /** Where this run's log starts, and the run that holds what came before. */
  firstSeq: number;
  previousRunId: string | undefined;
}

export function registerHandlers(ctx: HandlerContext): void {
  const { driver, tracing, previousRunId } = ctx;
  // One handler for every signal, registered first: Temporal hands signals that arrived before the first workflow
  // task to specific handlers one name at a time, which would put a followup before an inject sent earlier.
  // The default handler receives them all in arrival order (rule 9).
  const signal = (name: string, payload: unknown) => {
    tracing.noteDelivery((payload as { message?: { id?: unknown } } | undefined)?.message?.id);
    driver.signal(name, payload);
  };
  setDefaultSignalHandler((name: string, ...args: unknown[]) => signal(name, args[0]));
  // Then the wire's signals by name, with their descriptions (the Temporal UI lists them). Registered after the
  // default handler has taken every signal that arrived before: nothing is buffered, so order is kept.
  for (const def of SIGNALS) setHandler(def, (payload: unknown) => signal(def.name, payload), described(def));
  setHandler(deliverUpdate, (raw) => deliver(ctx, raw), {
    validator: (raw: unknown) => asFailure(() => driver.validateDeliver(raw)),
    ...described(deliverUpdate),
  });
  setHandler(approveUpdate, (raw) => asFailure(() => driver.approve(raw)), {
    validator: (raw: unknown) => void asFailure(() => driver.validateApprove(raw)),
    ...described(approveUpdate),
  });
  setHandler(budgetUpdate, (raw) => asFailure(() => driver.budget(raw)), {
    validator: (raw: unknown) => void asFailure(() => driver.validateBudget(raw)),
    ...described(budgetUpdate),
  });
  setHandler(
    eventsQuery,
    (raw) =>
      eventsPage(raw, {
        log: driver.core.log,
        firstSeq: ctx.firstSeq,
        lastSeq: driver.core.lastSeq,
        ...(previousRunId ? { previousRunId } : {}),
      }),
    described(eventsQuery),
  );
  setHandler(configQuery, () => withoutSnapshot(ctx.config), described(configQuery));
  setHandler(stateQuery, () => driver.stateView(), described(stateQuery));
  setHandler(
    transcriptQuery,
    () => ({
      ...(ctx.config.system !== undefined ? { system: ctx.config.system } : {}),
      messages: driver.core.transcript.entries,
      base: driver.core.transcript.base,
      ...(previousRunId ? { previousRunId } : {}),
    }),
    described(transcriptQuery),
  );
  setHandler(
    modelContextQuery,
    (range) => modelContextPage(range, driver.core.transcript, previousRunId),
    described(modelContextQuery),
  );
}

/** A fork's config names its source without the snapshot (which stays in its first run's history). */
export function withoutSnapshot(config: SessionConfig): SessionConfig {
  const { fork, ...rest } = config;
  return fork ? { ...rest, fork: { from: fork.from, throughSeq: fork.throughSeq } } : rest;
}

/**
 * Accepts a delivery. The first delivery of a run whose session names tools or hooks waits for the worker to
 * resolve them, and an unknown name rejects the update naming it ("told at once").
 */
async function deliver(ctx: HandlerContext, raw: unknown): Promise<DeliveryReceipt> {
  if (ctx.names.unchecked() && patched(DELIVER_CHECKS_CONFIG)) {
    for (const r of await ctx.names.all()) throwIfFailed(r);
  }
  const receipt = asFailure(() => ctx.driver.deliver(raw));
  if (!receipt.duplicate) ctx.tracing.noteDelivery(receipt.messageId);
  const wait = (raw as DeliverInput).wait;
  return wait ? ctx.waiters.waitForTurn(receipt, wait.timeoutMs ?? DEFAULT_WAIT_MS) : receipt;
}

/** Runs `body`; a SessionRefusal becomes a non-retryable ApplicationFailure of its failure type. */
function asFailure<T>(body: () => T): T {
  try {
    return body();
  } catch (err) {
    if (err instanceof SessionRefusal)
      throw ApplicationFailure.create({ type: err.failureType, message: err.message, nonRetryable: true });
    throw err;
  }
}
