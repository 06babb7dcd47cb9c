/**
 * The log checker's rules inside one step (./invariants.ts): the assistant message's tool calls start once each, after
 * their approval when they asked for one; results come once per call, in the model's call order, after a delegate
 * call's sub-session ended, and carry the right error when the call was not approved (rules 18, 29); a compaction
 * comes before the step's request. Pure.
 */
import type { EventOf, ToolCallInfo } from './events';
import { assertNever } from './util';

/** The error a call's result must carry when its approval was not given (rule 29 for a cancel). */
const WITHOUT_APPROVAL: Record<string, string> = {
  caller: 'DENIED',
  timeout: 'APPROVAL_TIMEOUT',
  cancel: 'ABORTED_BEFORE_DISPATCH',
};

export interface StepModel {
  turn: number;
  step: number;
  /** Callids the step's assistant/message requested, in the model's order (undefined before it). */
  requested?: string[];
  /** Started calls in start order, and whether each has its result. */
  calls: Map<string, boolean>;
  /** Calls that asked for approval: undefined while waiting, then the decision and who took it. */
  approvals: Map<string, { decision: string; by: string } | undefined>;
  /** Delegate calls whose sub-session started, and whether it has ended. */
  subsessions: Map<string, boolean>;
}

/** The events that belong to an open step and are checked against it alone. */
export type StepEvent = EventOf<
  | 'assistant/message'
  | 'tool/call'
  | 'tool/approval-requested'
  | 'tool/approval-resolved'
  | 'tool/result'
  | 'compaction/summary'
  | 'subsession/started'
  | 'subsession/ended'
>;

/** Checks one event of the open step against it and commits it; `report` gets each problem. */
export function checkStepEvent(step: StepModel, event: StepEvent, report: (detail: string) => void): void {
  switch (event.type) {
    case 'assistant/message': {
      if (step.requested) return report(`repeated in step ${step.turn}.${step.step}`);
      step.requested = (event.data.message.toolCalls ?? []).map((c: ToolCallInfo) => c.callId);
      return;
    }
    case 'tool/call': {
      const { callId } = event.data;
      if (!step.requested) return report(`${callId} before the step's assistant/message`);
      if (!step.requested.includes(callId))
        return report(`${callId} was not requested by the step's assistant/message`);
      if (step.calls.has(callId)) return report(`${callId} repeated in step ${step.turn}.${step.step}`);
      if (step.approvals.has(callId) && step.approvals.get(callId) === undefined)
        report(`${callId} before its approval was resolved`);
      step.calls.set(callId, false);
      return;
    }
    case 'tool/approval-requested': {
      const { callId } = event.data;
      if (!step.requested?.includes(callId))
        return report(`${callId} was not requested by the step's assistant/message`);
      if (step.calls.has(callId) || step.approvals.has(callId))
        return report(`${callId} after its call started or its approval was requested`);
      step.approvals.set(callId, undefined);
      return;
    }
    case 'tool/approval-resolved': {
      const { callId, decision, by } = event.data;
      if (!step.approvals.has(callId))
        return report(`${callId} without a tool/approval-requested in this step`);
      if (step.approvals.get(callId) !== undefined) return report(`${callId} resolved twice`);
      step.approvals.set(callId, { decision, by });
      return;
    }
    case 'tool/result': {
      const { callId } = event.data;
      const done = step.calls.get(callId);
      if (done === undefined) return report(`${callId} without a tool/call in this step`);
      if (done) return report(`${callId} repeated: at most one result per call`);
      const order = step.requested ?? [...step.calls.keys()];
      const owed = order.slice(0, order.indexOf(callId)).filter((id) => step.calls.get(id) === false);
      if (owed.length)
        report(`${callId} before ${owed.join(', ')}: results commit in the model's call order`);
      if (step.subsessions.get(callId) === false) report(`${callId} before its subsession/ended`);
      const approval = step.approvals.get(callId);
      const expected =
        approval && approval.decision !== 'approve' ? WITHOUT_APPROVAL[approval.by] : undefined;
      if (expected && event.data.error?.code !== expected)
        report(`${callId} was not approved (${approval!.by}): expected error ${expected}`);
      step.calls.set(callId, true);
      return;
    }
    case 'compaction/summary': {
      if (step.requested) report(`after the step's assistant/message: it comes before the request`);
      return;
    }
    case 'subsession/started': {
      const { callId } = event.data;
      if (step.calls.get(callId) !== false)
        return report(`${callId} is not a started call without its result`);
      if (step.subsessions.has(callId)) return report(`${callId} started a sub-session twice`);
      step.subsessions.set(callId, false);
      return;
    }
    case 'subsession/ended': {
      const { callId } = event.data;
      if (step.subsessions.get(callId) !== false)
        return report(`${callId} without a subsession/started that has not ended`);
      step.subsessions.set(callId, true);
      return;
    }
    default:
      return assertNever(event, 'event');
  }
}
