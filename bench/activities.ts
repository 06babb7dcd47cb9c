/**
 * Activities and the model provider of the benchmark. The bench model answers instantly with deterministic text
 * of realistic sizes (assistant 1 KB; every other answer calls `k` tools whose results are 4 KB), so both our
 * workflow and the naive one see exactly the same conversation. Records when each request started (latency).
 */
import { defineTool } from '../src/activities/tools';
import type { ModelCallContext, ModelProvider } from '../src/activities/model';
import type { ModelRequest, ModelStepResult } from '../src/activities/types';
import { z } from 'zod';

export const SIZES = { user: 2048, assistant: 1024, toolResult: 4096 } as const;

export interface NaiveEntry {
  role: 'user' | 'assistant' | 'tool';
  content: string;
  toolCalls?: { callId: string; name: string; arguments: Record<string, unknown> | null }[];
}

/** `bench:k=<tools per tool step>` — k=0 gives tool-less steps only. */
export function parseBenchModel(model: string): { k: number } {
  const k = Number(/k=(\d+)/.exec(model)?.[1] ?? '0');
  return { k };
}

export function text(size: number, seed: number): string {
  const unit = `lorem-${seed}-ipsum `;
  return unit.repeat(Math.ceil(size / unit.length)).slice(0, size);
}

/** The answer to the n-th request: with k>0, even requests call k tools and odd ones answer in text. */
export function benchAnswer(model: string, requestIndex: number): ModelStepResult {
  const { k } = parseBenchModel(model);
  const toolCalls =
    k > 0 && requestIndex % 2 === 0
      ? Array.from({ length: k }, (_, i) => ({
          callId: `c${requestIndex}_${i}`,
          name: 'blob',
          arguments: { size: SIZES.toolResult, seed: i },
        }))
      : [];
  return {
    text: text(SIZES.assistant, requestIndex),
    toolCalls,
    finish: toolCalls.length ? 'tool-calls' : 'stop',
  };
}

/** Start times of model requests, by session, for the latency figures. */
export const requestStarts = new Map<string, number[]>();

function noteStart(sessionId: string): void {
  const list = requestStarts.get(sessionId) ?? [];
  list.push(Date.now());
  requestStarts.set(sessionId, list);
}

/** Our provider for the bench: registered under a provider name the session's ModelSpec selects. */
export const benchProvider: ModelProvider = {
  name: 'bench',
  async step(request: ModelRequest): Promise<ModelStepResult> {
    noteStart(request.sessionId);
    const model = ('model' in request.model && request.model.model) || 'bench:k=0';
    return benchAnswer(model, request.requestIndex);
  },
};

/** When the streaming provider showed each prefix of its answer, by session: text length → ms since the epoch. */
export const streamEmits = new Map<string, Map<number, number>>();

/**
 * A provider that writes its answer word by word, one every `STREAM_WORD_MS`, heartbeating the text so far as the
 * AI SDK adapter does at each text delta (the `stream` group measures how late watchers see each word).
 */
export const STREAM_WORDS = 40;
export const STREAM_WORD_MS = 50;
export const streamingProvider: ModelProvider = {
  name: 'anthropic',
  async step(request: ModelRequest, ctx: ModelCallContext): Promise<ModelStepResult> {
    const emits = new Map<number, number>();
    streamEmits.set(request.sessionId, emits);
    let text = '';
    for (let i = 0; i < STREAM_WORDS; i++) {
      text += `word${i} `;
      emits.set(text.length, Date.now());
      ctx.heartbeat({ partialText: text });
      await new Promise((r) => setTimeout(r, STREAM_WORD_MS));
    }
    return { text, toolCalls: [], finish: 'stop' };
  },
};

export const blobTool = defineTool({
  name: 'blob',
  description: 'Returns `size` characters of text.',
  input: z.object({ size: z.number().int().min(0).max(1_000_000), seed: z.number().int() }),
  execute: ({ size, seed }) => text(size, seed),
});

export function createBenchActivities() {
  return {
    async naiveModel(input: {
      model: string;
      requestIndex: number;
      messages: NaiveEntry[];
    }): Promise<ModelStepResult> {
      return benchAnswer(input.model, input.requestIndex);
    },
    async naiveTool(call: { arguments: Record<string, unknown> | null }): Promise<string> {
      if (!call.arguments) return '';
      return text(Number(call.arguments.size ?? SIZES.toolResult), Number(call.arguments.seed ?? 0));
    },
    async noop(marker: string): Promise<string> {
      const id = /^lat:(.+)$/.exec(marker)?.[1];
      if (id) noteStart(id);
      return marker;
    },
  };
}

export type BenchActivities = ReturnType<typeof createBenchActivities>;
