/**
 * What callers pass SessionClient, checked before anything is sent: messages (a fresh id assigned before the first
 * attempt, so retries stay idempotent), configs, and any input by its schema. Every check throws InvalidInputError
 * naming the field. Pure, but for the random message id.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { followupSignal, injectSignal, steerSignal } from '../contract';
import type { MessageInput } from '../domain/messages';
import type { SessionRef } from '../domain/sessionRefs';
import {
  laneInputProblem,
  LaneMessageInputSchema,
  SessionConfigSchema,
  type Lane,
  type LaneMessageInput,
  type SessionConfig,
} from '../domain/wire';
import { InvalidInputError, invalidInput } from './errors';

/**
 * A message as callers pass it: a string is the content of a message with a fresh id. A direct message (followup or
 * steer) may reference other sessions: `refs: [{session, throughSeq?}]` (docs/protocol.md "Cross-session references").
 */
export type MessageArg = string | (MessageInput & { refs?: SessionRef[] });

const LANE_SIGNALS = { followup: followupSignal, steer: steerSignal, inject: injectSignal } as const;

/** The signal of a lane. */
export function laneSignal(lane: Lane) {
  return LANE_SIGNALS[lane];
}

/** Whether the id of `message` will be made up by the client (then a retry's duplicate is the call's own). */
export function idIsOurs(message: MessageArg): boolean {
  return typeof message === 'string' || message.id === undefined;
}

/**
 * Validates a message for a lane (refs included: not on inject, never to `sessionId` itself) and assigns an id when
 * it has none. Throws InvalidInputError naming the field.
 */
export function validMessage(
  lane: Lane,
  message: MessageArg,
  sessionId: string,
): LaneMessageInput & { id: string } {
  const raw = typeof message === 'string' ? { content: message } : message;
  const parsed = LaneMessageInputSchema.safeParse(raw);
  if (!parsed.success) throw invalidInput(parsed.error.issues, 'message');
  const problem = laneInputProblem(lane, parsed.data, sessionId);
  if (problem) throw new InvalidInputError(problem.split(':')[0]!, `invalid message: ${problem}`);
  return { ...parsed.data, id: parsed.data.id ?? randomUUID() };
}

/** `value` parsed by `schema`. Throws InvalidInputError naming the field, under `root` (`config.tools[1]`). */
export function validInput<S extends z.ZodType>(schema: S, value: unknown, root: string): z.output<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw invalidInput(parsed.error.issues, root);
  return parsed.data;
}

/** The config, validated. Throws InvalidInputError naming the field. */
export function validConfig(config: SessionConfig): SessionConfig {
  return validInput(SessionConfigSchema, config, 'config');
}
