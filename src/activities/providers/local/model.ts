/**
 * The `local` model as an AI SDK v6 language model (LanguageModelV3), so it runs behind the same provider adapter as
 * the hosted ones (streamText, heartbeats, cancellation, failures). Each request is one generation on the process's
 * LocalEngine: free text streamed as it decodes, or — under the tool choice policy of ./prompt — one tool call
 * written under a grammar (./grammar) and reported as a `tool-call` part. Temperature 0 (greedy) unless the caller
 * sets one, so the same prompt gets the same answer. Not deterministic in the Temporal sense: runs in activities.
 */
import { randomUUID } from 'node:crypto';
import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3Content,
  LanguageModelV3FinishReason,
  LanguageModelV3GenerateResult,
  LanguageModelV3StreamPart,
  LanguageModelV3StreamResult,
  LanguageModelV3Usage,
} from '@ai-sdk/provider';
import type { LocalEngine } from './engine';
import { toolCallGrammar } from './grammar';
import { decideMode, parseToolCall, toChatHistory } from './prompt';

export interface LocalLanguageModelOptions {
  engine: LocalEngine;
  /** The GGUF file (from worker configuration only). */
  modelPath: string;
  /** The name sessions use for it (`default` or a LOCAL_MODELS name). */
  modelId: string;
  /** Most tokens of a text answer when the request sets no limit (default 512). */
  maxTokens?: number;
}

export const DEFAULT_LOCAL_MAX_TOKENS = 512;
/** Most tokens of one tool call (the grammar keeps calls compact; this only stops a runaway). */
const TOOL_CALL_MAX_TOKENS = 256;

export class LocalLanguageModel implements LanguageModelV3 {
  readonly specificationVersion = 'v3';
  readonly provider = 'local';
  readonly modelId: string;
  readonly supportedUrls: Record<string, RegExp[]> = {};

  constructor(private readonly options: LocalLanguageModelOptions) {
    this.modelId = options.modelId;
  }

  async doStream(call: LanguageModelV3CallOptions): Promise<LanguageModelV3StreamResult> {
    const mode = decideMode(call.prompt, call.tools, call.toolChoice);
    const history = toChatHistory(call.prompt, mode);
    const grammar =
      mode.kind === 'tool'
        ? toolCallGrammar(mode.tools.map((t) => ({ name: t.name, inputSchema: t.inputSchema })))
        : undefined;
    const limit = call.maxOutputTokens ?? this.options.maxTokens ?? DEFAULT_LOCAL_MAX_TOKENS;
    const maxTokens = mode.kind === 'tool' ? Math.min(limit, TOOL_CALL_MAX_TOKENS) : limit;
    const engine = this.options.engine;
    const modelPath = this.options.modelPath;

    let open = true;
    const stream = new ReadableStream<LanguageModelV3StreamPart>({
      start(controller) {
        const send = (part: LanguageModelV3StreamPart) => {
          if (open) controller.enqueue(part);
        };
        const close = () => {
          if (open) controller.close();
          open = false;
        };
        const textId = 'text-0';
        let textStarted = false;
        const startText = () => {
          if (!textStarted) send({ type: 'text-start', id: textId });
          textStarted = true;
        };
        send({ type: 'stream-start', warnings: [] });
        void engine
          .generate({
            modelPath,
            history,
            ...(grammar ? { grammar } : {}),
            maxTokens,
            temperature: call.temperature ?? 0,
            ...(call.abortSignal ? { signal: call.abortSignal } : {}),
            ...(mode.kind === 'text'
              ? {
                  onText: (delta: string) => {
                    startText();
                    send({ type: 'text-delta', id: textId, delta });
                  },
                }
              : {}),
          })
          .then((result) => {
            let finishReason: LanguageModelV3FinishReason = {
              unified: result.stopReason === 'length' ? 'length' : 'stop',
              raw: result.stopReason,
            };
            if (mode.kind === 'tool') {
              const parsed = parseToolCall(result.text, mode.tools);
              if (parsed) {
                send({
                  type: 'tool-call',
                  toolCallId: `call_${randomUUID().replace(/-/g, '').slice(0, 24)}`,
                  toolName: parsed.toolName,
                  input: JSON.stringify(parsed.input),
                });
                finishReason = { unified: 'tool-calls', raw: result.stopReason };
              } else if (result.text) {
                // A call cut short (token limit, cancel): shown as text, never run.
                startText();
                send({ type: 'text-delta', id: textId, delta: result.text });
              }
            }
            if (textStarted) send({ type: 'text-end', id: textId });
            send({ type: 'finish', usage: usageOf(result), finishReason });
            close();
          })
          .catch((error: unknown) => {
            send({ type: 'error', error });
            close();
          });
      },
      cancel() {
        open = false;
      },
    });
    return { stream, request: { body: { history, grammar } } };
  }

  async doGenerate(call: LanguageModelV3CallOptions): Promise<LanguageModelV3GenerateResult> {
    const { stream } = await this.doStream(call);
    const content: LanguageModelV3Content[] = [];
    let text = '';
    let finishReason: LanguageModelV3FinishReason = { unified: 'other', raw: undefined };
    let usage: LanguageModelV3Usage = usageOf(undefined);
    const reader = stream.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      switch (value.type) {
        case 'text-delta':
          text += value.delta;
          break;
        case 'tool-call':
          content.push(value);
          break;
        case 'finish':
          finishReason = value.finishReason;
          usage = value.usage;
          break;
        case 'error':
          throw value.error;
        default:
          break;
      }
    }
    if (text) content.unshift({ type: 'text', text });
    return { content, finishReason, usage, warnings: [] };
  }
}

function usageOf(
  result: { inputTokens: number; cachedInputTokens: number; outputTokens: number } | undefined,
): LanguageModelV3Usage {
  return {
    inputTokens: {
      total: result?.inputTokens,
      noCache: result ? result.inputTokens - result.cachedInputTokens : undefined,
      cacheRead: result?.cachedInputTokens,
      cacheWrite: undefined,
    },
    outputTokens: { total: result?.outputTokens, text: result?.outputTokens, reasoning: undefined },
  };
}
