/**
 * The worker's model configuration from its environment: the providers whose keys / base URLs are set (OPENAI_*,
 * ANTHROPIC_*, OPENAI_COMPATIBLE_*) and the default model (AGENT_SESSIONS_DEFAULT_MODEL). Session input never
 * reaches this: a session can only name a provider and a model. Not deterministic (reads the environment).
 */
import type { ModelProvider } from '../activities/model';
import { createProviders, PROVIDER_SETUP } from '../activities/providers';
import { parseModelRef, type ModelSpec } from '../domain/wire';
import { loadConfig, type Config } from './config';

/**
 * The model providers the configuration sets up (only those whose keys / base URLs are set) and the default model
 * (AGENT_SESSIONS_DEFAULT_MODEL). Throws when the default model names a provider that is not configured.
 */
export function modelsFromConfig(config: Config): {
  providers: Record<string, ModelProvider>;
  defaultModel?: ModelSpec;
} {
  const { chunkTimeoutMs, openai, anthropic, openaiCompatible } = config.providers;
  const providers = createProviders({
    ...(openai ? { openai } : {}),
    ...(anthropic ? { anthropic } : {}),
    ...(openaiCompatible ? { openaiCompatible } : {}),
    ...(chunkTimeoutMs !== undefined ? { chunkTimeoutMs } : {}),
  });
  if (!config.defaultModel) return { providers };
  const defaultModel = parseModelRef(config.defaultModel);
  if (defaultModel.provider !== 'scripted' && !providers[defaultModel.provider]) {
    throw new Error(
      `AGENT_SESSIONS_DEFAULT_MODEL=${config.defaultModel} needs the ${defaultModel.provider} provider: ${PROVIDER_SETUP[defaultModel.provider]}`,
    );
  }
  return { providers, defaultModel };
}

/** The configured providers of an environment (process.env by default). Throws an Error naming a bad variable. */
export function providersFromEnv(env: NodeJS.ProcessEnv = process.env): Record<string, ModelProvider> {
  return modelsFromConfig(loadConfig(env)).providers;
}

/** The default model an environment names, if any. Throws when its provider is not configured. */
export function defaultModelFromEnv(env: NodeJS.ProcessEnv = process.env): ModelSpec | undefined {
  return modelsFromConfig(loadConfig(env)).defaultModel;
}
