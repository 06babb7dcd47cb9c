/**
 * Schedules of followups (`SessionClient.schedules`, `agent-sessions schedule`): a Temporal Schedule whose action
 * starts a `scheduledFollowup` workflow (src/workflows/scheduled.ts) at every firing, which delivers the schedule's
 * prompt to its session — started when absent — with the firing's workflow id as the message id, so a retried or
 * repeated firing is a duplicate, never a second turn. Overlap and catch-up are Temporal's schedule policies.
 */
import {
  ScheduleNotFoundError,
  ScheduleOverlapPolicy,
  type Client,
  type ScheduleDescription,
  type ScheduleSummary,
} from '@temporalio/client';
import { z } from 'zod';
import { SCHEDULED_FOLLOWUP_WORKFLOW_TYPE } from '../contract';
import {
  SCHEDULE_WORKFLOW_ID_PREFIX,
  ScheduledFollowupSchema,
  ScheduleIdSchema,
  SessionConfigSchema,
  SessionIdSchema,
  type ScheduledFollowup,
} from '../domain/wire';
import { invalidInput } from './errors';

export const OVERLAP_POLICIES = [
  'skip',
  'buffer_one',
  'buffer_all',
  'cancel_other',
  'terminate_other',
  'allow_all',
] as const;
export type OverlapPolicy = (typeof OVERLAP_POLICIES)[number];

/** Shortest interval between firings: a minute would do for most, a second is what tests and demos need. */
export const MIN_SCHEDULE_EVERY_MS = 1000;

export const FollowupScheduleSchema = z
  .strictObject({
    sessionId: SessionIdSchema,
    /** The prompt each firing sends. */
    content: ScheduledFollowupSchema.shape.content,
    /** The config a firing starts the session with when it does not exist. */
    config: SessionConfigSchema.optional(),
    /** Fire every this many milliseconds… */
    everyMs: z
      .number()
      .int()
      .min(MIN_SCHEDULE_EVERY_MS, `at least ${MIN_SCHEDULE_EVERY_MS} ms`)
      .max(366 * 24 * 3_600_000, 'at most a year')
      .optional(),
    /** …or on this cron expression (Temporal's: five fields, or six with seconds, or @daily and the like). */
    cron: z.string().min(1, 'must not be empty').max(256, 'at most 256 characters').optional(),
    /** What a firing does while the one before it still runs (default skip). */
    overlap: z.enum(OVERLAP_POLICIES).optional(),
    /** How late a missed firing (server down) may still run (default Temporal's one year; at least 10 s). */
    catchupWindowMs: z.number().int().min(10_000, 'at least 10000 ms').optional(),
    /** Create it paused. */
    paused: z.boolean().optional(),
  })
  .refine((o) => (o.everyMs === undefined) !== (o.cron === undefined), {
    message: 'give exactly one of everyMs and cron',
    path: ['everyMs'],
  });
export type FollowupScheduleOptions = z.input<typeof FollowupScheduleSchema>;

/** One schedule of followups, as `list` and `describe` give it. */
export interface FollowupSchedule {
  scheduleId: string;
  sessionId: string;
  /** `every 3600000 ms` or `cron 0 9 * * *`. */
  spec: string;
  paused: boolean;
  /** The prompt (only from `describe`: a listing does not carry the action's arguments). */
  content?: string;
  /** The next firing times the server computed (from `describe`; a listing carries some too). */
  nextRuns: Date[];
  /** The latest firings: when each was due and the workflow id it ran as (its message's id). */
  recent: { scheduledAt: Date; workflowId: string }[];
}

interface ScheduleMemo {
  sessionId: string;
  spec: string;
}

const overlapPolicy = (o: OverlapPolicy | undefined) =>
  o === undefined
    ? ScheduleOverlapPolicy.SKIP
    : ScheduleOverlapPolicy[o.toUpperCase() as Uppercase<OverlapPolicy>];

export class SessionSchedules {
  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
    private readonly workflowType: string,
    private readonly searchAttributes: () => Promise<boolean>,
  ) {}

  /** Creates a schedule. Throws InvalidInputError naming the field, or the server's error for a taken id. */
  async create(scheduleId: string, options: FollowupScheduleOptions): Promise<FollowupSchedule> {
    const id = ScheduleIdSchema.safeParse(scheduleId);
    if (!id.success) throw invalidInput(id.error.issues, 'scheduleId');
    const parsed = FollowupScheduleSchema.safeParse(options);
    if (!parsed.success) throw invalidInput(parsed.error.issues, 'schedule');
    const o = parsed.data;
    const input: ScheduledFollowup = {
      scheduleId,
      sessionId: o.sessionId,
      content: o.content,
      ...(o.config ? { config: o.config } : {}),
      workflowType: this.workflowType,
      searchAttributes: await this.searchAttributes(),
    };
    const spec = o.everyMs !== undefined ? `every ${o.everyMs} ms` : `cron ${o.cron}`;
    const memo: ScheduleMemo = { sessionId: o.sessionId, spec };
    const handle = await this.client.schedule.create({
      scheduleId,
      spec: o.everyMs !== undefined ? { intervals: [{ every: o.everyMs }] } : { cronExpressions: [o.cron!] },
      action: {
        type: 'startWorkflow',
        workflowType: SCHEDULED_FOLLOWUP_WORKFLOW_TYPE,
        workflowId: `${SCHEDULE_WORKFLOW_ID_PREFIX}${scheduleId}`,
        taskQueue: this.taskQueue,
        args: [input],
      },
      policies: {
        overlap: overlapPolicy(o.overlap),
        ...(o.catchupWindowMs !== undefined ? { catchupWindow: o.catchupWindowMs } : {}),
      },
      memo: { agentSessions: memo },
      ...(o.paused ? { state: { paused: true } } : {}),
    });
    return fromDescription(scheduleId, await handle.describe());
  }

  /** A schedule with its prompt, next and recent firings. Throws ScheduleNotFoundError. */
  async describe(scheduleId: string): Promise<FollowupSchedule> {
    return fromDescription(scheduleId, await this.client.schedule.getHandle(scheduleId).describe());
  }

  /** The schedules of followups in the namespace (other schedules are left out). Visibility: eventually consistent. */
  async list(): Promise<FollowupSchedule[]> {
    const rows: FollowupSchedule[] = [];
    for await (const s of this.client.schedule.list()) {
      if (s.action?.workflowType !== SCHEDULED_FOLLOWUP_WORKFLOW_TYPE) continue;
      rows.push(fromSummary(s));
    }
    return rows.sort((a, b) => a.scheduleId.localeCompare(b.scheduleId));
  }

  /** Fires a schedule now (its overlap policy applies). */
  async trigger(scheduleId: string): Promise<void> {
    await this.client.schedule.getHandle(scheduleId).trigger();
  }

  /** Deletes a schedule; its session and what it delivered stay. */
  async delete(scheduleId: string): Promise<void> {
    await this.client.schedule.getHandle(scheduleId).delete();
  }
}

export { ScheduleNotFoundError };

function memoOf(memo: Record<string, unknown> | undefined): ScheduleMemo | undefined {
  const m = memo?.agentSessions as Partial<ScheduleMemo> | undefined;
  return typeof m?.sessionId === 'string' && typeof m.spec === 'string'
    ? { sessionId: m.sessionId, spec: m.spec }
    : undefined;
}

function recentOf(info: { recentActions: ScheduleSummary['info']['recentActions'] }) {
  return info.recentActions.map((a) => ({
    scheduledAt: a.scheduledAt,
    workflowId: a.action.workflow.workflowId,
  }));
}

function fromSummary(s: ScheduleSummary): FollowupSchedule {
  const memo = memoOf(s.memo);
  return {
    scheduleId: s.scheduleId,
    sessionId: memo?.sessionId ?? '?',
    spec: memo?.spec ?? '?',
    paused: s.state.paused,
    nextRuns: s.info.nextActionTimes,
    recent: recentOf(s.info),
  };
}

function fromDescription(scheduleId: string, d: ScheduleDescription): FollowupSchedule {
  const memo = memoOf(d.memo);
  const input = ScheduledFollowupSchema.safeParse(d.action.args?.[0]);
  return {
    scheduleId,
    sessionId: input.success ? input.data.sessionId : (memo?.sessionId ?? '?'),
    spec: memo?.spec ?? '?',
    paused: d.state.paused,
    ...(input.success ? { content: input.data.content } : {}),
    nextRuns: d.info.nextActionTimes,
    recent: recentOf(d.info),
  };
}
