/**
 * The search attributes of a session (wire, docs/protocol.md): what Temporal's visibility, the Temporal UI and
 * `agent-sessions list` filter and show. The client sets them when it starts a session on a server that has them
 * registered; the workflow then upserts them at turn boundaries and status changes, never per event. A session
 * started without them (a server that does not register them) runs the same, without visibility. Sandbox-safe.
 */
import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributePair } from '@temporalio/common';
import { modelLabel, type SessionConfig } from '../domain/wire';

const CLI_TYPE: Record<SearchAttributeType, string> = {
  [SearchAttributeType.TEXT]: 'Text',
  [SearchAttributeType.KEYWORD]: 'Keyword',
  [SearchAttributeType.INT]: 'Int',
  [SearchAttributeType.DOUBLE]: 'Double',
  [SearchAttributeType.BOOL]: 'Bool',
  [SearchAttributeType.DATETIME]: 'Datetime',
  [SearchAttributeType.KEYWORD_LIST]: 'KeywordList',
};

export const SearchAttributes = {
  /** `idle`, `running` or `disposed`. */
  status: defineSearchAttributeKey('AgentSessionStatus', SearchAttributeType.KEYWORD),
  /** The last turn number (0 before the first). */
  turn: defineSearchAttributeKey('AgentSessionTurn', SearchAttributeType.INT),
  /** Pending messages, both lists, at the last boundary. */
  pending: defineSearchAttributeKey('AgentSessionPending', SearchAttributeType.INT),
  /** Workflow time of the last turn boundary or status change. */
  lastActivity: defineSearchAttributeKey('AgentSessionLastActivity', SearchAttributeType.DATETIME),
  /** `provider:model` of the session's ModelSpec (`scripted`, `local`, `openai:gpt-4o-mini`), `default` for none. */
  model: defineSearchAttributeKey('AgentSessionModel', SearchAttributeType.KEYWORD),
  /** `SessionConfig.labels`. */
  labels: defineSearchAttributeKey('AgentSessionLabels', SearchAttributeType.KEYWORD_LIST),
  /**
   * Input tokens the providers reported over the whole session, at the last turn end. Double, not Int: SQL
   * visibility (the dev server's SQLite, PostgreSQL) keeps at most three Int attributes per namespace, and turn and
   * pending take two; a double holds every whole number up to 2^53 exactly.
   */
  inputTokens: defineSearchAttributeKey('AgentSessionInputTokens', SearchAttributeType.DOUBLE),
  /** Output tokens the providers reported over the whole session, at the last turn end (Double, as above). */
  outputTokens: defineSearchAttributeKey('AgentSessionOutputTokens', SearchAttributeType.DOUBLE),
  /** `SessionConfig.tenant`, set at start; absent for the default tenant. What scoped tokens filter by. */
  tenant: defineSearchAttributeKey('AgentSessionTenant', SearchAttributeType.KEYWORD),
} as const;

/** Every key, for registering them on a server (the dev server, the cluster script). */
export const SEARCH_ATTRIBUTE_KEYS = Object.values(SearchAttributes);

/** `name=Type` as `temporal server start-dev --search-attribute` and `temporal operator search-attribute create` take. */
export const SEARCH_ATTRIBUTE_FLAGS: readonly string[] = SEARCH_ATTRIBUTE_KEYS.map(
  (k) => `${k.name}=${CLI_TYPE[k.type]}`,
);

/** The model as the `AgentSessionModel` attribute shows it (also the key of the state's usage per model). */
export { modelLabel };

/**
 * The static summary (one line) and details (Temporal markdown) a session starts with, for the Temporal UI: model,
 * tools, hooks and labels. Never the system prompt or messages: they may be confidential, and these are stored
 * outside the payloads a codec encrypts.
 */
export function sessionSummary(config: SessionConfig): { summary: string; details: string } {
  const model = modelLabel(config.model);
  const list = (xs: readonly string[] | undefined) => (xs?.length ? xs.join(', ') : 'none');
  const parts = [`agent session · ${model}`];
  if (config.tools?.length) parts.push(`tools: ${config.tools.join(', ')}`);
  if (config.labels?.length) parts.push(`labels: ${config.labels.join(', ')}`);
  if (config.tenant !== undefined) parts.push(`tenant: ${config.tenant}`);
  return {
    summary: parts.join(' · '),
    details: [
      `**model** ${model}`,
      `**tools** ${list(config.tools)}`,
      `**hooks** ${list(config.hooks)}`,
      `**labels** ${list(config.labels)}`,
      ...(config.tenant !== undefined ? [`**tenant** ${config.tenant}`] : []),
    ].join('\n'),
  };
}

/**
 * What a session starts with besides its config: the static summary and details, and — when the server has the
 * session search attributes registered — their first values. The client and the schedule activity both use it.
 */
export function sessionStartOptions(
  config: SessionConfig,
  opts: { searchAttributes: boolean; now: Date },
): { staticSummary: string; staticDetails: string; typedSearchAttributes?: SearchAttributePair[] } {
  const { summary, details } = sessionSummary(config);
  const base = { staticSummary: summary, staticDetails: details };
  if (!opts.searchAttributes) return base;
  return {
    ...base,
    typedSearchAttributes: [
      { key: SearchAttributes.status, value: 'idle' },
      { key: SearchAttributes.turn, value: 0 },
      { key: SearchAttributes.pending, value: 0 },
      { key: SearchAttributes.lastActivity, value: opts.now },
      { key: SearchAttributes.model, value: modelLabel(config.model) },
      { key: SearchAttributes.labels, value: config.labels ?? [] },
      { key: SearchAttributes.inputTokens, value: 0 },
      { key: SearchAttributes.outputTokens, value: 0 },
      ...(config.tenant !== undefined ? [{ key: SearchAttributes.tenant, value: config.tenant }] : []),
    ] as SearchAttributePair[],
  };
}
