/**
 * The tool effects of a turn's batch: `start-tool` starts a tool activity (or a sub-session, ./delegate.ts) and
 * `tool-settled` answers with the next call to settle, or with `approval` when an approval was resolved (or a cancel
 * came) meanwhile. Tool activities are asked to cancel and awaited until they settle (WAIT_CANCELLATION_COMPLETED);
 * a settled call's post-tool hooks run outside the turn's scope, so a cancelled turn still commits real results
 * (rule 29). Deterministic (workflow sandbox).
 */
import { CancellationScope, isCancellation, type WorkflowInfo } from '@temporalio/workflow';
import { ErrorCodes } from '../contract';
import type { BudgetUsed } from '../domain/budget';
import type { Answer, AnswerMap, ToolExecResult, ToolStart } from '../domain/effects';
import type { TurnEndReason } from '../domain/events';
import { failedResult } from '../domain/toolBatch';
import { applyPostToolHooks } from '../domain/waterfall';
import { toolActivities } from './activities';
import { delegate } from './delegate';
import { errorInfo } from './errors';
import { postToolHookCall } from './hooks';

type Settled = Extract<AnswerMap['tool-settled'], { kind: 'settled' }>;

/** The running turn's tool calls (one per interpreter; cleared when a turn opens). */
export class ToolCalls {
  /** Started tool calls of the running batch that have not been reported as settled. */
  private readonly unsettled = new Map<number, Promise<Settled>>();
  /** Names of the unsettled calls, by index (the current details list them). */
  private readonly running = new Map<number, string>();
  /** Set when an approval was resolved (or a cancel came) and the tool batch has not been told yet. */
  private approvalWoken = false;
  /** Wakes a tool batch that waits (set while it waits). */
  private wakeBatch: (() => void) | undefined;

  constructor(private readonly info: WorkflowInfo) {}

  /** Forgets the calls of the previous turn. */
  clear(): void {
    this.unsettled.clear();
    this.running.clear();
  }

  /** Names of the calls that have not settled. */
  runningNames(): string[] {
    return [...this.running.values()];
  }

  /** Wakes the tool batch: an approval was resolved (or a cancel resolves them all). */
  approvalResolved(): void {
    this.approvalWoken = true;
    this.wakeBatch?.();
  }

  /**
   * Starts a tool activity; when it settles (even after a cancel) its post-tool hooks run, not cancellable. The
   * settled answer says whether the content that commits is the activity's own result (then history holds it).
   */
  start(start: ToolStart): void {
    const { call, index } = start;
    /** The activity's own result, once it completed. */
    let own: ToolExecResult | undefined;
    /** A delegate call: how its sub-session ended. */
    let subsession: { reason: TurnEndReason; used?: BudgetUsed } | undefined;
    const performed: Promise<ToolExecResult> = start.delegate
      ? delegate(this.info, start.delegate).then(({ result, reason, used }) => {
          subsession = { reason, ...(used ? { used } : {}) };
          return result;
        })
      : toolActivities.executeTool
          .executeWithOptions({ summary: `tool ${call.name} #${call.callId}` }, [
            {
              sessionId: this.info.workflowId,
              turn: start.turn,
              step: start.step,
              callId: call.callId,
              name: call.name,
              arguments: call.arguments,
            },
          ])
          .then(
            (r) => (own = r),
            (err: unknown): ToolExecResult =>
              failedResult(
                isCancellation(err)
                  ? { code: ErrorCodes.Aborted, message: 'the tool call was cancelled while it ran' }
                  : errorInfo(err, ErrorCodes.ToolFailed),
              ),
          );
    const settled = performed
      .then((result) =>
        start.postToolHooks.length === 0
          ? result
          : CancellationScope.nonCancellable(() =>
              applyPostToolHooks(start.postToolHooks, result, (hook, r) =>
                postToolHookCall(hook, { sessionId: this.info.workflowId, ...start }, r),
              ),
            ),
      )
      .then((result) => ({
        kind: 'settled' as const,
        index,
        result,
        held: own !== undefined && result.content === own.content,
        ...(subsession ? { subsession } : {}),
      }));
    this.unsettled.set(index, settled);
    this.running.set(index, call.name);
  }

  /** The next settled call, or `approval` when an approval was resolved (or a cancel came) meanwhile. */
  async nextSettled(): Promise<Answer> {
    if (!this.approvalWoken) {
      const woken = new Promise<'woken'>((resolve) => (this.wakeBatch = () => resolve('woken')));
      const next = await Promise.race([...this.unsettled.values(), woken]);
      this.wakeBatch = undefined;
      if (next !== 'woken') {
        this.unsettled.delete(next.index);
        this.running.delete(next.index);
        return next;
      }
    }
    this.approvalWoken = false;
    return { kind: 'approval' };
  }
}
