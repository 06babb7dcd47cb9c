/**
 * What the Temporal UI shows of a session while it runs (the workflow's "current details", Temporal markdown):
 * status, turn and step, what the loop waits for, pending lanes, the last turn's error, usage so far. Built from the
 * core's state at each effect; pure, so the workflow and tests share it.
 */
import type { SessionCore } from './session';
import { turnEndText } from './turnEnd';

/** What the loop is waiting for at this moment. */
export type Waiting =
  | { kind: 'work' }
  | { kind: 'names' }
  | { kind: 'pre-step' }
  | { kind: 'model'; model: string }
  | { kind: 'tools'; names: readonly string[] }
  | { kind: 'approval-check' }
  | { kind: 'budget' }
  | { kind: 'continue-as-new' };

export function currentDetails(core: SessionCore, waiting: Waiting): string {
  const view = core.stateView();
  const head =
    view.status === 'running'
      ? `**running** · turn ${view.turn} · step ${view.step}`
      : `**${view.status}** · ${view.turn} turn${view.turn === 1 ? '' : 's'}`;
  const approvals = view.approvals;
  const idleBatch = waiting.kind === 'tools' && waiting.names.length === 0 && approvals.length > 0;
  const lines = [`${head} · ${idleBatch ? 'waiting for approval' : describeWaiting(waiting)}`];
  if (approvals.length > 0)
    lines.push(`awaiting approval: ${approvals.map((a) => `${a.name} #${a.callId}`).join(', ')}`);
  if (view.budget?.paused) {
    const { used, limits } = view.budget;
    const parts = (Object.keys(limits) as (keyof typeof limits)[]).map(
      (k) => `${k} ${used[k]} of ${limits[k]}`,
    );
    lines.push(`budget: ${parts.join(' · ')}`);
  }
  const { nextTurn, nextStep } = view.pending;
  if (nextTurn.length + nextStep.length > 0)
    lines.push(`pending: ${nextTurn.length} for the next turn · ${nextStep.length} for the next step`);
  const last = core.lastTurnEnd();
  if (last && last.reason.kind !== 'completed')
    lines.push(`last turn (${last.turn}): ${turnEndText(last.reason, 200)}`);
  if (view.usage.steps > 0)
    lines.push(`usage: ${view.usage.inputTokens} input · ${view.usage.outputTokens} output tokens`);
  if (view.refused > 0) lines.push(`refused payloads: ${view.refused}`);
  return lines.join('\n');
}

function describeWaiting(w: Waiting): string {
  switch (w.kind) {
    case 'work':
      return 'waiting for a message';
    case 'names':
      return "checking the session's tools and hooks";
    case 'pre-step':
      return 'running pre-step listeners';
    case 'model':
      return `waiting for the model (${w.model})`;
    case 'tools':
      return w.names.length ? `running tools: ${w.names.join(', ')}` : 'running tools';
    case 'approval-check':
      return 'asking the worker which tool calls need approval';
    case 'budget':
      return 'waiting at its budget for a decision (`budget` update: extend or deny)';
    case 'continue-as-new':
      return 'continuing as new';
  }
}
