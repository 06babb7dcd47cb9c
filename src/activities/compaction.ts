/**
 * The compaction activity's work (src/domain/compaction.ts): assemble the projection a model request would see,
 * ask the compactor to summarise the part before the cut, and count the projection's tokens before and after. Does
 * I/O (the compactor's provider, the transcript cache).
 */
import { countTokens } from 'gpt-tokenizer';
import {
  BINARY_BLOCK_TOKENS,
  COMPACTION_INSTRUCTIONS,
  compactionOutcome,
  estimateProjection,
  renderForSummary,
  splitAtCut,
} from '../domain/compaction';
import { binaryBytes, blockText, textOf, type ContentBlock } from '../domain/messages';
import type { Usage } from '../domain/events';
import type { TranscriptEntry } from '../domain/transcript';
import { modelLabel, type ModelSpec } from '../domain/wire';
import type { ModelCallContext, ModelProvider } from './model';
import type { CompactionInput, CompactionResult } from './types';

/**
 * Tokens of a projection: with the tokenizer of OpenAI's current models (`o200k_base`, gpt-tokenizer) for an
 * OpenAI model, where it is exact up to the provider's per-message framing; otherwise the estimate the workflow uses.
 */
export function countProjection(model: ModelSpec, entries: readonly TranscriptEntry[]): number {
  if (model.provider !== 'openai') return estimateProjection(entries);
  return entries.reduce((sum, e) => sum + contentTokens(e.content) + 4, 0);
}

/** Tokens of an entry's content by the tokenizer: text as JSON, each binary block as BINARY_BLOCK_TOKENS. */
function contentTokens(content: readonly ContentBlock[]): number {
  const media = content.filter((b) => binaryBytes(b) > 0).length;
  const texts = content
    .filter((b) => binaryBytes(b) === 0)
    .map((b) => (b.type === 'text' ? b : { type: 'text', text: blockText(b) }));
  return countTokens(JSON.stringify(texts)) + media * BINARY_BLOCK_TOKENS;
}

/**
 * The summary a scripted compactor gives without a script step: deterministic, short, and naming what it
 * replaced, so offline tests and demos can see a compaction happen.
 */
function scriptedSummary(old: readonly TranscriptEntry[]): string {
  const clip = (text: string) => (text.length > 60 ? `${text.slice(0, 60)}…` : text);
  const firstUser = old.find((e) => e.role === 'user');
  const last = old[old.length - 1]!;
  return `${old.length} earlier messages, from "${clip(firstUser ? textOf(firstUser.content) : '')}" to "${clip(textOf(last.content))}".`;
}

export async function compact(
  input: CompactionInput,
  model: ModelSpec,
  provider: ModelProvider,
  projection: TranscriptEntry[],
  ctx: ModelCallContext,
): Promise<CompactionResult> {
  const { summarised: old } = splitAtCut(projection, input);
  const label = modelLabel(model);
  let summary: string;
  let usage: Usage | undefined;
  if (model.provider === 'scripted' && model.steps.length === 0) summary = scriptedSummary(old);
  else {
    const answer = await provider.step(
      {
        sessionId: input.sessionId,
        turn: input.turn,
        step: input.step,
        requestIndex: 0,
        stepsFrom: 0,
        model,
        system: COMPACTION_INSTRUCTIONS,
        tools: [],
        toolSpecs: [],
        messages: [
          {
            role: 'user',
            id: `compaction-request-${input.throughSeq}`,
            content: [{ type: 'text', text: `Summarise this transcript:\n\n${renderForSummary(old)}` }],
            source: { kind: 'compaction' },
          },
        ],
      },
      ctx,
    );
    summary = answer.text.trim() || scriptedSummary(old);
    usage = answer.usage;
  }
  return {
    ...compactionOutcome(input, projection, summary, label, (entries) => countProjection(model, entries)),
    ...(usage ? { usage } : {}),
  };
}
