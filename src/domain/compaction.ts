/**
 * Compaction by token budget (issue 19, part 1; docs/protocol.md, "Compaction"). When the next model request would
 * pass `context.compactAt × context.maxTokens`, the loop asks a compactor model to summarise the oldest part of the
 * model-visible transcript and logs `compaction/summary {throughSeq, …}`; from then on the projection holds one
 * summary message (source `{kind:'compaction'}`) in place of every entry logged up to `throughSeq`. The log itself is
 * never rewritten. Pure: the workflow, the activities and the tests share it.
 */
import { summaryEntry, type TranscriptEntry } from './entry';
import type { CompactionResult } from './results';
import type { ContextConfig } from './wire';
import { binaryBytes, blockText, isDirect, type ContentBlock } from './messages';

/** Default fraction of `maxTokens` at which a request is compacted first. */
export const DEFAULT_COMPACT_AT = 0.8;
/** Default number of the newest entries kept verbatim. */
export const DEFAULT_KEEP_RECENT = 4;

/**
 * Estimated tokens of one block of binary data (an image, audio, an embedded blob), whatever its size: about what
 * providers charge for one image at full detail (Anthropic ~1,600 for a large one; OpenAI ~765–1,100). Base64 is
 * never counted as text: a provider that cannot take the block gets its one-line description instead.
 */
export const BINARY_BLOCK_TOKENS = 1600;

/**
 * Estimated tokens of one entry: its JSON's length / 4, plus a few for the message's framing. Deterministic and
 * cheap, so the workflow can run it; a provider's reported usage replaces the estimate for everything its request
 * held (see ContextMeter), and the compaction activity counts with a tokenizer where one fits the model family.
 */
export function estimateTokens(entry: TranscriptEntry): number {
  let chars = 0;
  let media = 0;
  for (const block of entry.content as readonly ContentBlock[]) {
    if (binaryBytes(block) > 0) media += BINARY_BLOCK_TOKENS;
    else chars += blockText(block).length;
  }
  if (entry.role === 'assistant' && entry.toolCalls) chars += JSON.stringify(entry.toolCalls).length;
  if (entry.role === 'tool')
    chars += entry.name.length + (entry.error ? JSON.stringify(entry.error).length : 0);
  return Math.ceil(chars / 4) + media + 4;
}

/**
 * The driver's running count of the projection's tokens: `tokens` for its first `count` entries (reported by the
 * provider for the last request and its answer, else estimated); entries after `count` are estimated.
 */
export interface ContextMeter {
  tokens: number;
  count: number;
}

/** The threshold a request is compacted above. */
export function compactionThreshold(config: ContextConfig): number {
  return Math.floor(config.maxTokens * (config.compactAt ?? DEFAULT_COMPACT_AT));
}

/** Where a compaction cuts the projection: entries before `cut` are summarised, except `pinned`, kept verbatim. */
export interface CompactionCut {
  cut: number;
  /** The latest direct message when it comes before the cut: it stays, right after the summary. */
  pinned?: number;
}

/**
 * Where to cut a projection for compaction. The cut keeps the newest `keepRecent` entries and everything the step
 * being made entered (`stepStart` on: its message and pending contexts), never falls between an assistant message
 * and its tool results, falls between two different log events (a fork's snapshot entries share one), and keeps
 * only entries this run holds (`base` on: the workflow rebuilds the projection of what it keeps). The latest direct
 * message is kept verbatim: when it comes before the cut (a long turn of tool calls), it is pinned and follows the
 * summary. Undefined when fewer than two entries would be summarised (a summary of one message saves nothing).
 *
 * `entries` and `seqs` are the run's entries (from transcript index `base`), `seqs` the log seq that added each.
 */
export function compactionCut(
  entries: readonly TranscriptEntry[],
  seqs: readonly number[],
  base: number,
  keepRecent: number,
  stepStart: number,
): CompactionCut | undefined {
  const n = base + entries.length;
  const at = (i: number) => entries[i - base]!;
  const seqAt = (i: number) => seqs[i - base]!;
  /** A cut before entry i keeps no tool result apart from its call and splits no log event's entries. */
  const clean = (i: number) => at(i).role !== 'tool' && (i > base ? seqAt(i) > seqAt(i - 1) : seqAt(i) > 0);
  let cut = Math.min(n - Math.max(1, keepRecent), stepStart);
  while (cut > base && !clean(cut)) cut--;
  if (cut < base || cut === 0 || !clean(cut)) return undefined;
  let direct: number | undefined;
  for (let i = n - 1; i >= base && direct === undefined; i--) {
    const e = at(i);
    if (e.role === 'user' && isDirect(e.source)) direct = i;
  }
  if (direct === undefined || direct >= cut) return cut >= 2 ? { cut } : undefined;
  // Pinned only if it is its event's only entry (not one of a fork's snapshot) and something else is summarised.
  const alone = seqs.filter((s) => s === seqAt(direct)).length === 1;
  if (!alone || cut - 1 < 2) return undefined;
  return { cut, pinned: direct };
}

/** The entries a compaction summarises, and the ones it keeps (the pinned one first) after the summary. */
export function splitAtCut(
  projection: readonly TranscriptEntry[],
  { cut, pinned }: CompactionCut,
): { summarised: TranscriptEntry[]; kept: TranscriptEntry[] } {
  const summarised = projection.slice(0, cut).filter((_, i) => i !== pinned);
  const kept = [...(pinned !== undefined ? [projection[pinned]!] : []), ...projection.slice(cut)];
  return { summarised, kept };
}

/** Estimated tokens of a projection: the sum of its entries' estimates. */
export function estimateProjection(entries: readonly TranscriptEntry[]): number {
  return entries.reduce((sum, e) => sum + estimateTokens(e), 0);
}

/**
 * What a compaction reports once its compactor has summarised the entries before the cut: the summary, and the
 * projection's tokens before and after the summary entry replaces them, counted by `count` (the compaction activity
 * counts with a tokenizer where one fits the compactor's model family).
 */
export function compactionOutcome(
  call: CompactionCut & { throughSeq: number },
  projection: readonly TranscriptEntry[],
  summary: string,
  model: string,
  count: (entries: readonly TranscriptEntry[]) => number = estimateProjection,
): Omit<CompactionResult, 'usage'> {
  const { kept } = splitAtCut(projection, call);
  const after = [summaryEntry(0, { throughSeq: call.throughSeq, summary, model }), ...kept];
  return { summary, tokensBefore: count(projection), tokensAfter: count(after), model };
}

/** The transcript as plain text for a compactor: one paragraph per message, with its role. */
export function renderForSummary(entries: readonly TranscriptEntry[]): string {
  return entries
    .map((e) => {
      const text = (e.content as readonly ContentBlock[]).map(blockText).join('\n');
      if (e.role === 'tool') return `[tool ${e.name} result${e.error ? ' (error)' : ''}]\n${text}`;
      if (e.role === 'assistant') {
        const calls = (e.toolCalls ?? []).map((c) => `${c.name}(${JSON.stringify(c.arguments)})`).join(', ');
        return `[assistant]\n${text}${calls ? `${text ? '\n' : ''}calls: ${calls}` : ''}`;
      }
      return `[${e.source.kind === 'user' ? 'user' : `context from ${e.source.kind}`}]\n${text}`;
    })
    .join('\n\n');
}

/** What a compactor is told to do (the system prompt of a compaction request). */
export const COMPACTION_INSTRUCTIONS =
  'You compact the history of a conversation between a user and an assistant that uses tools. Summarise the ' +
  'transcript you are given so the assistant can continue the conversation without it: keep the user’s goals and ' +
  'constraints, decisions made, facts learned from tool results (names, numbers, paths, ids), open questions and ' +
  'unfinished work. Write plain prose and short lists; do not address the user; at most a few hundred words.';

export { summaryEntry } from './entry';
