/**
 * The compaction trigger and the token meter of a session with a token budget (`context`): the projection's tokens
 * as far as known (a provider's reported usage, else estimates), and, before a model request that would pass the
 * budget, a compaction of the oldest part of the projection (../compaction.ts has the math). Pure.
 */
import {
  compactionCut,
  compactionThreshold,
  DEFAULT_KEEP_RECENT,
  estimateTokens,
  type ContextMeter,
} from '../compaction';
import type { Answer, Effect } from '../effects';
import type { Usage } from '../events';
import type { SessionCore, SessionStateView } from '../session';
import { transcriptLength } from '../transcript';
import type { ModelSpec, SessionConfig } from '../wire';
import { ask, failedEnd, type PartEnd } from './ask';
import type { RequestCursor } from './requestCursor';

export class TokenMeter {
  /** How many messages the open step entered (they are the newest entries until its request; a cut keeps them). */
  private stepEntered = 0;

  constructor(
    private readonly core: SessionCore,
    private readonly config: SessionConfig,
    private readonly cursor: RequestCursor,
    /** The projection's tokens as far as known (../compaction.ts). */
    private meter: ContextMeter,
  ) {}

  /** A step opened and entered `count` messages. */
  stepStarted(count: number): void {
    this.stepEntered = count;
  }

  /** A model answer was logged: the provider's usage counts everything its request held, and the answer. */
  answered(usage: Usage | undefined): void {
    if (usage?.inputTokens === undefined) return;
    const t = this.core.transcript;
    const answerTokens = usage.outputTokens ?? estimateTokens(t.entries[t.entries.length - 1]!);
    this.meter = { tokens: usage.inputTokens + answerTokens, count: transcriptLength(t) };
  }

  /** The estimated tokens of a request made now: the meter, plus an estimate of the entries after it. */
  estimateRequest(): number {
    const t = this.core.transcript;
    let tokens = this.meter.tokens;
    for (let i = Math.max(this.meter.count, t.base); i < transcriptLength(t); i++)
      tokens += estimateTokens(t.entries[i - t.base]!);
    return tokens;
  }

  /** Where the entries a compaction would keep start (at most `keepRecent` back, moved to a clean cut). */
  keptTail(): number {
    const t = this.core.transcript;
    const keep = Math.max(1, this.config.context?.keepRecent ?? DEFAULT_KEEP_RECENT);
    let from = Math.max(t.base, transcriptLength(t) - keep);
    while (from > t.base && t.entries[from - t.base]?.role === 'tool') from--;
    return from;
  }

  /** The `context` part of the `state` query; undefined for a session without a token budget. */
  view(): SessionStateView['context'] {
    const context = this.config.context;
    if (!context) return undefined;
    const t = this.core.transcript;
    return {
      tokens: this.estimateRequest(),
      maxTokens: context.maxTokens,
      compactions: t.generation,
      messages: transcriptLength(t),
    };
  }

  /**
   * Before a model request that would pass the session's token budget: summarise the oldest part of the projection
   * (../compaction.ts) and log `compaction/summary`; the request then carries the new projection from position 0.
   * Returns the turn's end when the compaction failed; undefined otherwise (also when nothing can be cut).
   */
  *compactIfOver(): Generator<Effect, PartEnd | undefined, Answer> {
    const context = this.config.context;
    if (!context || this.estimateRequest() <= compactionThreshold(context)) return undefined;
    const core = this.core;
    const t = core.transcript;
    const stepStart = transcriptLength(t) - this.stepEntered;
    const where = compactionCut(
      t.entries,
      t.seqs,
      t.base,
      context.keepRecent ?? DEFAULT_KEEP_RECENT,
      stepStart,
    );
    if (!where) return undefined;
    const { cut, pinned } = where;
    const own = this.config.model;
    const compactor =
      context.model?.provider === 'scripted'
        ? scriptedCompactor(context.model, t.generation)
        : (context.model ?? (own?.provider === 'scripted' ? { ...own, steps: [] } : own));
    const throughSeq = t.seqs[cut - t.base]! - 1;
    const pinnedSeq = pinned !== undefined ? { pinned: t.seqs[pinned - t.base]! } : {};
    const answer = yield* ask({
      type: 'compact',
      call: {
        turn: core.turn,
        step: core.step,
        ...(compactor ? { model: compactor } : {}),
        prefix: this.cursor.sent,
        newEntries: this.cursor.unsentEntries(),
        hash: t.hash,
        ...(t.generation ? { generation: t.generation } : {}),
        cut,
        ...(pinned !== undefined ? { pinned } : {}),
        throughSeq,
      },
    });
    if (answer.kind === 'failed') return failedEnd(answer, core.canceling);
    core.compacted({ throughSeq, ...pinnedSeq, ...answer.result });
    this.cursor.restart();
    this.meter = { tokens: answer.result.tokensAfter, count: transcriptLength(t) };
    return undefined;
  }
}

/**
 * A scripted compactor for the session's `n`-th compaction: its step `n` (the last one when the script is shorter),
 * so a test can give each compaction its own summary and timing; no steps answer with a default summary.
 */
function scriptedCompactor(model: Extract<ModelSpec, { provider: 'scripted' }>, n: number): ModelSpec {
  const step = model.steps[Math.min(n, model.steps.length - 1)];
  return { ...model, steps: step ? [step] : [] };
}
