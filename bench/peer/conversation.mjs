/**
 * The bench conversation, as the peer sees it: the same texts and the same answers as our bench model
 * (bench/activities.ts `text` and `benchAnswer` with `bench:k=1`), so both sides carry exactly the same content.
 * Each step: a 2 KB user message → the model answers 1 KB of text and calls `blob` once → the tool returns 4 KB →
 * the model answers 1 KB of text. Pure functions; no I/O.
 */

export const SIZES = { user: 2048, assistant: 1024, toolResult: 4096 };

/** `size` characters of deterministic text (bench/activities.ts `text`). */
export function text(size, seed) {
  const unit = `lorem-${seed}-ipsum `;
  return unit.repeat(Math.ceil(size / unit.length)).slice(0, size);
}

/**
 * The deterministic fake model behind the peer's plugin: a Vercel AI SDK `LanguageModelV4` whose answer depends only
 * on the prompt. The n-th request of a conversation (n = assistant messages already in the prompt) is answered like
 * our bench model's n-th request: after a user message, 1 KB of text plus one `blob` call; after a tool result,
 * 1 KB of text and stop.
 */
export function createBenchLanguageModel(modelId) {
  return {
    specificationVersion: 'v4',
    provider: 'bench',
    modelId,
    supportedUrls: {},
    async doGenerate(options) {
      const prompt = options.prompt ?? [];
      const requestIndex = prompt.filter((m) => m.role === 'assistant').length;
      const last = prompt[prompt.length - 1];
      const callTool = last?.role === 'user';
      const content = [{ type: 'text', text: text(SIZES.assistant, requestIndex) }];
      if (callTool) {
        content.push({
          type: 'tool-call',
          toolCallId: `c${requestIndex}_0`,
          toolName: 'blob',
          input: JSON.stringify({ size: SIZES.toolResult, seed: 0 }),
        });
      }
      return {
        content,
        finishReason: callTool
          ? { unified: 'tool-calls', raw: 'tool_calls' }
          : { unified: 'stop', raw: 'stop' },
        usage: {
          inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 },
          outputTokens: { total: 0, text: 0, reasoning: 0 },
        },
        warnings: [],
      };
    },
    async doStream() {
      throw new Error('the bench model does not stream');
    },
  };
}

/** A `ProviderV4` whose every language model is the bench model (what `AiSdkPlugin({ modelProvider })` takes). */
export const benchProvider = {
  specificationVersion: 'v4',
  languageModel: (modelId) => createBenchLanguageModel(modelId),
  embeddingModel: () => {
    throw new Error('no embedding model in the bench');
  },
  imageModel: () => {
    throw new Error('no image model in the bench');
  },
};

/** The tool, run as an activity: returns `size` characters (bench/activities.ts `blobTool`). */
export async function blob({ size, seed }) {
  return text(size, seed);
}
