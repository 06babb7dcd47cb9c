/**
 * The `compact` effect (src/domain/compaction.ts): the compactor's activity, with the model activity's options. A
 * failure is answered as data. Deterministic (workflow sandbox).
 */
import type { WorkflowInfo } from '@temporalio/workflow';
import { ErrorCodes } from '../contract';
import type { Answer, CompactionCall } from '../domain/effects';
import { modelLabel } from '../domain/wire';
import { modelActivities } from './activities';
import { failed } from './errors';

export async function compaction(info: WorkflowInfo, call: CompactionCall): Promise<Answer> {
  const input = {
    ...call,
    sessionId: info.workflowId,
    chainId: info.firstExecutionRunId,
    runId: info.runId,
  };
  const options = { summary: `compact ${call.turn}.${call.step} ${modelLabel(call.model)}` };
  try {
    return {
      kind: 'ok',
      result: await modelActivities.compactTranscript.executeWithOptions(options, [input]),
    };
  } catch (err) {
    return failed(err, ErrorCodes.CompactionFailed);
  }
}
