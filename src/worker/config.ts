/**
 * Worker and client configuration from the environment, and the connection options (address, TLS, API key) both
 * Temporal connections take. The light public entry of src/worker: it loads neither Temporal package, so client
 * commands use it without paying for the worker (src/worker/index.ts is the other entry). Not deterministic (reads
 * process.env and the TLS files): never import from workflow code. Every variable the project reads is listed in
 * ENV_VARS, so docs and docker-compose can be checked against it.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { KeyringSchema } from '../codec/keys';
import { DEFAULT_TASK_QUEUE } from '../contract';
import { MAX_RESULT_CAP_BYTES } from '../domain/sizes';
import { issueField } from '../domain/util';
import { BuildIdSchema, DeploymentNameSchema } from './versioning';
import { ModelPricesSchema, parseModelRef } from '../domain/wire';

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
  AGENT_SESSIONS_TOOLSETS:
    'comma-separated toolsets the worker registers: "testing", "demo" (clock, calculator), "subsessions" (delegate)',
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
  AGENT_SESSIONS_MODEL_RATE_LIMIT_WAIT_MS:
    "most milliseconds one model call waits in total for the provider's rate limits (429, Retry-After plus jitter, inside the attempt) before the turn ends MODEL_RATE_LIMITED (default 300000; 0: each 429 fails an attempt)",
  AGENT_SESSIONS_MAX_ANSWER_BYTES:
    'most UTF-8 bytes of one model answer (text, reasoning and tool-call arguments); a stream is cut there and the turn ends MODEL_ANSWER_TOO_LARGE (default 1048576, at most 1966080)',
  AGENT_SESSIONS_MAX_TOOL_RESULT_BYTES:
    'most bytes of one tool result as JSON; a larger one becomes a TOOL_RESULT_TOO_LARGE error the model reads (default 1572864, at most 1966080)',
  AGENT_SESSIONS_MODEL_PRICES:
    'prices of models by label, as JSON: {"openai:gpt-4o-mini": {"inputPerMillion": 0.15, "outputPerMillion": 0.6}} (currency units per million tokens); priced answers carry usage.costMicros, which budgets can limit',
  AGENT_SESSIONS_HOOKS_FILE:
    'JSON file naming the HTTP and command hooks the worker registers (see README "Hooks")',
  AGENT_SESSIONS_UI_TOKEN:
    'access token of `agent-sessions ui` (watch, send, approve, cancel), at least 16 characters; default a new one per run',
  AGENT_SESSIONS_UI_READ_TOKEN:
    'read-only token of `agent-sessions ui` (watch only), at least 16 characters; default a new one per run',
  AGENT_SESSIONS_MCP_TOKEN:
    'bearer token of `agent-sessions mcp --http`, at least 16 characters; default a new one per run, printed to stderr',
  AGENT_SESSIONS_MCP_FILE:
    'JSON file naming the MCP servers whose tools sessions may select as mcp:<server> ({"mcpServers": {name: {command, args, env, cwd} | {url, headers}}}; ${VAR} in env and headers reads the environment; see README "MCP tools")',
  AGENT_SESSIONS_SESSION: 'session id of the `agent-sessions dev` chat (default "demo")',
  AGENT_SESSIONS_DEMO_MODEL:
    'model of a new `agent-sessions dev` demo session: "scripted", "local", "provider:model", or an OpenAI model name used when OPENAI_API_KEY is set (default gpt-4o-mini with a key, else the local model when installed, else scripted)',
  LOCAL_MODEL_PATH:
    "GGUF file of the `local` provider's default model (default .venv/models/SmolLM2-135M-Instruct.Q4_1.gguf, installed by `npm run setup`)",
  LOCAL_MODELS:
    'more GGUF files sessions may name with {provider:"local", model}: comma-separated name=path pairs (e.g. "qwen=/models/qwen2.5-0.5b-instruct-q4_k_m.gguf")',
  LOCAL_MODEL_THREADS: 'decode threads of the local model (default 1)',
  LOCAL_MODEL_CONTEXT_SIZE: 'context window of the local model in tokens (default 4096)',
  LOCAL_MODEL_MAX_TOKENS: 'most tokens of one local model answer (default 512)',
  AGENT_SESSIONS_ENCRYPTION_KEY:
    'turns on encrypted history: the key that encrypts every payload (AES-256-GCM), as KEY_ID:BASE64 with a 32-byte key (e.g. "k1:$(openssl rand -base64 32)"); the worker, the client and the CLI need the same keys',
  AGENT_SESSIONS_ENCRYPTION_OLD_KEYS:
    'earlier keys, comma-separated KEY_ID:BASE64, that still decrypt what they encrypted (key rotation); they never encrypt',
  AGENT_SESSIONS_WORKFLOW_BUNDLE:
    'workflow code of the worker: a bundle file to load, or "off" to bundle the workflows at start (default: dist/workflow-bundle.js, written by `npm run build`, when running from dist/)',
  AGENT_SESSIONS_VERSIONING:
    '"off" runs the worker unversioned; default on: the worker is a version of a Temporal Worker Deployment and sessions are pinned to it (docs/upgrades.md)',
  AGENT_SESSIONS_DEPLOYMENT:
    'Worker Deployment of the worker (default: the task queue\'s name, "." as "-"); workers of one service share it',
  AGENT_SESSIONS_BUILD_ID:
    "the worker's build id in its deployment (default: a hash of its workflow bundle, e.g. wf-3f2a…); set it (e.g. to the image tag) when workers bundle at start on machines with different paths",
  LOG_LEVEL: 'least severe log level the worker prints: trace, debug, info (default), warn or error',
  METRICS_ADDRESS:
    "host:port where the worker serves Prometheus metrics (the SDK runtime's and the sessions'; docs/observability.md); off when unset",
  OTEL_EXPORTER_OTLP_ENDPOINT:
    'OTLP/HTTP endpoint (e.g. http://127.0.0.1:4318): turns tracing on for the worker and the CLI; the other standard OTEL_* variables apply (docs/observability.md)',
  OTEL_SERVICE_NAME: 'service.name of the exported spans (default agent-sessions-worker, agent-sessions-cli)',
  LOG_FORMAT:
    'worker log lines: "json" (one object per line) or "pretty" (default: pretty when stderr is a terminal, else json)',
} as const;

export type EnvVarName = keyof typeof ENV_VARS;

/** The namespace clients and workers use when TEMPORAL_NAMESPACE is unset (the cluster tool registers it). */
export const DEFAULT_NAMESPACE = 'default';

/** LOG_LEVEL values, least severe first. */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error'] as const;
export type LogLevelName = (typeof LOG_LEVELS)[number];

const HttpUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });

/** A cap on an activity's result (src/activities/resultSizes.ts): 1 KiB up to what fits Temporal's payload limit. */
const ResultCap = z.coerce
  .number()
  .int()
  .min(1024, 'at least 1024 bytes')
  .max(MAX_RESULT_CAP_BYTES, `at most ${MAX_RESULT_CAP_BYTES} bytes (Temporal's payload limit is 2 MiB)`);

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
    rateLimitWaitMs: z.coerce.number().int().min(0).max(3_600_000).optional(),
    local: z.object({
      modelPath: z.string().min(1).optional(),
      models: z
        .record(
          z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'names are letters, digits and _ . - only'),
          z.string().min(1),
        )
        .optional(),
      threads: z.coerce.number().int().min(1).max(256).optional(),
      contextSize: z.coerce.number().int().min(256).max(1_048_576).optional(),
      maxTokens: z.coerce.number().int().min(1).max(1_000_000).optional(),
    }),
  }),
  defaultModel: z.string().min(1).optional(),
  maxAnswerBytes: ResultCap.optional(),
  maxToolResultBytes: ResultCap.optional(),
  hooksFile: z.string().min(1).optional(),
  modelPrices: ModelPricesSchema.optional(),
  mcpFile: z.string().min(1).optional(),
  encryption: KeyringSchema,
  workflowBundle: z.string().min(1).optional(),
  versioning: z.enum(['on', 'off'], { error: 'expected on or off' }).default('on'),
  deploymentName: DeploymentNameSchema.optional(),
  buildId: BuildIdSchema.optional(),
  logLevel: z.enum(LOG_LEVELS, { error: `expected one of ${LOG_LEVELS.join(', ')}` }).default('info'),
  logFormat: z.enum(['json', 'pretty'], { error: 'expected json or pretty' }).optional(),
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
      rateLimitWaitMs: blank(env.AGENT_SESSIONS_MODEL_RATE_LIMIT_WAIT_MS),
      local: {
        modelPath: blank(env.LOCAL_MODEL_PATH),
        models: namedPaths(blank(env.LOCAL_MODELS)),
        threads: blank(env.LOCAL_MODEL_THREADS),
        contextSize: blank(env.LOCAL_MODEL_CONTEXT_SIZE),
        maxTokens: blank(env.LOCAL_MODEL_MAX_TOKENS),
      },
    },
    defaultModel: blank(env.AGENT_SESSIONS_DEFAULT_MODEL),
    maxAnswerBytes: blank(env.AGENT_SESSIONS_MAX_ANSWER_BYTES),
    maxToolResultBytes: blank(env.AGENT_SESSIONS_MAX_TOOL_RESULT_BYTES),
    hooksFile: blank(env.AGENT_SESSIONS_HOOKS_FILE),
    modelPrices: jsonVar(env, 'AGENT_SESSIONS_MODEL_PRICES'),
    mcpFile: blank(env.AGENT_SESSIONS_MCP_FILE),
    encryption: {
      current: blank(env.AGENT_SESSIONS_ENCRYPTION_KEY),
      previous: blank(env.AGENT_SESSIONS_ENCRYPTION_OLD_KEYS)
        ?.split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    },
    workflowBundle: blank(env.AGENT_SESSIONS_WORKFLOW_BUNDLE),
    versioning: blank(env.AGENT_SESSIONS_VERSIONING)?.toLowerCase(),
    deploymentName: blank(env.AGENT_SESSIONS_DEPLOYMENT),
    buildId: blank(env.AGENT_SESSIONS_BUILD_ID),
    logLevel: blank(env.LOG_LEVEL)?.toLowerCase(),
    logFormat: blank(env.LOG_FORMAT)?.toLowerCase(),
  };
  const parsed = ConfigSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issueField(issue?.path ?? [], 'env');
    const variable =
      ENV_NAMES[field] ??
      Object.entries(ENV_NAMES).find(
        ([prefix]) => field.startsWith(`${prefix}.`) || field.startsWith(`${prefix}[`),
      )?.[1];
    throw new Error(`invalid configuration: ${variable ?? field}: ${issue?.message}`);
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
  'providers.rateLimitWaitMs': 'AGENT_SESSIONS_MODEL_RATE_LIMIT_WAIT_MS',
  'providers.local.modelPath': 'LOCAL_MODEL_PATH',
  'providers.local.models': 'LOCAL_MODELS',
  'providers.local.threads': 'LOCAL_MODEL_THREADS',
  'providers.local.contextSize': 'LOCAL_MODEL_CONTEXT_SIZE',
  'providers.local.maxTokens': 'LOCAL_MODEL_MAX_TOKENS',
  'encryption.current': 'AGENT_SESSIONS_ENCRYPTION_KEY',
  'encryption.previous': 'AGENT_SESSIONS_ENCRYPTION_OLD_KEYS',
  workflowBundle: 'AGENT_SESSIONS_WORKFLOW_BUNDLE',
  versioning: 'AGENT_SESSIONS_VERSIONING',
  deploymentName: 'AGENT_SESSIONS_DEPLOYMENT',
  buildId: 'AGENT_SESSIONS_BUILD_ID',
  mcpFile: 'AGENT_SESSIONS_MCP_FILE',
  modelPrices: 'AGENT_SESSIONS_MODEL_PRICES',
  maxAnswerBytes: 'AGENT_SESSIONS_MAX_ANSWER_BYTES',
  maxToolResultBytes: 'AGENT_SESSIONS_MAX_TOOL_RESULT_BYTES',
  logLevel: 'LOG_LEVEL',
  logFormat: 'LOG_FORMAT',
};

/** A variable holding JSON, parsed; text that is not JSON throws naming the variable. */
function jsonVar(env: NodeJS.ProcessEnv, name: EnvVarName): unknown {
  const text = env[name]?.trim();
  if (!text) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new Error(`invalid configuration: ${name}: not JSON (${(err as Error).message})`);
  }
}

/**
 * `name=path,name=path` as a record; a pair without `=` keeps its text as the name so the schema names the
 * variable (LOCAL_MODELS) in its error.
 */
function namedPaths(text: string | undefined): Record<string, string> | undefined {
  if (!text) return undefined;
  const out: Record<string, string> = {};
  for (const pair of text.split(',')) {
    const at = pair.indexOf('=');
    if (!pair.trim()) continue;
    out[(at < 0 ? pair : pair.slice(0, at)).trim()] = at < 0 ? '' : pair.slice(at + 1).trim();
  }
  return out;
}

/**
 * What to check when a server accepts TCP but the connection fails: usually the two ends disagree on TLS (a TLS server
 * and a plaintext client, or the reverse, or a certificate the configured CA did not sign). Names what to set.
 */
export function tlsHint(config: Config): string {
  return wantsTls(config)
    ? 'TLS is configured (TEMPORAL_TLS_* or TEMPORAL_API_KEY): check that the server speaks TLS and that TEMPORAL_TLS_CA_PATH signed its certificate (TEMPORAL_TLS_SERVER_NAME when the name differs)'
    : 'no TLS is configured: if the server expects TLS, set TEMPORAL_TLS_CA_PATH (and TEMPORAL_TLS_CERT_PATH / TEMPORAL_TLS_KEY_PATH, or TEMPORAL_API_KEY)';
}

/** Whether the configuration asks for TLS (an API key, a CA or client certificates). */
export function wantsTls(config: Config): boolean {
  return Boolean(config.apiKey || config.tls.certPath || config.tls.caPath);
}

/**
 * What both connections (the client's `Connection` and the worker's `NativeConnection`) take: the address, TLS
 * when the configuration asks for it, and the API key. Throws when a TLS file cannot be read.
 */
export function connectionOptions(config: Config, address: string) {
  const { certPath, keyPath, caPath, serverName } = config.tls;
  const tls = wantsTls(config)
    ? {
        ...(serverName ? { serverNameOverride: serverName } : {}),
        ...(caPath ? { serverRootCACertificate: readFileSync(caPath) } : {}),
        ...(certPath && keyPath
          ? { clientCertPair: { crt: readFileSync(certPath), key: readFileSync(keyPath) } }
          : {}),
      }
    : undefined;
  return { address, ...(tls ? { tls } : {}), ...(config.apiKey ? { apiKey: config.apiKey } : {}) };
}
