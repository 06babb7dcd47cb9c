/**
 * Finding sessions through Temporal visibility (`SessionClient.list`, `usage`, `row`; `agent-sessions list` and
 * `usage`): the filters and the visibility query they make, one session's row read from its search attributes, the
 * token usage summed over many, and the once-per-client check that the namespace has the session search attributes
 * registered (docs/protocol.md, docs/operations.md). Does I/O (visibility and operator RPCs).
 */
import { WorkflowNotFoundError, type Client, type WorkflowExecutionInfo } from '@temporalio/client';
import { SEARCH_ATTRIBUTE_KEYS, SearchAttributes } from '../contract/searchAttributes';
import { InvalidInputError, SessionNotFoundError } from './errors';
import { executionInfoOf } from './sdk';

export interface SessionListFilters {
  status?: 'idle' | 'running' | 'disposed';
  label?: string;
  model?: string;
  /** Sessions of this tenant (`SessionConfig.tenant`); `null`: of the default tenant (none set). */
  tenant?: string | null;
  /** Sessions whose id starts with this. */
  idPrefix?: string;
  /** Idle sessions whose last activity is older than this. */
  idleForMs?: number;
  /** A raw visibility query, ANDed with the rest. */
  query?: string;
  /** Sessions per page: 1 to 1000 (default 50). */
  limit?: number;
  /** The `nextPageToken` of the page before (same filters). */
  pageToken?: string;
}

/** The most sessions one `list` page holds. */
export const MAX_LIST_LIMIT = 1000;

/** One page of `SessionClient.list`. */
export interface SessionPage {
  sessions: SessionRow[];
  /** Whether visibility has more to give (then `nextPageToken` is set; that next page may still be empty). */
  more: boolean;
  /** Pass as `pageToken` for the next page. */
  nextPageToken?: string;
}

/** One session as visibility sees it (`agent-sessions list`). */
export interface SessionRow {
  id: string;
  status: string;
  turn?: number;
  pending?: number;
  model?: string;
  labels: string[];
  /** `SessionConfig.tenant`; absent for the default tenant. */
  tenant?: string;
  lastActivity?: string;
  startTime: string;
  /** Token totals at the last turn end (sessions started before these attributes existed have none). */
  inputTokens?: number;
  outputTokens?: number;
}

/** Token usage over many sessions (`SessionClient.usage`, `agent-sessions usage`). */
export interface UsageSummary {
  sessions: number;
  inputTokens: number;
  outputTokens: number;
  byModel: Record<string, { sessions: number; inputTokens: number; outputTokens: number }>;
}

const quote = (value: string) => `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/** The visibility query of `list`. */
export function listQuery(workflowType: string, f: SessionListFilters, now = Date.now()): string {
  const parts = [`WorkflowType = ${quote(workflowType)}`];
  if (f.status === 'disposed') parts.push(`ExecutionStatus != 'Running'`);
  else parts.push(`ExecutionStatus = 'Running'`);
  const status = f.idleForMs !== undefined ? 'idle' : f.status;
  if (status && status !== 'disposed') parts.push(`${SearchAttributes.status.name} = ${quote(status)}`);
  if (f.label !== undefined) parts.push(`${SearchAttributes.labels.name} = ${quote(f.label)}`);
  if (f.model !== undefined) parts.push(`${SearchAttributes.model.name} = ${quote(f.model)}`);
  if (f.tenant === null) parts.push(`${SearchAttributes.tenant.name} IS NULL`);
  else if (f.tenant !== undefined) parts.push(`${SearchAttributes.tenant.name} = ${quote(f.tenant)}`);
  if (f.idPrefix) parts.push(`WorkflowId STARTS_WITH ${quote(f.idPrefix)}`);
  if (f.idleForMs !== undefined)
    parts.push(`${SearchAttributes.lastActivity.name} < ${quote(new Date(now - f.idleForMs).toISOString())}`);
  if (f.query) parts.push(`(${f.query})`);
  return parts.join(' AND ');
}

/** One page of the sessions `filters` match (see `SessionClient.list`). Throws InvalidInputError for a bad limit or token. */
export async function listPage(
  client: Client,
  workflowType: string,
  filters: SessionListFilters,
): Promise<SessionPage> {
  const limit = filters.limit ?? 50;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT)
    throw new InvalidInputError(
      'limit',
      `invalid list: limit: an integer from 1 to ${MAX_LIST_LIMIT}, got ${limit}`,
    );
  let nextPageToken: Uint8Array | undefined;
  if (filters.pageToken !== undefined) {
    const decoded = Buffer.from(filters.pageToken, 'base64url');
    if (!filters.pageToken || decoded.toString('base64url') !== filters.pageToken)
      throw new InvalidInputError('pageToken', 'invalid list: pageToken: not a token a previous page gave');
    nextPageToken = decoded;
  }
  const response = await client.workflowService.listWorkflowExecutions({
    namespace: client.options.namespace,
    query: listQuery(workflowType, filters),
    pageSize: limit,
    ...(nextPageToken ? { nextPageToken } : {}),
  });
  const sessions = await Promise.all(
    (response.executions ?? []).map(async (raw) => rowOf(await executionInfoOf(client, raw))),
  );
  const token = response.nextPageToken?.length
    ? Buffer.from(response.nextPageToken).toString('base64url')
    : undefined;
  return { sessions, more: token !== undefined, ...(token ? { nextPageToken: token } : {}) };
}

/** Token usage summed over every session `filters` match, in total and per model (see `SessionClient.usage`). */
export async function usageOf(
  client: Client,
  workflowType: string,
  filters: Omit<SessionListFilters, 'limit' | 'pageToken'>,
): Promise<UsageSummary> {
  const summary: UsageSummary = { sessions: 0, inputTokens: 0, outputTokens: 0, byModel: {} };
  for await (const info of client.workflow.list({ query: listQuery(workflowType, filters) })) {
    const row = rowOf(info);
    const model = (summary.byModel[row.model ?? 'unknown'] ??= {
      sessions: 0,
      inputTokens: 0,
      outputTokens: 0,
    });
    for (const into of [summary, model]) {
      into.sessions += 1;
      into.inputTokens += row.inputTokens ?? 0;
      into.outputTokens += row.outputTokens ?? 0;
    }
  }
  return summary;
}

/** The row of one session (its latest run, described). Throws SessionNotFoundError when there is none. */
export async function rowOfSession(client: Client, sessionId: string): Promise<SessionRow> {
  try {
    return rowOf(await client.workflow.getHandle(sessionId).describe());
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) throw new SessionNotFoundError(sessionId);
    throw err;
  }
}

function rowOf(info: Omit<WorkflowExecutionInfo, 'raw'>): SessionRow {
  const sa = info.typedSearchAttributes;
  const running = info.status.name === 'RUNNING';
  const turn = sa.get(SearchAttributes.turn);
  const pending = sa.get(SearchAttributes.pending);
  const model = sa.get(SearchAttributes.model);
  const last = sa.get(SearchAttributes.lastActivity);
  const tenant = sa.get(SearchAttributes.tenant);
  const inputTokens = sa.get(SearchAttributes.inputTokens);
  const outputTokens = sa.get(SearchAttributes.outputTokens);
  return {
    id: info.workflowId,
    status: running
      ? (sa.get(SearchAttributes.status) ?? 'unknown')
      : info.status.name === 'COMPLETED'
        ? 'disposed'
        : info.status.name.toLowerCase(),
    ...(turn !== undefined ? { turn } : {}),
    ...(pending !== undefined ? { pending } : {}),
    ...(model !== undefined ? { model } : {}),
    labels: sa.get(SearchAttributes.labels) ?? [],
    ...(tenant !== undefined ? { tenant } : {}),
    ...(last !== undefined ? { lastActivity: last.toISOString() } : {}),
    startTime: info.startTime.toISOString(),
    ...(inputTokens !== undefined ? { inputTokens } : {}),
    ...(outputTokens !== undefined ? { outputTokens } : {}),
  };
}

/**
 * Whether the namespace has the session search attributes registered, asked once (the answer is memoized) and
 * never thrown: a refused check (an API key without operator rights) or missing attributes give one warning and
 * `false`, so sessions start without them. Temporal's time-skipping test server has no operator service and no
 * visibility: its UNIMPLEMENTED answer is expected and gives `false` without a warning.
 */
export function searchAttributesCheck(
  client: Client,
  warn: (message: string) => void,
): () => Promise<boolean> {
  let registered: Promise<boolean> | undefined;
  return () =>
    (registered ??= Promise.resolve()
      .then(() =>
        client.connection.operatorService.listSearchAttributes({
          namespace: client.options.namespace,
        }),
      )
      .then(
        (r) => SEARCH_ATTRIBUTE_KEYS.every((k) => k.name in (r.customAttributes ?? {})),
        async (err: unknown) => {
          if (await timeSkippingServerLacks(client, err)) return undefined;
          // Refused (e.g. an API key without operator rights): say that, not that they are missing.
          warn(
            `agent-sessions: could not check the session search attributes in namespace ${client.options?.namespace} (${err instanceof Error ? err.message : String(err)}); sessions start without them`,
          );
          return undefined;
        },
      )
      .then((ok) => {
        if (ok === undefined) return false;
        if (!ok)
          warn(
            `agent-sessions: search attributes ${SEARCH_ATTRIBUTE_KEYS.map((k) => k.name).join(', ')} are not registered in namespace ${client.options?.namespace}; sessions run without them (not listed by \`agent-sessions list\`). The embedded dev server and scripts/cluster.sh register them; elsewhere: temporal operator search-attribute create (docs/operations.md).`,
          );
        return ok;
      }));
}

/** gRPC UNIMPLEMENTED. */
const UNIMPLEMENTED = 12;

/**
 * Whether `err` is the time-skipping test server saying it has no operator service: UNIMPLEMENTED from a server
 * that is the test server — the connection of a time-skipping TestWorkflowEnvironment (it has the test service), or
 * a server whose system info names no version (the test server's; a Temporal server names its version).
 */
async function timeSkippingServerLacks(client: Client, err: unknown): Promise<boolean> {
  if ((err as { code?: unknown } | undefined)?.code !== UNIMPLEMENTED) return false;
  if ((client.connection as { testService?: unknown }).testService !== undefined) return true;
  try {
    return !(await client.workflowService.getSystemInfo({})).serverVersion;
  } catch {
    return false;
  }
}
