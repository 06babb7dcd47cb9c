/**
 * What a SessionClient is built from and what it starts sessions with: its options, checked and given their
 * defaults (the Temporal client, task queue, workflow type, delivery retry, the search-attribute check), and the
 * options of a workflow start shared by `start`, `startWith` and `deliverWithStart`. Does I/O only through the
 * search-attribute check (./visibility.ts).
 */
import { Client, type ClientInterceptors, type Connection } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { DEFAULT_TASK_QUEUE, WORKFLOW_TYPE } from '../contract';
import { sessionStartOptions } from '../contract/searchAttributes';
import type { SessionConfig } from '../domain/wire';
import { validConfig } from './inputs';
import { DEFAULT_DELIVERY_RETRY, type DeliveryRetryPolicy } from './retry';
import { searchAttributesCheck } from './visibility';

export interface SessionClientOptions {
  connection?: Connection;
  client?: Client;
  /**
   * The data converter of the client built from `connection` — e.g. `encryptionDataConverter(keys)` when the
   * workers encrypt history. With `client`, configure that client instead (passing both is refused).
   */
  dataConverter?: DataConverter;
  /** Client interceptors of the client built from `connection` (e.g. `clientTracingInterceptors(tracing)`). */
  interceptors?: ClientInterceptors;
  namespace?: string;
  taskQueue?: string;
  /** Workflow type to start (default `agentSession`; tests use variants with pre-step listeners). */
  workflowType?: string;
  /** How `deliver` retries transient failures (default: 5 attempts over about 1.5 s). */
  deliveryRetry?: Partial<DeliveryRetryPolicy>;
  /**
   * Whether sessions start with their search attributes (docs/protocol.md): `auto` (default) when the namespace has
   * them registered — checked once per client, with one warning when it has not — or `off`.
   */
  searchAttributes?: 'auto' | 'off';
  /** Where the one warning goes (default `console.warn`). */
  warn?: (message: string) => void;
}

/** The options with their defaults, and the client built from them. */
export interface ClientSettings {
  client: Client;
  taskQueue: string;
  workflowType: string;
  deliveryRetry: DeliveryRetryPolicy;
  /** Whether the namespace has the session search attributes registered (asked once; false when `off`). */
  searchAttributesRegistered: () => Promise<boolean>;
}

/** The settings of `opts`. Throws when neither a connection nor a client is given, or a client with client options. */
export function clientSettings(opts: SessionClientOptions): ClientSettings {
  if (!opts.client && !opts.connection) throw new Error('SessionClient needs a connection or a client');
  if (opts.client && (opts.dataConverter || opts.interceptors))
    throw new Error('SessionClient: pass dataConverter and interceptors to your Client, not beside it');
  const client =
    opts.client ??
    new Client({
      connection: opts.connection!,
      namespace: opts.namespace ?? 'default',
      ...(opts.dataConverter ? { dataConverter: opts.dataConverter } : {}),
      ...(opts.interceptors ? { interceptors: opts.interceptors } : {}),
    });
  const registered = searchAttributesCheck(client, opts.warn ?? ((m) => console.warn(m)));
  return {
    client,
    taskQueue: opts.taskQueue ?? DEFAULT_TASK_QUEUE,
    workflowType: opts.workflowType ?? WORKFLOW_TYPE,
    deliveryRetry: { ...DEFAULT_DELIVERY_RETRY, ...opts.deliveryRetry },
    searchAttributesRegistered: () =>
      opts.searchAttributes === 'off' ? Promise.resolve(false) : registered(),
  };
}

/**
 * How a session starts besides its workflow type: id, task queue, the validated config, its search attributes when
 * the namespace has them, and the static summary and details the Temporal UI shows (model, tools, hooks, labels —
 * never the system prompt). Throws InvalidInputError naming the field of a bad config.
 */
export async function startArgs(settings: ClientSettings, sessionId: string, config: SessionConfig) {
  const valid = validConfig(config);
  const extra = sessionStartOptions(valid, {
    searchAttributes: await settings.searchAttributesRegistered(),
    now: new Date(),
  });
  return { workflowId: sessionId, taskQueue: settings.taskQueue, args: [valid], ...extra };
}
