/**
 * The session's activities, built by a factory over their dependencies (STYLE.md 10): the workflow proxies
 * `ReturnType<typeof createActivities>` through a type-only import. Everything here may do I/O.
 */
import { createHash } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { FailureTypes, injectSignal, modelContextQuery, steerSignal } from '../contract';
import type { ToolsOffered, Usage } from '../domain/events';
import { toBlocks } from '../domain/messages';
import { GENUINE_ATTEMPTS, withAttemptBudget, type Attempt } from './attempts';
import { HookRegistry, runPostToolHook, runPreStepHook, type HookCallContext } from './hooks';
import { ScriptedProvider, type ModelCallContext, type ModelProvider, type ScriptedRecorder } from './model';
import { PROVIDER_SETUP } from './providers/setup';
import { EntryRefResolver, EntryStore, type RefReader } from './entryStore';
import { historyContextReader, historyRefReader } from './historyContext';
import { TranscriptCache, type ContextReader } from './transcriptCache';
import { runTool, ToolRegistry, type ToolMessage, type ToolRuntime } from './tools';
import { isMcpSelector } from './mcp/names';
import type { McpTools } from './mcp/tools';
import { compact } from './compaction';
import { capToolResult, checkAnswer, resultCaps, type ResultCaps } from './resultSizes';
import { refusingWorker, unknownNames } from './refusal';
import type {
  CompactionInput,
  CompactionResult,
  DescribeHooksInput,
  CheckApprovalsInput,
  DescribeToolsInput,
  HookDescriptor,
  ModelStepInput,
  ModelStepResult,
  PostToolHookInput,
  PostToolHookResult,
  PreStepHookInput,
  PreStepHookResult,
  ToolDescriptor,
  ToolExecInput,
  ToolExecResult,
  ToolSpec,
} from './types';
import { deliverScheduled } from './schedules';
import { sessionRefActivity, type SessionRefOptions } from './sessionRefs';
import { attemptDeadline, heartbeatingSleep } from './waits';
import { costMicrosOf, modelLabel, type ModelPrices, type ModelSpec } from '../domain/wire';

/** The model that answers a session naming none, when the worker names no default: the offline scripted model. */
export const SCRIPTED_DEFAULT_MODEL: ModelSpec = { provider: 'scripted', steps: [] };

export interface ActivityDeps {
  tools: ToolRegistry;
  /** Tools of the worker's MCP servers, which sessions select as `mcp:<server>` or `mcp:<server>/<tool>`. */
  mcp?: McpTools;
  /** Hooks sessions may select by name (default: none). */
  hooks?: HookRegistry;
  /** Providers by ModelSpec.provider name; `scripted` is always available. */
  providers?: Record<string, ModelProvider>;
  /** The model of sessions that name none (default: the scripted model). */
  defaultModel?: ModelSpec;
  /** Prices by model label: a priced answer's usage carries its `costMicros` (budgets count it). */
  prices?: ModelPrices;
  /** Receives every request the scripted model answers (tests assert on it). */
  scriptedRecorder?: ScriptedRecorder;
  /** The transcript cache (default: one per activities object, filled from the session's workflow history). */
  transcripts?: TranscriptCache;
  /** Most sessions the default transcript cache keeps (default 1,000; 0: every request reads its runs' history). */
  transcriptCacheSessions?: number;
  /**
   * The store of entries requests send by reference, which the worker's `transcriptRefs` sink fills
   * (src/worker: `transcriptRefSinks`); default: an empty one, so every reference is read from history.
   */
  entries?: EntryStore;
  /** How references the store lacks are read (default: from the run's history). */
  readRefs?: RefReader;
  /** Cross-session references: the policy and the snapshot size limit (./sessionRefs.ts). */
  sessionRefs?: SessionRefOptions;
  /**
   * Most UTF-8 bytes of one model answer's text, reasoning and tool-call arguments (default 1 MiB, at most
   * 1,966,080): a stream is cut there and the turn ends `MODEL_ANSWER_TOO_LARGE` (./resultSizes.ts).
   */
  maxAnswerBytes?: number;
  /**
   * Most bytes of one tool result's JSON (default 1.5 MiB, at most 1,966,080): a larger result becomes a
   * `TOOL_RESULT_TOO_LARGE` error the model reads.
   */
  maxToolResultBytes?: number;
}

/** Reads model-visible entries from a session's run through the activity's Temporal client: its query. */
const readFromWorkflow: ContextReader = (sessionId, runId, from, to, _generation) =>
  Context.current().client.workflow.getHandle(sessionId, runId).query(modelContextQuery, { from, to });

const readFromHistory = historyContextReader(() => Context.current().client);
const readRefsFromHistory = historyRefReader(() => Context.current().client);

/**
 * How a model activity fills a transcript cache miss: from the runs' histories, which runs no workflow code (see
 * historyContext.ts for why not the query); the query only where the history shows a gap, which it should not.
 */
const readContext: ContextReader = async (sessionId, runId, from, to, generation) => {
  const page = await readFromHistory(sessionId, runId, from, to, generation);
  const start = Math.max(from, page.base);
  if (start >= to || page.entries.length === to - start) return page;
  return readFromWorkflow(sessionId, runId, from, to, generation);
};

/** Heartbeat interval of long activities; the workflow's heartbeat timeouts are a few times this. */
export const HEARTBEAT_EVERY_MS = 1000;

export { GENUINE_ATTEMPTS } from './attempts';
export type { ScheduledDelivery } from './schedules';

export function createActivities(deps: ActivityDeps) {
  const caps = resultCaps(deps);
  const transcripts =
    deps.transcripts ??
    new TranscriptCache(
      readContext,
      deps.transcriptCacheSessions !== undefined ? { maxSessions: deps.transcriptCacheSessions } : {},
    );
  const refs = new EntryRefResolver(deps.entries ?? new EntryStore(), deps.readRefs ?? readRefsFromHistory);
  const hooks = deps.hooks ?? new HookRegistry();
  const providers: Record<string, ModelProvider> = {
    scripted: new ScriptedProvider(deps.scriptedRecorder),
    ...deps.providers,
  };
  const defaultModel = deps.defaultModel ?? SCRIPTED_DEFAULT_MODEL;
  const mcpDescribe = (selector: string): Promise<ToolDescriptor[]> => {
    if (deps.mcp) return deps.mcp.describe(selector);
    throw ApplicationFailure.create({
      type: FailureTypes.UnknownTool,
      nonRetryable: true,
      message: `session names "${selector}" but ${refusingWorker()} has no MCP servers configured`,
    });
  };

  /**
   * What the model sees of each named tool, in the order named. An MCP tool's spec comes from its server's cached
   * list (read again after `list_changed`); one the server no longer lists is left out.
   */
  async function specsOf(names: readonly string[]): Promise<ToolSpec[]> {
    const specs = await Promise.all(
      names.map((name) => (deps.mcp?.owns(name) ? deps.mcp.spec(name) : deps.tools.spec(name))),
    );
    return specs.filter((s): s is ToolSpec => s !== undefined);
  }

  /** The provider of a model; an unconfigured one fails at once saying what to set. */
  function providerOf(model: ModelSpec): ModelProvider {
    const provider = providers[model.provider];
    if (provider) return provider;
    throw ApplicationFailure.create({
      type: FailureTypes.ModelRequestInvalid,
      nonRetryable: true,
      message: `model provider "${model.provider}" is not configured on this worker: ${PROVIDER_SETUP[model.provider] ?? 'register it'} (configured: ${Object.keys(providers).join(', ')})`,
    });
  }

  async function modelStep(input: ModelStepInput, attempt: Attempt): Promise<ModelStepResult> {
    const model = input.model ?? defaultModel;
    const provider = providerOf(model);
    const {
      prefix: _prefix,
      newEntries: _new,
      hash: _hash,
      chainId: _chain,
      runId: _run,
      model: _model,
      ...request
    } = input;
    const newEntries = await refs.resolve(input);
    const messages = await transcripts.assemble({ ...input, newEntries });
    const toolSpecs = await specsOf(input.tools);
    // Watchers read the text so far from the heartbeat details (SessionClient.stream): they name the step.
    const ctx = activityCallContext(attempt, caps);
    const where = { turn: input.turn, step: input.step };
    const heartbeat = (details?: unknown) =>
      ctx.heartbeat(
        details && typeof details === 'object' && !Array.isArray(details)
          ? { ...details, ...where }
          : details,
      );
    const answered = checkAnswer(
      provider.name,
      await provider.step({ ...request, model, toolSpecs, messages }, { ...ctx, heartbeat }),
      caps.maxAnswerBytes,
    );
    const result = priced(model, answered);
    return toolSpecs.length ? { ...result, tools: toolsOffered(toolSpecs) } : result;
  }

  /** A priced model's reported usage carries its cost (`costMicros`), which budgets count. */
  function priced<T extends { usage?: Usage }>(model: ModelSpec, answered: T): T {
    const price = deps.prices?.[modelLabel(model)];
    return price && answered.usage
      ? { ...answered, usage: { ...answered.usage, costMicros: costMicrosOf(answered.usage, price) } }
      : answered;
  }

  /** A compaction: the projection as a request would see it, summarised before the cut by the compactor. */
  async function compactTranscript(input: CompactionInput, attempt: Attempt): Promise<CompactionResult> {
    const model = input.model ?? defaultModel;
    // A scripted compactor answers from its own script, outside the session's recorded requests.
    const provider = model.provider === 'scripted' ? new ScriptedProvider() : providerOf(model);
    const projection = await transcripts.assemble(input);
    return priced(
      model,
      await compact(input, model, provider, projection, activityCallContext(attempt, caps)),
    );
  }

  return {
    /**
     * One model request, answered by the session's model or the worker's default. Provider failures arrive as
     * named ApplicationFailures (retryable or not); an unconfigured provider fails at once saying what to set. The
     * fifth retryable failure of one request is final (GENUINE_ATTEMPTS); a lost worker does not count.
     */
    async modelStep(input: ModelStepInput): Promise<ModelStepResult> {
      return withAttemptBudget(GENUINE_ATTEMPTS.modelStep, (attempt) => modelStep(input, attempt));
    },

    /**
     * Summarises the oldest part of a session's projection before a request that would pass its token budget
     * (`context`); retried like a model request, and the workflow logs one `compaction/summary` for its result.
     */
    async compactTranscript(input: CompactionInput): Promise<CompactionResult> {
      return withAttemptBudget(GENUINE_ATTEMPTS.modelStep, (attempt) => compactTranscript(input, attempt));
    },

    /** Resolves the session's hook names against this worker's registry; unknown names fail at once. */
    async describeHooks(input: DescribeHooksInput): Promise<HookDescriptor[]> {
      const unknown = input.names.filter((n) => !hooks.get(n));
      if (unknown.length) throw unknownNames('hook', unknown, hooks.names());
      return input.names.map((name) => ({ name, kind: hooks.kind(name)! }));
    },

    /** One pre-step hook call (a listener of the waterfall); failures are named ApplicationFailures. */
    async preStepHook(input: PreStepHookInput): Promise<PreStepHookResult> {
      return withAttemptBudget(GENUINE_ATTEMPTS.preStepHook, (attempt) =>
        runPreStepHook(registered(hooks, input.hook), input, hookContext(attempt)),
      );
    },

    /** One post-tool hook call on a finished tool result; failures are named ApplicationFailures. */
    async postToolHook(input: PostToolHookInput): Promise<PostToolHookResult> {
      return withAttemptBudget(GENUINE_ATTEMPTS.postToolHook, (attempt) =>
        runPostToolHook(registered(hooks, input.hook), input, hookContext(attempt)),
      );
    },

    /** Resolves the session's tool names against this worker's registry; unknown names fail at once. */
    async describeTools(input: DescribeToolsInput): Promise<ToolDescriptor[]> {
      const unknown = input.names.filter((n) => !isMcpSelector(n) && !deps.tools.get(n));
      if (unknown.length) throw unknownNames('tool', unknown, deps.tools.names());
      // An MCP selector stands for the tools it names, under their model-visible names (the names calls use).
      const described = await Promise.all(
        input.names.map((name) =>
          isMcpSelector(name) ? mcpDescribe(name) : Promise.resolve([deps.tools.descriptor(name)!]),
        ),
      );
      const seen = new Set<string>();
      return described.flat().filter((d) => !seen.has(d.name) && seen.add(d.name));
    },

    /** Which calls of a batch need approval, by their tools' predicates (a predicate that throws requires it). */
    async checkApprovals(input: CheckApprovalsInput): Promise<string[]> {
      return input.calls
        .filter((c) =>
          deps.tools.needsApproval(c.name, c.arguments, { sessionId: input.sessionId, callId: c.callId }),
        )
        .map((c) => c.callId);
    },

    /** One firing of a schedule: its followup, delivered (and the session started when absent). */
    deliverScheduled,

    /** The snapshot of a cross-session reference, or why it is refused (./sessionRefs.ts). */
    snapshotSessionRef: sessionRefActivity(deps.sessionRefs),

    /**
     * One tool call; every tool failure is returned as data for the model to read, and so is a result over the
     * worker's `maxToolResultBytes` (`TOOL_RESULT_TOO_LARGE`). The call heartbeats every second by itself, so only a
     * lost worker (or a tool blocking the event loop) times it out.
     */
    async executeTool(input: ToolExecInput): Promise<ToolExecResult> {
      return withAttemptBudget(GENUINE_ATTEMPTS.executeTool, async (attempt) => {
        const { maxAnswerBytes: _answers, ...base } = activityCallContext(attempt, caps);
        // Messages a tool sends into its own session get ids derived from the call, so a retried activity does not
        // deliver them twice (the session ignores ids it has seen, rule 4).
        let sent = 0;
        const send = (lane: 'inject' | 'steer', m: ToolMessage) =>
          sendToOwnSession(
            lane,
            input.sessionId,
            { ...m, id: m.id ?? `${input.callId}:${lane}:${sent++}` },
            input.callId,
          );
        const runtime: ToolRuntime = {
          ...base,
          sessionId: input.sessionId,
          callId: input.callId,
          turn: input.turn,
          step: input.step,
          inject: (m) => send('inject', m),
          steer: (m) => send('steer', m),
        };
        const result = deps.mcp?.owns(input.name)
          ? await deps.mcp.call(input.name, input.arguments, runtime)
          : await runTool(deps.tools.get(input.name), input.name, input.arguments, runtime);
        return capToolResult(input.name, result, caps.maxToolResultBytes);
      });
    },
  };
}

export type SessionActivities = ReturnType<typeof createActivities>;

/** What a model request offered: the tools' names and a short hash of their definitions as the model saw them. */
export function toolsOffered(specs: readonly ToolSpec[]): ToolsOffered {
  const hash = createHash('sha256').update(JSON.stringify(specs)).digest('hex').slice(0, 16);
  return { names: specs.map((s) => s.name), hash };
}

function registered(hooks: HookRegistry, name: string) {
  const hook = hooks.get(name);
  if (!hook) {
    throw ApplicationFailure.create({
      type: FailureTypes.UnknownHook,
      nonRetryable: true,
      message: `hook "${name}" is not registered on this worker (registered: ${hooks.names().join(', ') || 'none'})`,
    });
  }
  return hook;
}

/**
 * A hook call's context: the activity's abort signal and heartbeats that carry the attempt's count. It heartbeats at
 * once, and the attempt every second after, so a cancel reaches it.
 */
function hookContext(attempt: Attempt): HookCallContext {
  attempt.beat();
  return { signal: Context.current().cancellationSignal, heartbeat: (d?: unknown) => attempt.beat(d) };
}

/** What a provider or a tool gets: the abort signal, heartbeats that carry the attempt's count, the answer cap. */
function activityCallContext(attempt: Attempt, caps: ResultCaps): ModelCallContext {
  const ctx = Context.current();
  return {
    signal: ctx.cancellationSignal,
    maxAnswerBytes: caps.maxAnswerBytes,
    heartbeat: (details?: unknown) => attempt.beat(details),
    sleep: (ms: number) => heartbeatingSleep(ctx, attempt, ms),
    deadlineAt: attemptDeadline(ctx.info),
  };
}

async function sendToOwnSession(
  lane: 'inject' | 'steer',
  sessionId: string,
  m: ToolMessage,
  callId: string,
): Promise<void> {
  const message: {
    id?: string;
    content: ToolMessage['content'];
    source: NonNullable<ToolMessage['source']>;
  } = {
    content: typeof m.content === 'string' ? m.content : toBlocks(m.content),
    source: m.source ?? { kind: 'tool', callId },
  };
  if (m.id) message.id = m.id;
  const handle = Context.current().client.workflow.getHandle(sessionId);
  await handle.signal(lane === 'inject' ? injectSignal : steerSignal, { message });
}
