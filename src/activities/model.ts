/**
 * Model providers behind one interface, and the built-in `scripted` provider (docs/protocol.md: the n-th model request
 * of a session answers with step n; past the end it answers `echo: <latest user text>`). Not deterministic:
 * runs in activities. The scripted provider records every request it receives so tests can assert what the model
 * saw.
 */
import { ApplicationFailure } from '@temporalio/common';
import { FailureTypes } from '../contract';
import { textOf } from '../domain/messages';
import type { ModelRequest, ModelStepResult } from './types';

/** What a provider gets besides the request: cancellation, liveness and the answer's size cap. */
export interface ModelCallContext {
  signal: AbortSignal;
  /**
   * Most UTF-8 bytes of the answer's text, reasoning and tool-call arguments together (the worker's
   * `maxAnswerBytes`). A streaming provider stops reading there and throws `answerTooLarge` (./resultSizes.ts); a
   * finished answer over it fails the same way whatever the provider did. Always set by the activity; default
   * DEFAULT_MAX_ANSWER_BYTES (src/domain/sizes.ts).
   */
  maxAnswerBytes?: number;
  heartbeat(details?: unknown): void;
  /** Sleeps, heartbeating; rejects when the activity is cancelled. */
  sleep(ms: number): Promise<void>;
  /** Epoch ms by which the attempt times out, when known: waits within the call (rate limits) end before it. */
  deadlineAt?: number | undefined;
}

export interface ModelProvider {
  readonly name: string;
  step(input: ModelRequest, ctx: ModelCallContext): Promise<ModelStepResult>;
}

/** Keeps the requests the scripted model received, per session, indexed by request number (retries overwrite). */
export class ScriptedRecorder {
  private readonly bySession = new Map<string, ModelRequest[]>();

  record(input: ModelRequest): void {
    const list = this.bySession.get(input.sessionId) ?? [];
    list[input.requestIndex] = JSON.parse(JSON.stringify(input)) as ModelRequest;
    this.bySession.set(input.sessionId, list);
  }

  /** The requests of one session, in order (R[0], R[1], …). */
  requests(sessionId: string): ModelRequest[] {
    return [...(this.bySession.get(sessionId) ?? [])].filter(Boolean);
  }

  clear(): void {
    this.bySession.clear();
  }
}

/** The deterministic offline model used by demos and tests. */
export class ScriptedProvider implements ModelProvider {
  readonly name = 'scripted';

  constructor(private readonly recorder?: ScriptedRecorder) {}

  async step(input: ModelRequest, ctx: ModelCallContext): Promise<ModelStepResult> {
    if (input.model.provider !== 'scripted') throw new Error('scripted provider called with another model');
    this.recorder?.record(input);
    const step = input.model.steps[input.requestIndex - (input.stepsFrom ?? 0)];
    if (!step) {
      const lastUser = [...input.messages].reverse().find((m) => m.role === 'user');
      return { text: `echo: ${lastUser ? textOf(lastUser.content) : ''}`, toolCalls: [], finish: 'stop' };
    }
    // With streamMs the text appears word by word over that long, as a streaming provider's would; otherwise it is
    // visible as soon as the call starts. delayMs is how long the response then takes to finish. A cancel meanwhile
    // returns the visible text as an interrupted answer (rule 29).
    if (step.text && step.streamMs) {
      const words = step.text.match(/\S+\s*/g) ?? [step.text];
      let shown = '';
      for (const word of words) {
        shown += word;
        ctx.heartbeat({ partialText: shown });
        try {
          await ctx.sleep(step.streamMs / words.length);
        } catch (err) {
          if (!ctx.signal.aborted) throw err;
          return { text: shown, toolCalls: [], finish: 'stop', interrupted: true };
        }
      }
    } else if (step.text) ctx.heartbeat({ partialText: step.text });
    if (step.delayMs) {
      try {
        await ctx.sleep(step.delayMs);
      } catch (err) {
        if (!ctx.signal.aborted) throw err;
        return { text: step.text ?? '', toolCalls: [], finish: 'stop', interrupted: true };
      }
    }
    if (step.fail)
      throw ApplicationFailure.create({
        message: step.fail,
        type: FailureTypes.ScriptedFailure,
        nonRetryable: true,
      });
    const toolCalls = (step.toolCalls ?? []).map((c, i) => ({
      callId: `call_${input.requestIndex}_${i}`,
      name: c.name,
      arguments: c.args,
    }));
    const finish = step.finish === 'max-tokens' ? 'max-tokens' : toolCalls.length ? 'tool-calls' : 'stop';
    return { text: step.text ?? '', toolCalls, finish, ...(step.usage ? { usage: step.usage } : {}) };
  }
}
