/**
 * Wire payloads (docs/protocol.md): signal and update arguments, receipts and query arguments, as zod schemas (the
 * start argument is in ./config.ts, re-exported here). Pure. These are the only shapes accepted from outside; each
 * error names the field.
 */
import { z } from 'zod';
import { lazy } from './lazy';
import type { TurnEndReason } from './events';
import { LIMITS, MessageInputSchema } from './messages';
import { refsProblem, SessionRefsSchema } from './sessionRefs';
import { SessionConfigSchema } from './config';

export * from './budget';
export {
  ScriptedToolCallSchema,
  ScriptedStepSchema,
  MODEL_PROVIDERS,
  ToolChoiceSchema,
  ModelSpecSchema,
  parseModelRef,
  formatModelRef,
  modelLabel,
  MAX_APPROVAL_TIMEOUT_MS,
  MAX_FORK_SNAPSHOT_CHARS,
  ForkSchema,
  ContextConfigSchema,
  MAX_SUBSESSION_DEPTH,
  SubsessionLinkSchema,
  SessionConfigSchema,
  TenantSchema,
  MAX_TENANT_CHARS,
  DEFAULT_MAX_PARALLEL_TOOL_CALLS,
  type ScriptedStep,
  type ModelSpec,
  type Fork,
  type ContextConfig,
  type SubsessionLink,
  type SessionConfig,
} from './config';

export const LANES = ['followup', 'steer', 'inject'] as const;
export type Lane = (typeof LANES)[number];
export const LaneSchema = lazy(() => z.enum(LANES));

/** Which inbox list a lane targets and whether it wakes an idle session (rule 1). */
export const LANE_RULES: Record<Lane, { target: 'next-turn' | 'next-step'; wakes: boolean }> = {
  followup: { target: 'next-turn', wakes: true },
  steer: { target: 'next-step', wakes: true },
  inject: { target: 'next-step', wakes: false },
};

/** A message on a lane (wire): a direct one may reference other sessions (`refs`, docs/protocol.md). */
export const LaneMessageInputSchema = lazy(() =>
  MessageInputSchema.extend({ refs: SessionRefsSchema.optional() }),
);
export type LaneMessageInput = z.infer<typeof LaneMessageInputSchema>;

/** `followup` / `steer` / `inject` signal argument (wire). */
export const LaneSignalSchema = lazy(() => z.strictObject({ message: LaneMessageInputSchema }));
export type LaneSignal = z.infer<typeof LaneSignalSchema>;

/** Longest a `deliver` may wait for the end of its message's turn. */
export const MAX_WAIT_MS = 3_600_000;
export const DEFAULT_WAIT_MS = 600_000;

/** `deliver` update argument (wire). With `wait`, the update completes when the message's turn has ended. */
export const DeliverInputSchema = lazy(() =>
  z.strictObject({
    lane: LaneSchema,
    message: LaneMessageInputSchema,
    wait: z.strictObject({ timeoutMs: z.number().int().min(1).max(MAX_WAIT_MS).optional() }).optional(),
  }),
);
export type DeliverInput = z.infer<typeof DeliverInputSchema>;

/** `approve` update argument (wire): a decision on a tool call waiting for approval. */
export const ApproveInputSchema = lazy(() =>
  z.strictObject({
    callId: z.string().min(1).max(256),
    decision: z.enum(['approve', 'deny']),
    reason: z.string().max(4096).optional(),
  }),
);
export type ApproveInput = z.infer<typeof ApproveInputSchema>;

/** `approve` update result (wire). `duplicate`: the same decision had already been taken for this call. */
export interface ApprovalReceipt {
  callId: string;
  decision: 'approve' | 'deny';
  duplicate: boolean;
}

/** `deliver` update result (wire). */
export interface DeliveryReceipt {
  messageId: string;
  lane: Lane;
  duplicate: boolean;
  /**
   * Seq of the `agent/inbox/spliced` event that inserted the message (for a duplicate: of its first insertion), so
   * a caller can follow its own message in the event stream from there. Absent only for a duplicate of an id
   * accepted by a version before receipts carried it.
   */
  seq?: number;
  /** With `wait`: how the message's turn went (or that a cancel discarded the message before it entered one). */
  outcome?: WaitOutcome;
}

/** What a waiting `deliver` returns (wire). `answer` is the text of the turn's last assistant message. */
export type WaitOutcome =
  | { status: 'discarded' }
  | { status: 'ended'; turn: number; reason: TurnEndReason; seq: number; answer?: string };

/** `cancel` signal argument (wire). */
export const CancelCauseSchema = lazy(() =>
  z.discriminatedUnion('kind', [
    z.strictObject({ kind: z.literal('user') }),
    z.strictObject({ kind: z.literal('hook'), reason: z.string().max(4096) }),
  ]),
);
export const CancelInputSchema = lazy(() =>
  z.strictObject({
    cause: CancelCauseSchema.optional(),
    keepInbox: z.boolean().optional(),
  }),
);
export type CancelInput = z.infer<typeof CancelInputSchema>;

/** `dispose` signal argument (wire): exactly `{}`. Anything else is refused and disposes nothing (rule 5). */
export const DisposeInputSchema = lazy(() => z.strictObject({}));

/** `upgrade` signal argument (wire): `{}` or `{reason}` (docs/upgrades.md). */
export const UpgradeInputSchema = lazy(() => z.strictObject({ reason: z.string().max(4096).optional() }));

/** `events` query argument (wire). */
export const EventsQuerySchema = lazy(() =>
  z.strictObject({
    afterSeq: z.number().int().min(-1).optional(),
    limit: z.number().int().min(1).max(10_000).optional(),
  }),
);
export type EventsQuery = z.infer<typeof EventsQuerySchema>;
export const DEFAULT_EVENTS_LIMIT = 1000;

/**
 * Inject requires an explicit source (wire: "required for inject"); refs go with a direct message only, never to
 * the receiving session itself (`sessionId`, when known). Returns "field: problem".
 */
export function laneInputProblem(
  lane: Lane,
  message: Pick<LaneMessageInput, 'source' | 'refs'>,
  sessionId?: string,
): string | undefined {
  if (lane === 'inject' && message.source === undefined) return 'message.source: required for inject';
  return refsProblem(lane, message, sessionId);
}

/**
 * What the session's payload converter (src/contract/payloadConverter.ts) gives in place of a payload it cannot
 * decode — JSON that does not parse, an encoding it does not know — so a signal carrying one is refused and counted
 * like any other bad input (rule 5) instead of failing the workflow task that delivers it.
 */
export interface UndecodablePayload {
  $undecodablePayload: string;
}

/** Why a decoded value is an undecodable payload, or undefined when it is a real value. */
export function undecodableReason(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || !('$undecodablePayload' in value)) return undefined;
  const reason = (value as UndecodablePayload).$undecodablePayload;
  return typeof reason === 'string' ? reason : undefined;
}

/** A session id as Temporal workflow ids allow it here: printable ASCII without spaces, at most 255 characters. */
export const SessionIdSchema = lazy(() =>
  z.string().regex(/^[\x21-\x7e]{1,255}$/, 'printable ASCII without spaces, at most 255 characters'),
);

/**
 * Longest schedule id. A firing's workflow id, which is also its message's id, is `schedule:<id>-<scheduled time>`
 * (Temporal appends the time): 9 + 96 + 21 characters fit the 128 of a message id.
 */
export const MAX_SCHEDULE_ID_CHARS = 96;
export const SCHEDULE_WORKFLOW_ID_PREFIX = 'schedule:';

export const ScheduleIdSchema = lazy(() =>
  z
    .string()
    .min(1, 'must not be empty')
    .max(MAX_SCHEDULE_ID_CHARS, `at most ${MAX_SCHEDULE_ID_CHARS} characters`)
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'letters, digits and . _ - only, starting with a letter or digit'),
);

/**
 * The argument of one firing of a schedule (wire: the `scheduledFollowup` workflow's input): the prompt a session
 * gets as a followup, and how to start the session when it does not exist. `searchAttributes` says whether the
 * server had the session search attributes registered when the schedule was made.
 */
export const ScheduledFollowupSchema = lazy(() =>
  z.strictObject({
    scheduleId: ScheduleIdSchema,
    sessionId: SessionIdSchema,
    content: z
      .string()
      .min(1, 'must not be empty')
      .max(LIMITS.contentChars, `at most ${LIMITS.contentChars} characters`),
    config: SessionConfigSchema.optional(),
    workflowType: z.string().min(1).max(255).optional(),
    searchAttributes: z.boolean().optional(),
  }),
);
export type ScheduledFollowup = z.infer<typeof ScheduledFollowupSchema>;
