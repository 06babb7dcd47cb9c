/**
 * The `local` model as an AI SDK v6 language model (LanguageModelV3), so it runs behind the same provider adapter as
 * the hosted ones (streamText, heartbeats, cancellation, failures). Each request runs on the process's LocalEngine,
 * under the tool choice policy of ./prompt: free text streamed as it decodes; one tool call written under a grammar
 * (./grammar) and reported as a `tool-call` part; or, in `either` mode, first the choice (a call, or `none`: answer
 * in text) under one grammar, then the text answer. An answer after tool results starts with them (./grounded).
 * Temperature 0 (greedy) unless the caller sets one, so the same prompt gets the same answer. Not deterministic in
 * the Temporal sense: runs in activities.
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
import { groundedTextGrammar, toolCallGrammar } from './grammar';
import {
  answerStart,
  decideMode,
  isTextChoice,
  parseToolCall,
  repeatsCall,
  toChatHistory,
  type LocalChatItem,
} from './prompt';

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
    // With tools, a text answer sees the last exchange before its own (./prompt toChatHistory); without, all of them.
    const offersTools = (call.tools ?? []).length > 0;
    const textChat = () => toChatHistory(call.prompt, { kind: 'text' }, offersTools ? { earlier: 1 } : {});
    const history = mode.kind === 'text' ? textChat() : toChatHistory(call.prompt, mode);
    const grammar =
      mode.kind === 'text'
        ? undefined
        : toolCallGrammar(
            mode.tools.map((t) => ({ name: t.name, inputSchema: t.inputSchema })),
            mode.kind === 'either' ? { orText: true, numbers: mode.numbers } : {},
          );
    const limit = call.maxOutputTokens ?? this.options.maxTokens ?? DEFAULT_LOCAL_MAX_TOKENS;
    const { engine, modelPath } = this.options;
    const base = {
      modelPath,
      temperature: call.temperature ?? 0,
      ...(call.abortSignal ? { signal: call.abortSignal } : {}),
    };

    let open = true;
    const stream = new ReadableStream<LanguageModelV3StreamPart>({
      start(controller) {
        const send = (part: LanguageModelV3StreamPart) => {
          if (open) controller.enqueue(part);
        };
        const textId = 'text-0';
        let textStarted = false;
        const sendText = (delta: string) => {
          if (!textStarted) send({ type: 'text-start', id: textId });
          textStarted = true;
          send({ type: 'text-delta', id: textId, delta });
        };
        // Text streams as it decodes, under a repeat penalty (TEXT_REPEAT_PENALTY); with tools, one paragraph; after
        // tool results it starts with them, goes on for one line at most, and its numbers are theirs (answerStart).
        const start = answerStart(call.prompt);
        const answer = (chat: LocalChatItem[]) =>
          engine.generate({
            ...base,
            repeatPenalty: TEXT_REPEAT_PENALTY,
            ...(offersTools ? { stopTriggers: ['\n\n'] } : {}),
            ...(start?.prefix ? { prefix: start.prefix, stopTriggers: ['\n'] } : {}),
            ...(start ? { grammar: groundedTextGrammar(start.numbers) } : {}),
            history: chat,
            maxTokens: limit,
            onText: sendText,
          });
        const run = async () => {
          if (!grammar) return { result: await answer(history) };
          // A call (or, in `either` mode, the choice to answer in text), written whole under the grammar.
          const decided = await engine.generate({
            ...base,
            history,
            grammar,
            maxTokens: Math.min(limit, TOOL_CALL_MAX_TOKENS),
          });
          const parsed = parseToolCall(decided.text, mode.kind === 'text' ? [] : mode.tools);
          // In `either` mode: the choice to answer, or a call already made since the last answer (its result is
          // in view, a small model calls the clock again after its context card), lead to a text answer.
          const answers =
            mode.kind === 'either' &&
            (isTextChoice(decided.text) || (parsed && repeatsCall(call.prompt, parsed)));
          if (!answers) return { result: decided, parsed };
          const text = await answer(textChat());
          return { result: text, decided, parsed: undefined };
        };
        send({ type: 'stream-start', warnings: [] });
        run()
          .then(({ result, parsed, decided }) => {
            let finishReason: LanguageModelV3FinishReason = {
              unified: result.stopReason === 'length' ? 'length' : 'stop',
              raw: result.stopReason,
            };
            if (parsed) {
              send({
                type: 'tool-call',
                toolCallId: `call_${randomUUID().replace(/-/g, '').slice(0, 24)}`,
                toolName: parsed.toolName,
                input: JSON.stringify(parsed.input),
              });
              finishReason = { unified: 'tool-calls', raw: result.stopReason };
            } else if (grammar && !decided && result.text) {
              // A call cut short (token limit, cancel): shown as text, never run.
              sendText(result.text);
            }
            if (textStarted) send({ type: 'text-end', id: textId });
            send({ type: 'finish', usage: usageOf(result, decided), finishReason });
          })
          .catch((error: unknown) => send({ type: 'error', error }))
          .finally(() => {
            if (open) controller.close();
            open = false;
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

/**
 * The repeat penalty of text answers, on the answer's last 64 tokens: with node-llama-cpp's default (1.1) SmolLM2-135M
 * loops on one phrase until the token limit (issue 35: "What is the capital of France?" in French; a compaction
 * summary of "I'm happy to help you with your bees." 512 tokens long); 1.3 stops it.
 */
const TEXT_REPEAT_PENALTY = 1.3;

type Usage = { inputTokens: number; cachedInputTokens: number; outputTokens: number };

/** The usage of a request: its generations added up (the choice to answer, then the answer). */
function usageOf(result: Usage | undefined, before?: Usage): LanguageModelV3Usage {
  if (result && before)
    result = {
      inputTokens: result.inputTokens + before.inputTokens,
      cachedInputTokens: result.cachedInputTokens + before.cachedInputTokens,
      outputTokens: result.outputTokens + before.outputTokens,
    };
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
