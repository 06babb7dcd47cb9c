/**
 * The size caps of what activities return (src/domain/sizes.ts; docs/protocol.md, "Sizes"): a model answer over
 * its cap fails the call with the non-retryable `ModelAnswerTooLarge`, and a tool result over its cap becomes a
 * `TOOL_RESULT_TOO_LARGE` error the model reads. Either way the activity's result stays under Temporal's payload
 * limit, so the turn ends with a code instead of retrying a result the server refuses. Not deterministic: runs in
 * activities.
 */
import { ApplicationFailure } from '@temporalio/common';
import { ErrorCodes, FailureTypes } from '../contract';
import { formatBytes } from '../domain/messages';
import {
  DEFAULT_MAX_ANSWER_BYTES,
  DEFAULT_MAX_TOOL_RESULT_BYTES,
  jsonBytes,
  MAX_RESULT_CAP_BYTES,
  utf8Bytes,
} from '../domain/sizes';
import type { ModelStepResult, ToolExecResult } from './types';

/** The caps of one worker. */
export interface ResultCaps {
  /** Most UTF-8 bytes of one model answer's text, reasoning and tool-call arguments together. */
  maxAnswerBytes: number;
  /** Most bytes of one tool result's JSON (content, error and contexts). */
  maxToolResultBytes: number;
}

/** Smallest cap a worker may set: below it ordinary answers and results would fail. */
export const MIN_RESULT_CAP_BYTES = 1024;

/** The caps for these options, checked: each from 1 KiB up to MAX_RESULT_CAP_BYTES. Throws naming the option. */
export function resultCaps(opts: { maxAnswerBytes?: number; maxToolResultBytes?: number } = {}): ResultCaps {
  return {
    maxAnswerBytes: checkedCap('maxAnswerBytes', opts.maxAnswerBytes, DEFAULT_MAX_ANSWER_BYTES),
    maxToolResultBytes: checkedCap(
      'maxToolResultBytes',
      opts.maxToolResultBytes,
      DEFAULT_MAX_TOOL_RESULT_BYTES,
    ),
  };
}

function checkedCap(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < MIN_RESULT_CAP_BYTES || value > MAX_RESULT_CAP_BYTES)
    throw new Error(
      `${name}: must be an integer from ${MIN_RESULT_CAP_BYTES} to ${MAX_RESULT_CAP_BYTES} (bytes; Temporal's payload limit is 2 MiB), got ${value}`,
    );
  return value;
}

/** UTF-8 bytes of an answer as the cap counts it: its text and each call's arguments (as JSON, or raw). */
export function answerBytes(answer: Pick<ModelStepResult, 'text' | 'toolCalls'>): number {
  let bytes = utf8Bytes(answer.text);
  for (const call of answer.toolCalls)
    bytes += call.arguments === null ? utf8Bytes(call.rawArguments ?? '') : jsonBytes(call.arguments);
  return bytes;
}

/**
 * The failure of an answer that passed the cap: `seen` is how many bytes had arrived when it was cut (`cut`: the
 * stream was stopped there) or the answer's size.
 */
export function answerTooLarge(
  provider: string,
  seen: number,
  cap: number,
  cut: boolean,
): ApplicationFailure {
  return ApplicationFailure.create({
    type: FailureTypes.ModelAnswerTooLarge,
    nonRetryable: true,
    message: `${provider}'s answer passed the limit of ${formatBytes(cap)} (${cap} bytes of text and tool-call arguments, worker option maxAnswerBytes): ${cut ? `the stream was cut at ${seen} bytes` : `it is ${seen} bytes`}`,
  });
}

/** Throws `answerTooLarge` when a finished answer is over the cap (for providers that do not count as they read). */
export function checkAnswer(provider: string, answer: ModelStepResult, cap: number): ModelStepResult {
  const bytes = answerBytes(answer);
  if (bytes > cap) throw answerTooLarge(provider, bytes, cap, false);
  return answer;
}

/**
 * A tool result within the cap as it is; one over it replaced by a `TOOL_RESULT_TOO_LARGE` error naming the size and
 * the limit (the model reads it; the result itself is not kept). The call's `concludesTurn` stays.
 */
export function capToolResult(name: string, result: ToolExecResult, cap: number): ToolExecResult {
  const bytes = jsonBytes(result);
  if (bytes <= cap) return result;
  const message = `the result of tool "${name}" is ${formatBytes(bytes)} (${bytes} bytes), over the limit of ${formatBytes(cap)} (${cap} bytes, worker option maxToolResultBytes): it was not kept; ask for less`;
  return {
    content: [{ type: 'text', text: `error: ${message}` }],
    error: { code: ErrorCodes.ToolResultTooLarge, message },
    additionalContexts: [],
    concludesTurn: result.concludesTurn,
  };
}
