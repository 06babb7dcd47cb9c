/**
 * The built-in first stage of every pre-step (docs/protocol.md "Cross-session references"): for each claimed direct
 * message that references other sessions, the `snapshotSessionRef` activity takes each snapshot on the worker (its
 * result in this session's history freezes it), and each snapshot enters as its own context message right before
 * the message that asked for it. The pre-step's listeners and hooks then see the batch with the snapshots in it, so
 * they can veto them; a refused reference rejects the pre-step (the turn ends `blocked`, the reason naming the
 * reference), so neither the snapshots nor the message enter. A batch without references runs no activity.
 * Deterministic (workflow sandbox).
 */
import { isCancellation, proxyActivities, uuid4 } from '@temporalio/workflow';
import type { SessionActivities } from '../activities';
import { makeUserMessage, type UserMessage } from '../domain/messages';
import { refsOf, snapshotSource } from '../domain/sessionRefs';
import { sizeGuarded } from './payloadGuard';

const refActivities = sizeGuarded(
  proxyActivities<Pick<SessionActivities, 'snapshotSessionRef'>>({
    startToCloseTimeout: '1 minute',
    scheduleToCloseTimeout: '5 minutes',
    retry: {
      initialInterval: '1 second',
      backoffCoefficient: 2,
      maximumInterval: '10 seconds',
      maximumAttempts: 3,
    },
  }),
);

export type StagedBatch = { kind: 'enter'; batch: UserMessage[] } | { kind: 'reject'; reason: string };

/** The claimed batch with each referencing message's snapshots before it, or the reject of a refused reference. */
export async function stageSessionRefs(
  reader: string,
  labels: readonly string[],
  batch: readonly UserMessage[],
): Promise<StagedBatch> {
  if (!batch.some((m) => refsOf(m).length > 0)) return { kind: 'enter', batch: [...batch] };
  const taken = await Promise.all(
    batch.map((message) =>
      Promise.all(
        refsOf(message).map(async (ref, i) => {
          const where = `message ${message.id}: refs[${i}] (session ${ref.session})`;
          try {
            const result = await refActivities.snapshotSessionRef.executeWithOptions(
              { summary: `snapshot of session ${ref.session} for ${message.id}` },
              [
                {
                  reader,
                  readerLabels: [...labels],
                  session: ref.session,
                  ...(ref.throughSeq !== undefined ? { throughSeq: ref.throughSeq } : {}),
                },
              ],
            );
            if (result.kind === 'refused')
              return { kind: 'reject' as const, reason: `${where}: ${result.reason}` };
            return { kind: 'ok' as const, ref, result };
          } catch (err) {
            if (isCancellation(err)) throw err;
            const cause = err instanceof Error ? (err.cause instanceof Error ? err.cause : err) : undefined;
            return {
              kind: 'reject' as const,
              reason: `${where}: could not be read: ${cause?.message ?? String(err)}`,
            };
          }
        }),
      ),
    ),
  );
  const out: UserMessage[] = [];
  for (const [k, message] of batch.entries()) {
    for (const t of taken[k]!) {
      if (t.kind === 'reject') return { kind: 'reject', reason: t.reason };
      // Ids are drawn here, in batch order, whatever order the activities completed in.
      const source = snapshotSource({
        session: t.ref.session,
        throughSeq: t.result.throughSeq,
        messages: t.result.messages,
        bytes: t.result.bytes,
        forMessage: message.id,
      });
      out.push(makeUserMessage({ content: t.result.text }, source, uuid4));
    }
    out.push(message);
  }
  return { kind: 'enter', batch: out };
}
