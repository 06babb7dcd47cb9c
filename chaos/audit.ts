/**
 * What a chaos scenario checks after the fact, from what the sessions recorded: the event log of each session
 * (lost and doubled `user/message`, `tool/result`, `assistant/message`; how turns ended; the invariant checker) and
 * the Temporal history of every run of its continue-as-new chain (workflow-task failures by cause, timeouts, size
 * against Temporal's limits). Reads only; the checks are counted, never thrown, so one run reports every figure.
 */
import type { Client } from '@temporalio/client';
import type { SessionClient } from '../src/client';
import { temporal } from '@temporalio/proto';
import type { SessionEvent } from '../src/domain/events';
import { checkLog } from '../src/domain/invariants';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const EventType = temporal.api.enums.v1.EventType;

/** Temporal's per-run history limits (server defaults: the run is terminated past the error limits). */
export const HISTORY_LIMITS = {
  errorEvents: 51_200,
  errorBytes: 50 * 1024 * 1024,
  warnEvents: 10_240,
  warnBytes: 10 * 1024 * 1024,
} as const;

export interface Triple {
  userMessage: number;
  toolResult: number;
  assistantMessage: number;
}

const zero = (): Triple => ({ userMessage: 0, toolResult: 0, assistantMessage: 0 });

export interface LogAudit {
  events: number;
  /** Events of each kind that count as messages. */
  counted: Triple;
  lost: Triple;
  doubled: Triple;
  turns: number;
  /** `completed`, `error:MODEL_FAILED`, `aborted:user`, … */
  turnEnds: Record<string, number>;
  /** tool/result error codes. */
  toolErrors: Record<string, number>;
  /** Invariant problems (assertLogValid), at most a few. */
  problems: string[];
}

/**
 * Audits one session log, read once the session is idle with an empty inbox (the scenarios end every session with
 * a last follow-up, so contexts parked by the last turn have entered).
 * - `expectedIds`: message ids the caller had acknowledged (or retried until acknowledged): each must enter as
 *   exactly one `user/message`.
 * - Tool contexts: each successful call of `sleep` with `context`, `emit_context` and `inject_self` owes the session
 *   that many messages with the source `{kind:'tool', callId}`; each `tool/call` owes one `tool/result`; each step of
 *   a turn that did not end in error owes one `assistant/message`.
 */
export function auditLog(events: readonly SessionEvent[], expectedIds: readonly string[]): LogAudit {
  const lost = zero();
  const doubled = zero();
  const counted = zero();
  const turnEnds: Record<string, number> = {};
  const toolErrors: Record<string, number> = {};
  const entered = new Map<string, number>();
  const contextsByCall = new Map<string, number>();
  const owedByCall = new Map<string, number>();
  const results = new Map<string, number>();
  const assistants = new Map<string, number>();
  const steps: { key: string; turn: number }[] = [];
  const errorTurns = new Set<number>();
  let turns = 0;
  for (const e of events) {
    switch (e.type) {
      case 'user/message': {
        counted.userMessage++;
        const { id, source } = e.data.message;
        entered.set(id, (entered.get(id) ?? 0) + 1);
        if (source.kind === 'tool' && typeof source.callId === 'string')
          contextsByCall.set(source.callId, (contextsByCall.get(source.callId) ?? 0) + 1);
        break;
      }
      case 'tool/call':
        owedByCall.set(e.data.callId, contextsOwed(e.data.name, e.data.arguments));
        break;
      case 'tool/result':
        counted.toolResult++;
        results.set(e.data.callId, (results.get(e.data.callId) ?? 0) + 1);
        if (e.data.error) {
          toolErrors[e.data.error.code] = (toolErrors[e.data.error.code] ?? 0) + 1;
          owedByCall.set(e.data.callId, 0); // a failed call owes no context
        }
        break;
      case 'assistant/message': {
        counted.assistantMessage++;
        const key = `${e.data.turn}.${e.data.step}`;
        assistants.set(key, (assistants.get(key) ?? 0) + 1);
        break;
      }
      case 'step/start':
        steps.push({ key: `${e.data.turn}.${e.data.step}`, turn: e.data.turn });
        break;
      case 'turn/end': {
        turns++;
        const r = e.data.reason;
        const label =
          r.kind === 'error'
            ? `error:${r.error.code}`
            : r.kind === 'aborted'
              ? `aborted:${r.reason.kind}`
              : r.kind;
        turnEnds[label] = (turnEnds[label] ?? 0) + 1;
        if (r.kind !== 'completed') errorTurns.add(e.data.turn);
        break;
      }
      case 'agent/inbox/spliced':
        break;
      default:
        break;
    }
  }
  for (const id of expectedIds) {
    const n = entered.get(id) ?? 0;
    if (n === 0) lost.userMessage++;
    if (n > 1) doubled.userMessage += n - 1;
  }
  for (const [callId, owed] of owedByCall) {
    const got = contextsByCall.get(callId) ?? 0;
    if (got > owed) doubled.userMessage += got - owed;
    if (got < owed) lost.userMessage += owed - got;
  }
  for (const [callId] of owedByCall) {
    const n = results.get(callId) ?? 0;
    if (n === 0) lost.toolResult++;
    if (n > 1) doubled.toolResult += n - 1;
  }
  for (const { key, turn } of steps) {
    const n = assistants.get(key) ?? 0;
    if (n === 0 && !errorTurns.has(turn)) lost.assistantMessage++;
    if (n > 1) doubled.assistantMessage += n - 1;
  }
  const check = checkLog(events);
  return {
    events: events.length,
    counted,
    lost,
    doubled,
    turns,
    turnEnds,
    toolErrors,
    problems: check.ok ? [] : check.problems.slice(0, 5),
  };
}

/** How many messages a call of the testing toolset sends into its session (contexts and self-injects). */
export function contextsOwed(name: string, args: Record<string, unknown> | null): number {
  if (!args) return 0;
  switch (name) {
    case 'sleep':
      return typeof args.context === 'string' ? 1 : 0;
    case 'emit_context':
      return Array.isArray(args.contexts) ? args.contexts.length : 0;
    case 'inject_self':
    case 'steer_self':
      return 1;
    default:
      return 0;
  }
}

/** Sums audits (and the per-label maps). */
export function sumAudits(audits: readonly LogAudit[]) {
  const total = {
    events: 0,
    counted: zero(),
    lost: zero(),
    doubled: zero(),
    turns: 0,
    turnEnds: {} as Record<string, number>,
    toolErrors: {} as Record<string, number>,
    invalidLogs: 0,
    problems: [] as string[],
  };
  for (const a of audits) {
    total.events += a.events;
    total.turns += a.turns;
    for (const k of ['userMessage', 'toolResult', 'assistantMessage'] as const) {
      total.counted[k] += a.counted[k];
      total.lost[k] += a.lost[k];
      total.doubled[k] += a.doubled[k];
    }
    for (const [k, v] of Object.entries(a.turnEnds)) total.turnEnds[k] = (total.turnEnds[k] ?? 0) + v;
    for (const [k, v] of Object.entries(a.toolErrors)) total.toolErrors[k] = (total.toolErrors[k] ?? 0) + v;
    if (a.problems.length) {
      total.invalidLogs++;
      total.problems.push(...a.problems.slice(0, 2));
    }
  }
  total.problems = total.problems.slice(0, 10);
  return total;
}

export interface HistoryAudit {
  runs: number;
  /** WorkflowTaskFailed events by cause (enum name without its prefix). */
  workflowTaskFailures: Record<string, number>;
  /** First failure message of each cause, for the report. */
  failureSamples: Record<string, string>;
  /** WorkflowTaskTimedOut events by timeout type (sticky schedule-to-start after a worker is lost, …). */
  workflowTaskTimeouts: Record<string, number>;
  /** Activity timeouts by type (a lost worker shows up as HEARTBEAT). */
  activityTimeouts: Record<string, number>;
  maxRunEvents: number;
  maxRunBytes: number;
  /** Runs past Temporal's warning / error limits. */
  runsOverWarn: number;
  runsOverError: number;
}

export function emptyHistoryAudit(): HistoryAudit {
  return {
    runs: 0,
    workflowTaskFailures: {},
    failureSamples: {},
    workflowTaskTimeouts: {},
    activityTimeouts: {},
    maxRunEvents: 0,
    maxRunBytes: 0,
    runsOverWarn: 0,
    runsOverError: 0,
  };
}

const causeName = (cause: number | null | undefined) =>
  (temporal.api.enums.v1.WorkflowTaskFailedCause[cause ?? 0] ?? String(cause)).replace(
    'WORKFLOW_TASK_FAILED_CAUSE_',
    '',
  );
const timeoutName = (t: number | null | undefined) =>
  (temporal.api.enums.v1.TimeoutType[t ?? 0] ?? String(t)).replace('TIMEOUT_TYPE_', '');

/**
 * Reads the history of every run of a session's chain, newest first (each run's start names the run it continued),
 * and adds what it finds to `into`.
 */
export async function auditHistories(client: Client, workflowId: string, into: HistoryAudit): Promise<void> {
  let runId: string | undefined = (await client.workflow.getHandle(workflowId).describe()).runId;
  const seen = new Set<string>();
  while (runId && !seen.has(runId)) {
    seen.add(runId);
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    const events: HistoryEvent[] = history.events ?? [];
    const bytes = temporal.api.history.v1.History.encode(history).finish().length;
    into.runs++;
    into.maxRunEvents = Math.max(into.maxRunEvents, events.length);
    into.maxRunBytes = Math.max(into.maxRunBytes, bytes);
    if (events.length > HISTORY_LIMITS.warnEvents || bytes > HISTORY_LIMITS.warnBytes) into.runsOverWarn++;
    if (events.length > HISTORY_LIMITS.errorEvents || bytes > HISTORY_LIMITS.errorBytes) into.runsOverError++;
    for (const e of events) {
      if (e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED) {
        const a = e.workflowTaskFailedEventAttributes;
        const cause = causeName(a?.cause);
        into.workflowTaskFailures[cause] = (into.workflowTaskFailures[cause] ?? 0) + 1;
        into.failureSamples[cause] ??= (a?.failure?.message ?? '').slice(0, 300);
      } else if (e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT) {
        const t = timeoutName(e.workflowTaskTimedOutEventAttributes?.timeoutType);
        into.workflowTaskTimeouts[t] = (into.workflowTaskTimeouts[t] ?? 0) + 1;
      } else if (e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT) {
        const f = e.activityTaskTimedOutEventAttributes?.failure;
        const t = timeoutName(f?.timeoutFailureInfo?.timeoutType);
        into.activityTimeouts[t] = (into.activityTimeouts[t] ?? 0) + 1;
      }
    }
    runId = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
  }
}

/**
 * Workflow-task failure causes that are Temporal's normal answer to a race, not a failure of the code: the server
 * refuses a task that would close the run (continue-as-new) while new signals or updates arrived, and the workflow
 * runs again with them.
 */
export const BENIGN_FAILURE_CAUSES: readonly string[] = ['UNHANDLED_COMMAND'];

/** Workflow-task failures other than the benign ones. */
export function harmfulFailures(history: HistoryAudit): number {
  return Object.entries(history.workflowTaskFailures)
    .filter(([cause]) => !BENIGN_FAILURE_CAUSES.includes(cause))
    .reduce((n, [, count]) => n + count, 0);
}

/**
 * Reads one session for the report: the history of every run (always readable), then its log (which needs a worker
 * to answer queries, so a session whose workflow task keeps failing cannot be read: `error` says why).
 */
export async function readSession(
  sessions: SessionClient,
  client: Client,
  id: string,
  into: HistoryAudit,
): Promise<{ events: SessionEvent[] } | { error: string }> {
  await auditHistories(client, id, into);
  try {
    return { events: await sessions.allEvents(id) };
  } catch (err) {
    return { error: `${id}: ${(err as Error).message}`.slice(0, 300) };
  }
}

export function totalOf(counts: Record<string, number>): number {
  return Object.values(counts).reduce((a, b) => a + b, 0);
}
