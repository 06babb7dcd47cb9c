/**
 * The real model providers, built from worker configuration only (keys and base URLs never come from a session):
 * `openai` (OpenAI's chat completions API), `anthropic` (the messages API), `openai-compatible` (any server
 * speaking the OpenAI chat API: Ollama, vLLM, llama.cpp, LM Studio) and `local` (a GGUF model run in the worker by
 * llama.cpp, ./local). A provider exists only when configured.
 * Not deterministic: the providers do I/O.
 */
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { ModelProvider } from '../model';
import { AiSdkProvider } from './aiSdk';
import { NO_TOOL_MEDIA, type ToolMediaSupport } from './messages';
import { createLocalProvider, type LocalSettings } from './local/provider';

export { PROVIDER_SETUP } from './setup';

export {
  AiSdkProvider,
  DEFAULT_CHUNK_TIMEOUT_MS,
  type AiSdkProviderName,
  type AiSdkProviderOptions,
} from './aiSdk';
export { modelFailure, retryAfterMs, type ProviderLabels } from './errors';
export {
  ALL_TOOL_MEDIA,
  NO_TOOL_MEDIA,
  fromSdkToolCall,
  toModelMessages,
  toToolSet,
  type ToolMediaSupport,
} from './messages';
export {
  createLocalProvider,
  defaultLocalModelPath,
  localModelPath,
  DEFAULT_LOCAL_MODEL_FILE,
  LOCAL_DEFAULT_MODEL_NAME,
  type LocalSettings,
} from './local/provider';
export { LocalEngine, disposeLocalModels, type LocalEngineSettings } from './local/engine';
export { LocalLanguageModel, type LocalLanguageModelOptions } from './local/model';

/** Provider settings as the worker reads them from its environment. */
export interface ProviderSettings {
  openai?: { apiKey: string; baseURL?: string };
  anthropic?: { apiKey: string; baseURL?: string };
  openaiCompatible?: { baseURL: string; apiKey?: string; name?: string };
  /** The `local` provider (llama.cpp in the worker); registered when given, even when its file is missing. */
  local?: LocalSettings;
  /** Longest wait for the next chunk of a streamed response. */
  chunkTimeoutMs?: number;
  /** Most time one model call waits for rate limits (429) before the turn ends MODEL_RATE_LIMITED (default 5 min). */
  rateLimitWaitMs?: number;
}

/** Anthropic's tool results take images (JPEG, PNG, GIF, WebP) and PDF documents; anything else is described. */
const anthropicToolMedia: ToolMediaSupport = (kind, mimeType) =>
  kind === 'image'
    ? ['image/jpeg', 'image/png', 'image/gif', 'image/webp'].includes(mimeType)
    : mimeType === 'application/pdf';

/** The configured providers by name; unconfigured ones are absent. */
export function createProviders(settings: ProviderSettings): Record<string, ModelProvider> {
  const out: Record<string, ModelProvider> = {};
  const chunk = {
    ...(settings.chunkTimeoutMs !== undefined ? { chunkTimeoutMs: settings.chunkTimeoutMs } : {}),
    ...(settings.rateLimitWaitMs !== undefined ? { rateLimitWaitMs: settings.rateLimitWaitMs } : {}),
  };
  if (settings.openai) {
    const sdk = createOpenAI({
      apiKey: settings.openai.apiKey,
      ...(settings.openai.baseURL ? { baseURL: settings.openai.baseURL } : {}),
    });
    out.openai = new AiSdkProvider({
      name: 'openai',
      model: (id) => sdk.chat(id),
      labels: { keyVar: 'OPENAI_API_KEY', baseUrlVar: 'OPENAI_BASE_URL', secrets: [settings.openai.apiKey] },
      // Chat completions' tool messages hold text only (the SDK would send data parts as JSON text).
      toolMedia: NO_TOOL_MEDIA,
      ...chunk,
    });
  }
  if (settings.anthropic) {
    const sdk = createAnthropic({
      apiKey: settings.anthropic.apiKey,
      ...(settings.anthropic.baseURL ? { baseURL: settings.anthropic.baseURL } : {}),
    });
    out.anthropic = new AiSdkProvider({
      name: 'anthropic',
      model: (id) => sdk(id),
      labels: {
        keyVar: 'ANTHROPIC_API_KEY',
        baseUrlVar: 'ANTHROPIC_BASE_URL',
        secrets: [settings.anthropic.apiKey],
      },
      toolMedia: anthropicToolMedia,
      ...chunk,
    });
  }
  if (settings.openaiCompatible) {
    const c = settings.openaiCompatible;
    const sdk = createOpenAICompatible({
      name: c.name ?? 'openai-compatible',
      baseURL: c.baseURL,
      ...(c.apiKey ? { apiKey: c.apiKey } : {}),
      includeUsage: true,
    });
    out['openai-compatible'] = new AiSdkProvider({
      name: 'openai-compatible',
      model: (id) => sdk.chatModel(id),
      labels: {
        keyVar: 'OPENAI_COMPATIBLE_API_KEY',
        baseUrlVar: 'OPENAI_COMPATIBLE_BASE_URL',
        secrets: c.apiKey ? [c.apiKey] : [],
      },
      toolMedia: NO_TOOL_MEDIA,
      ...chunk,
    });
  }
  if (settings.local) {
    out.local = createLocalProvider({
      ...(settings.chunkTimeoutMs !== undefined ? { chunkTimeoutMs: settings.chunkTimeoutMs } : {}),
      ...settings.local,
    }).provider;
  }
  return out;
}
