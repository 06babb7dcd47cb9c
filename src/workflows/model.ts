/**
 * The `model` effect: one model step as the model activity. Entries the run's history holds go by reference
 * (src/domain/entryRefs.ts) and the worker's store gets them through the sink; if the activity cannot resolve a
 * reference (another worker whose store lacks it and whose history read failed), it fails with TranscriptRefMiss and
 * the request is sent once more, all inline. A failure is answered as data. Deterministic (workflow sandbox).
 */
import { proxySinks, type WorkflowInfo } from '@temporalio/workflow';
import { ErrorCodes, FailureTypes, type TranscriptRefSinks } from '../contract';
import type { Answer, ModelCall } from '../domain/effects';
import { referencedEntries, wireEntries } from '../domain/entryRefs';
import { modelLabel } from '../domain/wire';
import { modelActivities } from './activities';
import { failed, failureType } from './errors';

const { transcriptRefs } = proxySinks<TranscriptRefSinks>();

export async function modelStep(info: WorkflowInfo, call: ModelCall): Promise<Answer> {
  const { refs: _refs, newEntries: inline, ...rest } = call;
  const input = {
    ...rest,
    newEntries: wireEntries(call),
    sessionId: info.workflowId,
    chainId: info.firstExecutionRunId,
    runId: info.runId,
  };
  const referenced = referencedEntries(call);
  if (referenced.length) transcriptRefs.remember(referenced);
  const options = { summary: `model ${call.turn}.${call.step} ${modelLabel(call.model)}` };
  try {
    try {
      return { kind: 'ok', result: await modelActivities.modelStep.executeWithOptions(options, [input]) };
    } catch (err) {
      if (!referenced.length || failureType(err) !== FailureTypes.TranscriptRefMiss) throw err;
      const result = await modelActivities.modelStep.executeWithOptions(options, [
        { ...input, newEntries: inline },
      ]);
      return { kind: 'ok', result };
    }
  } catch (err) {
    return failed(err, ErrorCodes.ModelFailed);
  }
}
