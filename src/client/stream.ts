/**
 * Live text of a running model step for watchers (`SessionClient.stream`), read from the model activity's heartbeat
 * details: the worker heartbeats the text so far (with its turn and step) and sends the latest at most every
 * STREAM_THROTTLE; a watcher reads it with DescribeWorkflowExecution, so it needs no route to the worker that runs
 * the step and streaming adds nothing to history. A step whose text was read ends with a delta that completes it
 * from its logged answer (the throttle can hold back the last heartbeat until the call has ended, and then it is
 * never sent). docs/decisions/2026-12-03-streaming.md. The fold and the reading of one heartbeat's details are pure;
 * ./sdk.ts decodes them from the describe answer, ./poll.ts polls.
 */
import type { SessionEvent } from '../domain/events';
import { textOf } from '../domain/messages';
import type { WatchItem } from './watch';

/**
 * The text of a model step so far. `text` is all of it; `delta` what is new since the last item of that step. The
 * last delta of a step whose text the stream read carries its whole answer (`text` is the text of its
 * `assistant/message`, which follows it).
 */
export interface TextDelta {
  kind: 'delta';
  turn: number;
  step: number;
  /** The model activity's attempt (1 first); a new attempt after a crash or a retry starts the text again. */
  attempt: number;
  text: string;
  delta: string;
  /** Drop the text shown so far for this step: `text` replaces it (a retried attempt, or text that did not grow). */
  reset: boolean;
}

export type StreamItem = WatchItem | TextDelta;

/** What a model activity's heartbeat says, as DescribeWorkflowExecution shows it. */
export interface LiveText {
  turn: number;
  step: number;
  attempt: number;
  text: string;
}

/**
 * Turns successive readings of the live text into deltas; nothing for a step whose answer is in the log. When a
 * step's answer is logged, the delta that brings what its deltas delivered to that answer.
 */
export class DeltaFold {
  /** The last reading of each step read and not yet ended, by `turn.step`: the text its deltas delivered. */
  private readonly read = new Map<string, LiveText>();
  private readonly answered = new Set<string>();
  /** Whether the log says a model call may be running (a step opened, its answer not logged yet). */
  modelRunning = false;

  /**
   * Folds one event. For the `assistant/message` of a step whose text was read: a delta with what the deltas have
   * not delivered of its answer (`reset` when the answer does not extend them), to yield before the event.
   */
  event(event: SessionEvent): TextDelta | undefined {
    switch (event.type) {
      case 'step/start':
        this.modelRunning = true;
        return undefined;
      case 'assistant/message': {
        const key = `${event.data.turn}.${event.data.step}`;
        this.answered.add(key);
        this.modelRunning = false;
        const last = this.read.get(key);
        this.read.delete(key);
        return last && deltaBetween(last, { ...last, text: textOf(event.data.message.content) });
      }
      case 'step/end':
        this.read.delete(`${event.data.turn}.${event.data.step}`);
        this.modelRunning = false;
        return undefined;
      case 'turn/end':
      case 'session/disposed':
        this.read.clear();
        this.modelRunning = false;
        return undefined;
      default:
        return undefined;
    }
  }

  next(live: LiveText): TextDelta | undefined {
    const key = `${live.turn}.${live.step}`;
    if (this.answered.has(key)) return undefined;
    const last = this.read.get(key);
    this.read.set(key, live);
    return deltaBetween(last, live);
  }
}

/** The delta from what a step's deltas delivered (`last`, its previous reading, if any) to `live`; none if equal. */
function deltaBetween(last: LiveText | undefined, live: LiveText): TextDelta | undefined {
  if (last?.attempt === live.attempt && live.text.startsWith(last.text)) {
    if (live.text === last.text) return undefined;
    return { kind: 'delta', ...live, delta: live.text.slice(last.text.length), reset: false };
  }
  if (!last && live.text === '') return undefined;
  return { kind: 'delta', ...live, delta: live.text, reset: last !== undefined };
}

/** The live text in one model activity's heartbeat details, if they are ours and belong to its current attempt. */
export function liveTextOf(details: unknown, attempt: number): LiveText | undefined {
  if (!details || typeof details !== 'object') return undefined;
  const d = details as { partialText?: unknown; turn?: unknown; step?: unknown };
  if (typeof d.partialText !== 'string' || typeof d.turn !== 'number' || typeof d.step !== 'number')
    return undefined;
  return { turn: d.turn, step: d.step, attempt, text: d.partialText };
}
