/**
 * Decoding the server's raw answers with SDK internals: the only file of the client that imports SDK-internal
 * paths (`@temporalio/…/lib/…`), so an SDK upgrade that moves them breaks here and nowhere else. Reads visibility's
 * raw rows (`list` pages, which `client.workflow.list` cannot resume) and the model activity's heartbeat details in
 * a DescribeWorkflowExecution answer (`stream`'s live text). Decodes only; the caller does the RPC.
 */
import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
// Visibility's raw rows into the SDK's WorkflowExecutionInfo, as `client.workflow.list` does.
import { executionInfoFromRaw } from '@temporalio/client/lib/helpers';
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow';
import { optionalTsToMs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { liveTextOf, type LiveText } from './stream';

const ACTIVITY_STARTED = temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED;

type RawExecution = temporal.api.workflow.v1.IWorkflowExecutionInfo;
type RawDescription = temporal.api.workflowservice.v1.IDescribeWorkflowExecutionResponse;

/** One raw visibility row as the SDK's WorkflowExecutionInfo (search attributes and memo decoded). */
export function executionInfoOf(
  client: Client,
  raw: RawExecution,
): Promise<Omit<WorkflowExecutionInfo, 'raw'>> {
  return executionInfoFromRaw(raw, client.options.loadedDataConverter, raw, client.options.namespace);
}

/** The text so far of the model step a described workflow runs (its model activity's heartbeat), if one streams. */
export async function liveTextOfDescription(
  client: Client,
  raw: RawDescription,
): Promise<LiveText | undefined> {
  for (const activity of raw.pendingActivities ?? []) {
    if (activity.activityType?.name !== 'modelStep') continue;
    // Between attempts (a retry's backoff) the server shows the next attempt's number beside the failed attempt's
    // last details: those are not the new attempt's text.
    if (activity.state !== ACTIVITY_STARTED) continue;
    const payloads = activity.heartbeatDetails?.payloads;
    if (!payloads?.length) continue;
    // Details an earlier attempt left behind are not this attempt's text.
    const beat = optionalTsToMs(activity.lastHeartbeatTime);
    const started = optionalTsToMs(activity.lastStartedTime);
    if (beat === undefined || (started !== undefined && beat < started)) continue;
    const details = await decodeFromPayloadsAtIndex(client.options.loadedDataConverter, 0, payloads);
    const live = liveTextOf(details, activity.attempt ?? 1);
    if (live) return live;
  }
  return undefined;
}
