/**
 * The worker's model configuration from its environment: the providers whose keys / base URLs are set (OPENAI_*,
 * ANTHROPIC_*, OPENAI_COMPATIBLE_*), the `local` provider (LOCAL_MODEL_*; always) and the default model
 * (AGENT_SESSIONS_DEFAULT_MODEL). Session input never reaches this: a session can only name a provider and a
 * model. Not deterministic (reads the environment).
 */
import type { ModelProvider } from '../activities/model';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { createProviders, defaultLocalModelPath, LocalEngine, PROVIDER_SETUP } from '../activities/providers';
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
  const { chunkTimeoutMs, rateLimitWaitMs, openai, anthropic, openaiCompatible, local } = config.providers;
  const providers = createProviders({
    ...(openai ? { openai } : {}),
    ...(anthropic ? { anthropic } : {}),
    ...(openaiCompatible ? { openaiCompatible } : {}),
    // Always registered: it needs no key. A missing model file fails the turn saying what to run.
    local: withoutUndefined(local),
    ...(chunkTimeoutMs !== undefined ? { chunkTimeoutMs } : {}),
    ...(rateLimitWaitMs !== undefined ? { rateLimitWaitMs } : {}),
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

function withoutUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

/**
 * The file of the local provider's default model under this configuration, whether it is there (`installed`), and
 * whether node-llama-cpp, the package's optional peer that runs it, can be loaded here (`runtime`).
 */
export function localModelStatus(config: Config): { path?: string; installed: boolean; runtime: boolean } {
  const file = defaultLocalModelPath(config.providers.local);
  const runtime = localRuntimeInstalled();
  return file ? { path: file, installed: existsSync(file), runtime } : { installed: false, runtime };
}

/** Whether node-llama-cpp is installed where this package can import it (its exports hide package.json). */
export function localRuntimeInstalled(): boolean {
  return (require.resolve.paths('node-llama-cpp') ?? []).some((dir) =>
    existsSync(path.join(dir, 'node-llama-cpp', 'package.json')),
  );
}

/**
 * Loads the local provider's default model into this process now (the worker's activities then find it loaded),
 * so a first answer does not wait for it. Resolves false when it could not load (the turn will say why).
 */
export async function preloadLocalModel(config: Config): Promise<boolean> {
  const { path: file, installed, runtime } = localModelStatus(config);
  if (!file || !installed || !runtime) return false;
  return new LocalEngine(withoutUndefined(config.providers.local)).preload(file).then(
    () => true,
    () => false,
  );
}
