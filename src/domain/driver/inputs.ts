/**
 * Input checks: every payload a caller sends is read the same way — an undecodable payload first, then its schema,
 * naming the field — and refused as data (a signal: counted, rule 5) or as a `SessionRefusal` (an update's
 * validator). The checks that need the session's state (an approval waits, the session waits at its budget) are
 * here too, and the one way a delivered message is built. Pure.
 */
import type { z } from 'zod';
import { FailureTypes } from '../codes';
import { makeUserMessage, USER_SOURCE, type UserMessage } from '../messages';
import type { SessionCore } from '../session';
import { sourceWithRefs } from '../sessionRefs';
import { describeZodIssue } from '../util';
import {
  budgetBreaches,
  budgetFloor,
  undecodableReason,
  type ApproveInput,
  type BudgetDecision,
  type LaneMessageInput,
} from '../wire';

/** A caller's input the session refuses; `failureType` is the ApplicationFailure type the update path throws. */
export class SessionRefusal extends Error {
  override name = 'SessionRefusal';
  constructor(
    readonly failureType:
      | typeof FailureTypes.InvalidPayload
      | typeof FailureTypes.SessionDisposed
      | typeof FailureTypes.ApprovalRefused
      | typeof FailureTypes.BudgetRefused,
    message: string,
  ) {
    super(message);
  }
}

/** A payload read against its schema: the data, or why it is refused (the undecodable reason, else the field). */
export function readPayload<S extends z.ZodType>(
  schema: S,
  raw: unknown,
): { ok: true; data: z.output<S> } | { ok: false; reason: string } {
  const undecodable = undecodableReason(raw);
  if (undecodable) return { ok: false, reason: undecodable };
  const parsed = schema.safeParse(raw);
  if (!parsed.success) return { ok: false, reason: describeZodIssue(parsed.error.issues, 'payload') };
  return { ok: true, data: parsed.data };
}

/** An update's payload read against its schema; throws `invalid <name> payload: …` (InvalidPayload). */
export function parseUpdate<S extends z.ZodType>(name: string, schema: S, raw: unknown): z.output<S> {
  const read = readPayload(schema, raw);
  if (!read.ok) throw invalid(name, read.reason);
  return read.data;
}

function invalid(name: string, reason: string): SessionRefusal {
  return new SessionRefusal(FailureTypes.InvalidPayload, `invalid ${name} payload: ${reason}`);
}

/** The message a delivery (a lane signal or `deliver`) enters: a direct message's references travel in its source. */
export function deliveredUserMessage(input: LaneMessageInput, newId: () => string): UserMessage {
  return makeUserMessage({ ...input, source: sourceWithRefs(input) }, USER_SOURCE, newId);
}

/**
 * Checks an `approve` input against the session: the call must wait for a decision, or have been resolved with the
 * same one (then the update answers `duplicate`). Throws a SessionRefusal naming the call.
 */
export function checkApprove(core: SessionCore, input: ApproveInput): ApproveInput & { duplicate: boolean } {
  const approval = core.approvalOf(input.callId);
  if (approval?.status === 'pending') return { ...input, duplicate: false };
  if (approval?.status === 'resolved' && approval.by === 'caller' && approval.decision === input.decision)
    return { ...input, duplicate: true };
  const pending = core.pendingApprovals().map((a) => a.callId);
  const waiting = pending.length
    ? `calls waiting: ${pending.join(', ')}`
    : 'no call is waiting for a decision';
  if (approval?.status === 'resolved')
    throw new SessionRefusal(
      FailureTypes.ApprovalRefused,
      `call "${input.callId}" was already resolved (${approval.decision} by ${approval.by}); ${waiting}`,
    );
  throw new SessionRefusal(
    FailureTypes.ApprovalRefused,
    `call "${input.callId}" is not waiting for approval in this session; ${waiting}`,
  );
}

/**
 * Checks a `budget` decision against the session: it must wait at its budget, and an extension must cover what is
 * used, so the step can run (a limit that does not is refused naming it). Throws a SessionRefusal.
 */
export function checkBudget(core: SessionCore, input: BudgetDecision): BudgetDecision {
  if (!core.budgetPaused)
    throw new SessionRefusal(
      FailureTypes.BudgetRefused,
      'the session is not waiting at its budget (a decision is taken only after budget/exceeded)',
    );
  if (input.decision === 'extend') {
    const used = core.budgetUsed();
    const limits = { ...core.budgetLimits, ...input.limits };
    const still = budgetBreaches(used, limits);
    if (still.length) {
      const k = still[0]!;
      const need = budgetFloor(k, used);
      throw invalid(
        'budget',
        `limits.${k}: ${limits[k]} does not let the step run (used ${used[k]}; give at least ${need})`,
      );
    }
  }
  return input;
}
