/**
 * Worker and client configuration from the environment. Not deterministic (reads process.env): never import from
 * workflow code. Every variable the project reads is listed in ENV_VARS, so docs and docker-compose can be checked
 * against it.
 */
import { z } from 'zod';
import { parseModelRef } from '../domain/wire';

/** Every environment variable the worker and the CLI read, with what it does. */
export const ENV_VARS = {
  TEMPORAL_ADDRESS: 'host:port of a Temporal frontend; when set, no embedded dev server is started',
  TEMPORAL_NAMESPACE: 'Temporal namespace (default "default")',
  TEMPORAL_API_KEY: 'API key for Temporal Cloud (implies TLS)',
  TEMPORAL_TLS_CERT_PATH: 'client certificate for mTLS (PEM)',
  TEMPORAL_TLS_KEY_PATH: 'client key for mTLS (PEM)',
  TEMPORAL_TLS_CA_PATH: 'CA certificate of the server (PEM), optional',
  TEMPORAL_TLS_SERVER_NAME: 'server name for TLS verification, optional',
  TASK_QUEUE: 'task queue of the agentSession workflow and its activities (default "agent-sessions")',
  AGENT_SESSIONS_TOOLSETS: 'comma-separated toolsets the worker registers (e.g. "testing")',
  AGENT_SESSIONS_DATA_DIR:
    'folder of the embedded dev server SQLite file (default ".data" in the working folder)',
  TEMPORAL_CLI_PATH: 'path of the Temporal CLI binary (dev server)',
  TEMPORAL_TEST_SERVER_PATH: 'path of the Temporal time-skipping test server binary',
  OPENAI_API_KEY: 'key of the `openai` model provider; the provider is registered only when it is set',
  OPENAI_BASE_URL: 'base URL of the OpenAI API (default https://api.openai.com/v1), e.g. a proxy',
  ANTHROPIC_API_KEY: 'key of the `anthropic` model provider; the provider is registered only when it is set',
  ANTHROPIC_BASE_URL: 'base URL of the Anthropic API (default https://api.anthropic.com/v1)',
  OPENAI_COMPATIBLE_BASE_URL:
    'base URL of an OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio; e.g. http://localhost:11434/v1); registers the `openai-compatible` provider',
  OPENAI_COMPATIBLE_API_KEY: 'key sent to the OpenAI-compatible server as a bearer token, optional',
  AGENT_SESSIONS_DEFAULT_MODEL:
    'model of sessions that name none, as provider:model (e.g. "openai:gpt-4o-mini"); default the offline scripted model',
  AGENT_SESSIONS_MODEL_CHUNK_TIMEOUT_MS:
    'longest wait for the next chunk of a streamed model response before the attempt is retried (default 120000)',
  AGENT_SESSIONS_HOOKS_FILE:
    'JSON file naming the HTTP and command hooks the worker registers (see README "Hooks")',
  AGENT_SESSIONS_SESSION: 'session id of the `agent-sessions dev` chat (default "demo")',
  AGENT_SESSIONS_DEMO_MODEL:
    'OpenAI model of a new `agent-sessions dev` demo session when OPENAI_API_KEY is set (default gpt-4o-mini)',
} as const;

export type EnvVarName = keyof typeof ENV_VARS;

export const DEFAULT_TASK_QUEUE = 'agent-sessions';
export const DEFAULT_NAMESPACE = 'default';

const HttpUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });

const ConfigSchema = z.object({
  address: z.string().min(1).optional(),
  namespace: z.string().min(1).default(DEFAULT_NAMESPACE),
  taskQueue: z.string().min(1).default(DEFAULT_TASK_QUEUE),
  apiKey: z.string().min(1).optional(),
  tls: z
    .object({
      certPath: z.string().min(1).optional(),
      keyPath: z.string().min(1).optional(),
      caPath: z.string().min(1).optional(),
      serverName: z.string().min(1).optional(),
    })
    .refine((t) => Boolean(t.certPath) === Boolean(t.keyPath), {
      message: 'TEMPORAL_TLS_CERT_PATH and TEMPORAL_TLS_KEY_PATH must be set together',
    }),
  toolsets: z.array(z.string().min(1)).default([]),
  dataDir: z.string().min(1).default('.data'),
  providers: z.object({
    openai: z.object({ apiKey: z.string().min(1), baseURL: HttpUrl.optional() }).optional(),
    anthropic: z.object({ apiKey: z.string().min(1), baseURL: HttpUrl.optional() }).optional(),
    openaiCompatible: z.object({ baseURL: HttpUrl, apiKey: z.string().min(1).optional() }).optional(),
    chunkTimeoutMs: z.coerce.number().int().min(1000).max(3_600_000).optional(),
  }),
  defaultModel: z.string().min(1).optional(),
  hooksFile: z.string().min(1).optional(),
});

export type Config = z.infer<typeof ConfigSchema>;

/** Reads the configuration from an environment (process.env by default). Throws an Error naming the variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const blank = (v: string | undefined) => (v === undefined || v.trim() === '' ? undefined : v.trim());
  const raw = {
    address: blank(env.TEMPORAL_ADDRESS),
    namespace: blank(env.TEMPORAL_NAMESPACE),
    taskQueue: blank(env.TASK_QUEUE),
    apiKey: blank(env.TEMPORAL_API_KEY),
    tls: {
      certPath: blank(env.TEMPORAL_TLS_CERT_PATH),
      keyPath: blank(env.TEMPORAL_TLS_KEY_PATH),
      caPath: blank(env.TEMPORAL_TLS_CA_PATH),
      serverName: blank(env.TEMPORAL_TLS_SERVER_NAME),
    },
    toolsets: blank(env.AGENT_SESSIONS_TOOLSETS)
      ?.split(',')
      .map((s) => s.trim())
      .filter(Boolean),
    dataDir: blank(env.AGENT_SESSIONS_DATA_DIR),
    providers: {
      openai: blank(env.OPENAI_API_KEY) && {
        apiKey: blank(env.OPENAI_API_KEY),
        baseURL: blank(env.OPENAI_BASE_URL),
      },
      anthropic: blank(env.ANTHROPIC_API_KEY) && {
        apiKey: blank(env.ANTHROPIC_API_KEY),
        baseURL: blank(env.ANTHROPIC_BASE_URL),
      },
      openaiCompatible: blank(env.OPENAI_COMPATIBLE_BASE_URL) && {
        baseURL: blank(env.OPENAI_COMPATIBLE_BASE_URL),
        apiKey: blank(env.OPENAI_COMPATIBLE_API_KEY),
      },
      chunkTimeoutMs: blank(env.AGENT_SESSIONS_MODEL_CHUNK_TIMEOUT_MS),
    },
    defaultModel: blank(env.AGENT_SESSIONS_DEFAULT_MODEL),
    hooksFile: blank(env.AGENT_SESSIONS_HOOKS_FILE),
  };
  const parsed = ConfigSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.join('.') ?? '';
    throw new Error(`invalid configuration: ${ENV_NAMES[field] ?? (field || 'env')}: ${issue?.message}`);
  }
  if (parsed.data.defaultModel) {
    try {
      parseModelRef(parsed.data.defaultModel);
    } catch (err) {
      throw new Error(`invalid configuration: AGENT_SESSIONS_DEFAULT_MODEL: ${(err as Error).message}`);
    }
  }
  return parsed.data;
}

/** The variable behind each configuration field whose name differs from it (for error messages). */
const ENV_NAMES: Record<string, string> = {
  'providers.openai.baseURL': 'OPENAI_BASE_URL',
  'providers.anthropic.baseURL': 'ANTHROPIC_BASE_URL',
  'providers.openaiCompatible.baseURL': 'OPENAI_COMPATIBLE_BASE_URL',
  'providers.chunkTimeoutMs': 'AGENT_SESSIONS_MODEL_CHUNK_TIMEOUT_MS',
};

/** Whether the configuration asks for TLS (an API key or client certificates). */
export function wantsTls(config: Config): boolean {
  return Boolean(config.apiKey || config.tls.certPath || config.tls.caPath);
}
