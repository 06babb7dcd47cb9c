/**
 * A ModelProvider over the Vercel AI SDK (v6): one `streamText` call per model request, with the SDK's own retries
 * off (Temporal retries the activity) and tools given as schemas only (the SDK reports calls; our tool activities
 * run them). While the response streams, the activity heartbeats the partial text at most once a second, so a
 * cancel reaches it within a heartbeat; a cancelled call returns its visible text as an interrupted answer (rule
 * 29). The answer is counted as it streams (text, reasoning and tool-call arguments) and the stream is cut where it
 * passes the call's `maxAnswerBytes` (../resultSizes.ts), so neither an endless nor an oversized answer can grow the
 * worker without bound. Failures become named ApplicationFailures (./errors); a 429 is waited out inside the attempt
 * (`step`). The SDK's own retries stay off (`maxRetries: 0`): they would wait again on top of ours. Not deterministic:
 * runs in activities.
 */
import { ApplicationFailure } from '@temporalio/common';
import { streamText, type LanguageModel } from 'ai';
import { FailureTypes } from '../../contract';
import type { ToolCallInfo, Usage } from '../../domain/events';
import type { ModelCallContext, ModelProvider } from '../model';
import type { ModelRequest, ModelStepResult } from '../types';
import { DEFAULT_MAX_ANSWER_BYTES, utf8Bytes } from '../../domain/sizes';
import { answerTooLarge } from '../resultSizes';
import { DEFAULT_RATE_LIMIT_WAIT_MS, rateLimitWaiter } from '../waits';
import { modelFailure, type ProviderLabels } from './errors';
import {
  ALL_TOOL_MEDIA,
  fromSdkToolCall,
  toModelMessages,
  toToolSet,
  type ToolMediaSupport,
} from './messages';

export type AiSdkProviderName = 'openai' | 'anthropic' | 'openai-compatible' | 'local';

export interface AiSdkProviderOptions {
  name: AiSdkProviderName;
  /** The SDK model for a model id (e.g. `createOpenAI({apiKey}).chat`). */
  model(modelId: string): LanguageModel;
  /** The worker variables that configure this provider, for error messages. */
  labels?: Omit<ProviderLabels, 'provider'>;
  /** Longest wait for the next chunk of a response before the attempt fails as a timeout (default 120 s). */
  chunkTimeoutMs?: number;
  /** Most output tokens per request (default: the provider's). */
  maxOutputTokens?: number;
  /** Which binary blocks of tool results the API takes as data parts (default: all); others are described. */
  toolMedia?: ToolMediaSupport;
  /**
   * Most milliseconds one model call waits in total for the provider's rate limits (429) before the turn ends
   * `MODEL_RATE_LIMITED` (default DEFAULT_RATE_LIMIT_WAIT_MS, 5 min; 0: each 429 fails the attempt instead).
   */
  rateLimitWaitMs?: number;
}

/** Longest partial text carried in one heartbeat (heartbeat details are stored by the server). */
const HEARTBEAT_TEXT_CHARS = 64 * 1024;
export const DEFAULT_CHUNK_TIMEOUT_MS = 120_000;
/** Heartbeats while a response streams: at least this often (liveness)… */
const HEARTBEAT_EVERY_MS = 1000;
/** …and, while text arrives, at most this often (watchers read it; each beat encodes the text so far). */
const STREAM_BEAT_MS = 100;

export class AiSdkProvider implements ModelProvider {
  readonly name: AiSdkProviderName;
  private readonly labels: ProviderLabels;

  constructor(private readonly options: AiSdkProviderOptions) {
    this.name = options.name;
    this.labels = { provider: options.name, ...options.labels };
  }

  /**
   * One model request. A 429 that arrives before anything of the answer (always: it is the response's status) waits
   * for Retry-After plus jitter inside this attempt, heartbeating, and the request is sent again (../waits.ts); a
   * cancel during the wait returns an empty interrupted answer. Nothing is sent again once the answer has begun.
   */
  async step(request: ModelRequest, ctx: ModelCallContext): Promise<ModelStepResult> {
    const chunkMs = this.options.chunkTimeoutMs ?? DEFAULT_CHUNK_TIMEOUT_MS;
    const wait = rateLimitWaiter({
      maxWaitMs: this.options.rateLimitWaitMs ?? DEFAULT_RATE_LIMIT_WAIT_MS,
      deadlineAt: ctx.deadlineAt,
      reserveMs: Math.min(chunkMs, DEFAULT_CHUNK_TIMEOUT_MS),
      sleep: (ms) => ctx.sleep(ms),
      onWait: (ms) => ctx.heartbeat({ partialText: '', rateLimitedForMs: ms }),
    });
    for (;;) {
      const outcome = await this.send(request, ctx);
      if (!('rateLimited' in outcome)) return outcome;
      try {
        await wait(outcome.rateLimited);
      } catch (err) {
        if (ctx.signal.aborted) return { text: '', toolCalls: [], finish: 'stop', interrupted: true };
        throw err;
      }
    }
  }

  /** Sends the request once; a 429 before any of the answer comes back as `rateLimited` (safe to send again). */
  private async send(
    request: ModelRequest,
    ctx: ModelCallContext,
  ): Promise<ModelStepResult | { rateLimited: ApplicationFailure }> {
    const spec = request.model;
    if (spec.provider !== this.name)
      throw new Error(`${this.name} provider called with a ${spec.provider} model`);
    // `local` may name no model (its default); every other provider's spec has one.
    const modelId = 'model' in spec ? (spec.model ?? '') : '';
    let text = '';
    const toolCalls: ToolCallInfo[] = [];
    let usage: Usage | undefined;
    let finishReason: string | undefined;
    const interrupted = (): ModelStepResult => ({ text, toolCalls: [], finish: 'stop', interrupted: true });
    // The stream is ours to stop (the size cap) as well as the activity's (a cancel).
    const cut = new AbortController();
    const cap = ctx.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES;
    let seen = 0;
    /** Counts streamed bytes; past the cap, stops the stream and throws. */
    const count = (delta: string) => {
      seen += utf8Bytes(delta);
      if (seen <= cap) return;
      cut.abort();
      throw answerTooLarge(this.name, seen, cap, true);
    };

    let lastBeat = 0;
    let soon: ReturnType<typeof setTimeout> | undefined;
    const beat = () => {
      lastBeat = Date.now();
      ctx.heartbeat({
        partialText: text.length > HEARTBEAT_TEXT_CHARS ? text.slice(-HEARTBEAT_TEXT_CHARS) : text,
      });
    };
    /** A beat with the newest text within STREAM_BEAT_MS: one per interval, however many deltas arrive in it. */
    const beatSoon = () => {
      if (soon) return;
      soon = setTimeout(
        () => {
          soon = undefined;
          beat();
        },
        Math.max(0, lastBeat + STREAM_BEAT_MS - Date.now()),
      );
    };
    beat();
    const timer = setInterval(beat, HEARTBEAT_EVERY_MS);
    try {
      const tools = toToolSet(request.toolSpecs);
      const result = streamText({
        model: this.options.model(modelId),
        ...(request.system !== undefined ? { system: request.system } : {}),
        messages: toModelMessages(request.messages, this.options.toolMedia ?? ALL_TOOL_MEDIA),
        ...(tools ? { tools } : {}),
        ...(tools && spec.toolChoice ? { toolChoice: spec.toolChoice } : {}),
        maxRetries: 0,
        abortSignal: AbortSignal.any([ctx.signal, cut.signal]),
        timeout: { chunkMs: this.options.chunkTimeoutMs ?? DEFAULT_CHUNK_TIMEOUT_MS },
        ...(this.options.maxOutputTokens ? { maxOutputTokens: this.options.maxOutputTokens } : {}),
        onError: () => {}, // errors arrive as `error` parts below; the SDK would otherwise print them
      });
      for await (const part of result.fullStream) {
        switch (part.type) {
          case 'text-delta':
            count(part.text);
            text += part.text;
            // The worker sends the latest details at most once per STREAM_THROTTLE; watchers read them.
            beatSoon();
            break;
          case 'reasoning-delta':
            count(part.text);
            break;
          case 'tool-input-delta':
            count(part.delta);
            break;
          case 'tool-call':
            if (!part.providerExecuted) toolCalls.push(fromSdkToolCall(part));
            break;
          case 'finish':
            finishReason = part.finishReason;
            usage = usageOf(part.totalUsage);
            break;
          case 'error':
            throw modelFailure(part.error, this.labels, modelId);
          case 'abort':
            if (ctx.signal.aborted) return interrupted();
            // Aborted without a cancel: the SDK's chunk timeout fired.
            throw ApplicationFailure.create({
              type: FailureTypes.ModelTimeout,
              message: `${this.name} sent nothing for ${Math.round((this.options.chunkTimeoutMs ?? DEFAULT_CHUNK_TIMEOUT_MS) / 1000)} s`,
            });
          default:
            break;
        }
      }
    } catch (err) {
      if (ctx.signal.aborted) return interrupted();
      const failure = modelFailure(err, this.labels, modelId);
      if (failure.type === FailureTypes.ModelRateLimited && seen === 0 && !toolCalls.length)
        return { rateLimited: failure };
      throw failure;
    } finally {
      clearInterval(timer);
      clearTimeout(soon);
    }
    if (ctx.signal.aborted) return interrupted();
    const finish = finishReason === 'length' ? 'max-tokens' : toolCalls.length ? 'tool-calls' : 'stop';
    return { text, toolCalls, finish, ...(usage ? { usage } : {}) };
  }
}

function usageOf(u: {
  inputTokens?: number | undefined;
  outputTokens?: number | undefined;
  totalTokens?: number | undefined;
}): Usage | undefined {
  const usage: Usage = {};
  if (u.inputTokens !== undefined) usage.inputTokens = u.inputTokens;
  if (u.outputTokens !== undefined) usage.outputTokens = u.outputTokens;
  if (u.totalTokens !== undefined) usage.totalTokens = u.totalTokens;
  return Object.keys(usage).length ? usage : undefined;
}
