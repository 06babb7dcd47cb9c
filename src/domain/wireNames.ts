/**
 * The session's signal, update and query names (wire, docs/protocol.md "Every wire name"), in one table with what
 * the Temporal UI says of each: the workflow registers its handlers from it (src/workflows/handlers.ts), the wire
 * handles the client sends through are defined from it (src/contract), and the driver dispatches signals by it.
 * test/unit/wireNames.test.ts checks docs/protocol.md against it both ways, so the docs cannot drift. Pure.
 */

/** One handler of the wire: its kind and the description the Temporal UI shows. */
interface WireHandler {
  kind: 'signal' | 'update' | 'query';
  /** Not part of the public protocol (the worker's own use). */
  internal?: true;
  description: string;
}

/** Every handler's wire name, kind and description; signals in the order the workflow registers them. */
export const WIRE_HANDLERS = {
  followup: {
    kind: 'signal',
    description:
      'Queues a message for its own turn (lane followup); invalid payloads are counted and ignored.',
  },
  steer: {
    kind: 'signal',
    description: 'Delivers a message at the next step boundary and wakes the session (lane steer).',
  },
  inject: {
    kind: 'signal',
    description: 'Adds context at the next step without waking the session (lane inject).',
  },
  cancel: {
    kind: 'signal',
    description: 'Cancels the running turn: {reason?}. Running tool calls settle; pending ones are aborted.',
  },
  dispose: { kind: 'signal', description: 'Ends the session after cancelling its running turn: {}.' },
  upgrade: {
    kind: 'signal',
    description:
      "Moves the session to its deployment's new version at its next quiet point, at once when idle: {reason?}. Does nothing when there is none.",
  },
  deliver: {
    kind: 'update',
    description:
      'Delivers a message on a lane and returns its receipt; refuses invalid input naming the field. With `wait`, completes when the turn it entered ends.',
  },
  approve: {
    kind: 'update',
    description:
      'Decides a tool call waiting for approval: {callId, decision: approve|deny, reason?} → {callId, decision, duplicate}. Refuses a call that is not waiting, naming it.',
  },
  budget: {
    kind: 'update',
    description:
      'Decides a session waiting at its budget: {decision: extend, limits} or {decision: deny, reason?} → {decision, limits}. Refuses when the session does not wait, or limits that would not let the step run.',
  },
  events: {
    kind: 'query',
    description: "A page of this run's event log: {afterSeq?, limit?} → {events, nextSeq, previousRunId?}.",
  },
  config: {
    kind: 'query',
    description: 'The config the session was started with (a fork names its source, without the snapshot).',
  },
  state: {
    kind: 'query',
    description: 'Status, turn, step, pending message ids, refused payloads and token usage.',
  },
  transcript: {
    kind: 'query',
    description: 'The model-visible transcript this run holds (system prompt and messages).',
  },
  __modelContext: {
    kind: 'query',
    internal: true,
    description: 'Internal: model-visible entries [from, to) for the model activity’s transcript cache.',
  },
} as const satisfies Record<string, WireHandler>;

export type WireName = keyof typeof WIRE_HANDLERS;
type NameOfKind<K extends WireHandler['kind']> = {
  [N in WireName]: (typeof WIRE_HANDLERS)[N]['kind'] extends K ? N : never;
}[WireName];
export type SignalName = NameOfKind<'signal'>;
export type UpdateName = NameOfKind<'update'>;
export type QueryName = NameOfKind<'query'>;

/** The wire's signals, in the table's order. */
export const SIGNAL_NAMES = (Object.keys(WIRE_HANDLERS) as WireName[]).filter(
  (name) => WIRE_HANDLERS[name].kind === 'signal',
) as readonly SignalName[];

/** The signals as a sentence lists them (`followup, steer, inject, cancel, dispose or upgrade`). */
export const SIGNAL_NAMES_TEXT = [SIGNAL_NAMES.slice(0, -1).join(', '), ...SIGNAL_NAMES.slice(-1)].join(
  ' or ',
);

/** Whether `name` is one of the wire's signals (any other name is the sender's own). */
export function isSignalName(name: string): name is SignalName {
  return (SIGNAL_NAMES as readonly string[]).includes(name);
}

/** What the Temporal UI says of a handler. */
export function wireDescription(name: WireName): string {
  return WIRE_HANDLERS[name].description;
}
