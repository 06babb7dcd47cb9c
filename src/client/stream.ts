/**
 * Live text of a running model step for watchers (`SessionClient.stream`), read from the model activity's heartbeat
 * details: the worker heartbeats the text so far (with its turn and step) and sends the latest at most every
 * STREAM_THROTTLE; a watcher reads it with DescribeWorkflowExecution, so it needs no route to the worker that runs
 * the step and streaming adds nothing to history. docs/decisions/2026-12-03-streaming.md. The fold and the reading of
 * one heartbeat's details are pure; ./sdk.ts decodes them from the describe answer, ./poll.ts polls.
 */
import type { SessionEvent } from '../domain/events';
import type { WatchItem } from './watch';

/** The text of a model step so far. `text` is all of it; `delta` what is new since the last item of that step. */
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

/** Turns successive readings of the live text into deltas; nothing for a step whose answer is in the log. */
export class DeltaFold {
  private last: LiveText | undefined;
  private answered = new Set<string>();
  /** Whether the log says a model call may be running (a step opened, its answer not logged yet). */
  modelRunning = false;

  event(event: SessionEvent): void {
    switch (event.type) {
      case 'step/start':
        this.modelRunning = true;
        return;
      case 'assistant/message':
        this.answered.add(`${event.data.turn}.${event.data.step}`);
        this.modelRunning = false;
        return;
      case 'step/end':
      case 'turn/end':
      case 'session/disposed':
        this.modelRunning = false;
        return;
      default:
        return;
    }
  }

  next(live: LiveText): TextDelta | undefined {
    if (this.answered.has(`${live.turn}.${live.step}`)) return undefined;
    const last = this.last;
    this.last = live;
    const sameCall = last?.turn === live.turn && last.step === live.step;
    if (sameCall && last.attempt === live.attempt && live.text.startsWith(last.text)) {
      if (live.text === last.text) return undefined;
      return { kind: 'delta', ...live, delta: live.text.slice(last.text.length), reset: false };
    }
    if (!sameCall && live.text === '') return undefined;
    return { kind: 'delta', ...live, delta: live.text, reset: sameCall };
  }
}

/** The live text in one model activity's heartbeat details, if they are ours and belong to its current attempt. */
export function liveTextOf(details: unknown, attempt: number): LiveText | undefined {
  if (!details || typeof details !== 'object') return undefined;
  const d = details as { partialText?: unknown; turn?: unknown; step?: unknown };
  if (typeof d.partialText !== 'string' || typeof d.turn !== 'number' || typeof d.step !== 'number')
    return undefined;
  return { turn: d.turn, step: d.step, attempt, text: d.partialText };
}
