/**
 * Reference targets: where a run's Temporal history holds a transcript entry's content, and what names a
 * referenced entry (./entryRefs.ts says how a reader rebuilds it). A leaf of types: the driver's request cursor,
 * the effects and the readers of a model request share it.
 */

/** Where a run's history holds an entry's content, in a form the entry can be rebuilt from exactly. */
export type HeldIn =
  /** A `followup`/`steer`/`inject` signal or a `deliver` update of the run whose message has this (caller's) id. */
  | { in: 'delivery'; messageId: string }
  /** The result of the run's `executeTool` activity for this call (no post-tool hook changed its content). */
  | { in: 'tool'; callId: string }
  /** The result of the run's `modelStep` activity for this request; `id` is the answer's id, which the workflow made. */
  | { in: 'model'; requestIndex: number; id: string };

/** What names a referenced entry: where it is held, the seq of the log event that added it, and its hash. */
export type RefTarget = HeldIn & {
  seq: number;
  /** `entryHash` of the entry. */
  hash: string;
};
