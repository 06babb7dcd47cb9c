/**
 * The `local` provider: a GGUF model run in the worker by llama.cpp (./engine), as an AI SDK language model
 * (./model) behind the shared AiSdkProvider. Which files may run comes only from the worker's configuration
 * (LOCAL_MODEL_PATH, LOCAL_MODELS): a session names a model (`{provider:'local', model?}`), never a path. Not
 * deterministic: runs in activities.
 */
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { FailureTypes } from '../../../contract';
import { findProjectRoot } from '../../../devserver/binaries';
import { toolsVenv } from '../../../devserver/home';
import { AiSdkProvider } from '../aiSdk';
import { NO_TOOL_MEDIA } from '../messages';
import { LocalEngine, type LocalEngineSettings } from './engine';
import { LocalLanguageModel } from './model';

/** What setup installs (scripts/setup.sh), relative to the tools venv (src/devserver/home.ts). */
export const DEFAULT_LOCAL_MODEL_FILE = path.join('models', 'SmolLM2-135M-Instruct.Q4_1.gguf');
/** The name of the model at LOCAL_MODEL_PATH (a session that names no local model gets it). */
export const LOCAL_DEFAULT_MODEL_NAME = 'default';
/** A streamed local answer may wait in the queue behind others: the silence allowed before a retry (10 min). */
export const LOCAL_CHUNK_TIMEOUT_MS = 600_000;

export interface LocalSettings extends LocalEngineSettings {
  /** GGUF file of the default model (default: the one `npm run setup` installs into the project's .venv). */
  modelPath?: string;
  /** Other GGUF files sessions may name, by name. */
  models?: Record<string, string>;
  /** Most tokens of a text answer (default 512). */
  maxTokens?: number;
  /** Longest wait for the next chunk of an answer before the attempt is retried (default 10 min). */
  chunkTimeoutMs?: number;
}

/** The default model's file: LOCAL_MODEL_PATH, else `models/…` in the tools venv (a checkout's `.venv`). */
export function defaultLocalModelPath(settings: Pick<LocalSettings, 'modelPath'> = {}): string | undefined {
  if (settings.modelPath) return path.resolve(settings.modelPath);
  return path.join(toolsVenv(findProjectRoot()), DEFAULT_LOCAL_MODEL_FILE);
}

/** The file of the model a session names; throws a non-retryable failure naming the allowed names. */
export function localModelPath(settings: LocalSettings, name: string | undefined): string {
  const wanted = name?.trim() || LOCAL_DEFAULT_MODEL_NAME;
  const file =
    wanted === LOCAL_DEFAULT_MODEL_NAME ? defaultLocalModelPath(settings) : settings.models?.[wanted];
  if (file) return path.resolve(file);
  const allowed = [LOCAL_DEFAULT_MODEL_NAME, ...Object.keys(settings.models ?? {})];
  throw ApplicationFailure.create({
    type: FailureTypes.ModelRequestInvalid,
    nonRetryable: true,
    message:
      wanted === LOCAL_DEFAULT_MODEL_NAME
        ? 'the local provider has no default model here: set LOCAL_MODEL_PATH on the worker to a GGUF file'
        : `local model "${wanted}" is not configured on this worker (configured: ${allowed.join(', ')}): add it to LOCAL_MODELS as ${wanted}=/path/to/file.gguf`,
  });
}

/** The `local` provider over one engine (one loaded model per file and process). */
export function createLocalProvider(settings: LocalSettings = {}): {
  provider: AiSdkProvider;
  engine: LocalEngine;
} {
  const engine = new LocalEngine(settings);
  const provider = new AiSdkProvider({
    name: 'local',
    model: (id) =>
      new LocalLanguageModel({
        engine,
        modelPath: localModelPath(settings, id),
        modelId: id || LOCAL_DEFAULT_MODEL_NAME,
        ...(settings.maxTokens !== undefined ? { maxTokens: settings.maxTokens } : {}),
      }),
    labels: { baseUrlVar: 'LOCAL_MODEL_PATH' },
    chunkTimeoutMs: settings.chunkTimeoutMs ?? LOCAL_CHUNK_TIMEOUT_MS,
    // A text-only model: binary blocks of tool results reach it as their one-line descriptions.
    toolMedia: NO_TOOL_MEDIA,
  });
  return { provider, engine };
}
