/**
 * llama.cpp in the worker process, through node-llama-cpp: the CPU prebuilt only (`gpu: false`, `build: 'never'`:
 * no compiler, no download), models loaded lazily on first use and then shared by every activity of the process
 * (one context per model file and settings), generations run one at a time through a bounded FIFO queue (a single
 * decode thread by default: llama.cpp slows down many times when it competes for cores). Not deterministic: native
 * I/O and threads; runs in activities only.
 *
 * Throws ApplicationFailures the workflow can act on: a missing model file is non-retryable and says what to run;
 * a full queue is retryable (ModelUnavailable), so Temporal's backoff spreads the load.
 */
import { existsSync } from 'node:fs';
import { ApplicationFailure } from '@temporalio/common';
import type { Llama, LlamaChat, LlamaContext, LlamaGrammar, LlamaModel } from 'node-llama-cpp' with {
  'resolution-mode': 'import',
};
import { FailureTypes } from '../../../contract';
import type { LocalChatItem } from './prompt';

export interface LocalEngineSettings {
  /** Decode threads (default 1). */
  threads?: number;
  /** Context window in tokens (default 4096). */
  contextSize?: number;
  /** Most requests waiting for or holding the model at once; more fail as retryable (default 64). */
  maxQueue?: number;
}

export const DEFAULT_LOCAL_THREADS = 1;
export const DEFAULT_LOCAL_CONTEXT_SIZE = 4096;
export const DEFAULT_LOCAL_MAX_QUEUE = 64;

export interface GenerateRequest {
  modelPath: string;
  history: LocalChatItem[];
  /** GBNF the output must match (tool mode); none for free text. */
  grammar?: string;
  maxTokens: number;
  temperature: number;
  /** Penalty on tokens the answer already wrote (1: off; default node-llama-cpp's, 1.1 on the last 64). */
  repeatPenalty?: number;
  /**
   * The start of the answer, as if the model had written it: it continues from there (or stops). Part of the result's
   * text and output tokens, and passed to `onText` first.
   */
  prefix?: string;
  /** Texts that end the answer where they appear (not included in it). */
  stopTriggers?: string[];
  signal?: AbortSignal;
  onText?: (text: string) => void;
}

export interface GenerateResult {
  text: string;
  stopReason: 'stop' | 'length' | 'abort';
  /** Tokens of the prompt, of which `cachedInputTokens` were already in the context (not evaluated again). */
  inputTokens: number;
  cachedInputTokens: number;
  outputTokens: number;
}

interface Loaded {
  model: LlamaModel;
  context: LlamaContext;
  chat: LlamaChat;
  grammars: Map<string, Promise<LlamaGrammar>>;
}

let llamaPromise: Promise<Llama> | undefined;
const loadedModels = new Map<string, Promise<Loaded>>();

/** node-llama-cpp's runtime for this process (CPU prebuilt), loaded once. */
function loadLlama(): Promise<Llama> {
  llamaPromise ??= (async () => {
    const { getLlama, LlamaLogLevel } = await import('node-llama-cpp');
    return getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, progressLogs: false });
  })().catch((err: unknown) => {
    llamaPromise = undefined;
    throw ApplicationFailure.create({
      type: FailureTypes.ModelRequestInvalid,
      nonRetryable: true,
      message: `the local model runtime (node-llama-cpp, CPU prebuilt for ${process.platform}-${process.arch}) did not load: ${messageOf(err)}`,
    });
  });
  return llamaPromise;
}

/** A FIFO of generations: one runs at a time; at most `max` run or wait. Exported for tests. */
export class SerialQueue {
  private tail: Promise<void> = Promise.resolve();
  private size = 0;

  constructor(private readonly max: number) {}

  get pending(): number {
    return this.size;
  }

  async run<T>(signal: AbortSignal | undefined, body: () => Promise<T>): Promise<T> {
    if (this.size >= this.max) {
      throw ApplicationFailure.create({
        type: FailureTypes.ModelUnavailable,
        message: `the local model is busy: ${this.size} requests are running or waiting (most ${this.max})`,
      });
    }
    this.size++;
    const previous = this.tail;
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    // The next request waits for the previous one and this one, even when this one leaves the queue early.
    this.tail = previous.then(() => mine);
    try {
      await untilOrAborted(previous, signal);
      return await body();
    } finally {
      this.size--;
      release();
    }
  }
}

const queues = new Map<number, SerialQueue>();

/** The model runtime of this process: models by path, generations serialised. */
export class LocalEngine {
  private readonly threads: number;
  private readonly contextSize: number;
  private readonly queue: SerialQueue;

  constructor(settings: LocalEngineSettings = {}) {
    this.threads = settings.threads ?? DEFAULT_LOCAL_THREADS;
    this.contextSize = settings.contextSize ?? DEFAULT_LOCAL_CONTEXT_SIZE;
    const max = settings.maxQueue ?? DEFAULT_LOCAL_MAX_QUEUE;
    // One queue per process (per bound): generations compete for the same cores whatever the model.
    let queue = queues.get(max);
    if (!queue) queues.set(max, (queue = new SerialQueue(max)));
    this.queue = queue;
  }

  /** Requests running or waiting in this process. */
  get pending(): number {
    return this.queue.pending;
  }

  /** Loads a model now (e.g. while a demo starts) so the first answer does not wait for it. */
  async preload(modelPath: string): Promise<void> {
    await this.load(modelPath);
  }

  /** One generation, after the ones queued before it. Throws an ApplicationFailure for a missing model. */
  generate(request: GenerateRequest): Promise<GenerateResult> {
    return this.queue.run(request.signal, () => this.generateNow(request));
  }

  private async generateNow(request: GenerateRequest): Promise<GenerateResult> {
    const loaded = await this.load(request.modelPath);
    const grammar = request.grammar ? await grammarFor(loaded, request.grammar) : undefined;
    const sequence = loaded.chat.sequence;
    const before = sequence.tokenMeter.getState();
    const prefix = request.prefix ?? '';
    let history = request.history;
    if (prefix) {
      history = history.slice(0, -1);
      history.push({ type: 'model', response: [prefix] });
      request.onText?.(prefix);
    }
    let text = prefix;
    let stopReason: GenerateResult['stopReason'] = 'stop';
    try {
      const response = await loaded.chat.generateResponse(history, {
        maxTokens: request.maxTokens,
        temperature: request.temperature,
        ...(grammar ? { grammar } : {}),
        ...(request.repeatPenalty !== undefined ? { repeatPenalty: { penalty: request.repeatPenalty } } : {}),
        ...(request.stopTriggers?.length ? { customStopTriggers: request.stopTriggers } : {}),
        ...(request.signal ? { signal: request.signal, stopOnAbortSignal: true } : {}),
        onTextChunk: (chunk: string) => {
          text += chunk;
          request.onText?.(chunk);
        },
      });
      text = prefix + response.response;
      const reason = response.metadata.stopReason;
      stopReason = reason === 'maxTokens' ? 'length' : reason === 'abort' ? 'abort' : 'stop';
    } catch (err) {
      // Cancelled before the first token: node-llama-cpp throws the signal's reason.
      if (!request.signal?.aborted) throw err;
      stopReason = 'abort';
    }
    const used = sequence.tokenMeter.diff(before);
    const outputTokens = used.usedOutputTokens + (prefix ? loaded.model.tokenize(prefix).length : 0);
    const inputTokens = Math.max(sequence.contextTokens.length - outputTokens, used.usedInputTokens);
    return {
      text,
      stopReason,
      inputTokens,
      cachedInputTokens: Math.max(inputTokens - used.usedInputTokens, 0),
      outputTokens,
    };
  }

  private load(modelPath: string): Promise<Loaded> {
    const key = `${modelPath}|${this.contextSize}|${this.threads}`;
    let loaded = loadedModels.get(key);
    if (!loaded) {
      loaded = this.loadNow(modelPath).catch((err: unknown) => {
        loadedModels.delete(key);
        throw err;
      });
      loadedModels.set(key, loaded);
    }
    return loaded;
  }

  private async loadNow(modelPath: string): Promise<Loaded> {
    if (!existsSync(modelPath)) {
      throw ApplicationFailure.create({
        type: FailureTypes.ModelRequestInvalid,
        nonRetryable: true,
        message: `the local model file ${modelPath} does not exist: run \`npm run setup\` in the agent-sessions project (installs the default model into .venv/models), or set LOCAL_MODEL_PATH on the worker to a GGUF file`,
      });
    }
    const llama = await loadLlama();
    const { LlamaChat } = await import('node-llama-cpp');
    let model: LlamaModel;
    try {
      model = await llama.loadModel({ modelPath, gpuLayers: 0 });
    } catch (err) {
      throw ApplicationFailure.create({
        type: FailureTypes.ModelRequestInvalid,
        nonRetryable: true,
        message: `the local model file ${modelPath} could not be loaded (is it a GGUF model?): ${messageOf(err)}`,
      });
    }
    const context = await model.createContext({
      contextSize: { max: this.contextSize },
      threads: this.threads,
      sequences: 1,
    });
    const chat = new LlamaChat({ contextSequence: context.getSequence() });
    return { model, context, chat, grammars: new Map() };
  }
}

/** Frees every loaded model of this process (tests and benchmarks end with it; workers just exit). */
export async function disposeLocalModels(): Promise<void> {
  const all = [...loadedModels.values()];
  loadedModels.clear();
  for (const loaded of all) {
    const l = await loaded.catch(() => undefined);
    if (!l) continue;
    l.chat.dispose();
    await l.context.dispose();
    await l.model.dispose();
  }
}

async function grammarFor(loaded: Loaded, gbnf: string): Promise<LlamaGrammar> {
  let grammar = loaded.grammars.get(gbnf);
  if (!grammar) {
    const llama = await loadLlama();
    grammar = llama.createGrammar({ grammar: gbnf });
    loaded.grammars.set(gbnf, grammar);
    // A small cache: a session offers the same tools on every request.
    if (loaded.grammars.size > 32) loaded.grammars.delete(loaded.grammars.keys().next().value!);
  }
  return grammar;
}

/** Resolves when `promise` settles; rejects with the signal's reason when the signal fires first. */
function untilOrAborted(promise: Promise<void>, signal: AbortSignal | undefined): Promise<void> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => reject(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    void promise.then(
      () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
}

function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error('aborted');
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
