/**
 * Worker and client configuration from the environment. Not deterministic (reads process.env): never import from
 * workflow code. Every variable the project reads is listed in ENV_VARS, so docs and docker-compose can be checked
 * against it.
 */
import { z } from 'zod';

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
  AGENT_SESSIONS_DATA_DIR: 'folder of the embedded dev server SQLite file (default ".data" in the working folder)',
  TEMPORAL_CLI_PATH: 'path of the Temporal CLI binary (dev server)',
  TEMPORAL_TEST_SERVER_PATH: 'path of the Temporal time-skipping test server binary',
} as const;

export type EnvVarName = keyof typeof ENV_VARS;

export const DEFAULT_TASK_QUEUE = 'agent-sessions';
export const DEFAULT_NAMESPACE = 'default';

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
  };
  const parsed = ConfigSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`invalid configuration: ${issue?.path.join('.') || 'env'}: ${issue?.message}`);
  }
  return parsed.data;
}

/** Whether the configuration asks for TLS (an API key or client certificates). */
export function wantsTls(config: Config): boolean {
  return Boolean(config.apiKey || config.tls.certPath || config.tls.caPath);
}
