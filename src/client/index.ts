/**
 * The client's entry (`import { SessionClient } from '../client'`): other code and package users import the client,
 * its errors and its types from here only (the lint layer rule). One file per concept behind it:
 * - ./sessionClient.ts — SessionClient and its verbs (thin: each validates, calls, maps failures)
 * - ./options.ts — the client's options and defaults; the options every workflow start shares
 * - ./inputs.ts — messages, configs and other inputs checked before sending; message ids assigned
 * - ./fork.ts — `fork`: a new session from a source's transcript up to a turn boundary
 * - ./visibility.ts — `list`, `usage`, `row`: the visibility query, rows, the search-attribute check
 * - ./paging.ts — reading the log and transcript across the runs of a continue-as-new chain
 * - ./poll.ts — the one poll loop of `watch` and `stream`, and `delay`
 * - ./watch.ts, ./stream.ts — the pure folds: inbox notifications, live-text deltas
 * - ./sdk.ts — the only importer of SDK-internal paths: raw visibility rows, heartbeat details
 * - ./retry.ts — which `deliver` failures are transient, the backoff, the retry loop
 * - ./failures.ts — which Temporal failure becomes which client error; ./errors.ts — those errors
 * - ./schedules.ts — recurring followups (Temporal Schedules)
 * - ./upgrade.ts — `upgradeSessions`: ask sessions on an old version to move now (docs/upgrades.md)
 * - ./deployments.ts — a Worker Deployment's versions with their sessions; promote, ramp, roll back
 */
export { SessionClient } from './sessionClient';
export type { SessionClientOptions } from './options';
export * from './errors';
export { sessionSummary } from '../contract/searchAttributes';
export {
  FollowupScheduleSchema,
  OVERLAP_POLICIES,
  ScheduleNotFoundError,
  SessionSchedules,
  type FollowupSchedule,
  type FollowupScheduleOptions,
  type OverlapPolicy,
} from './schedules';
export { DEFAULT_DELIVERY_RETRY, type DeliveryRetryPolicy } from './retry';
export { ForkOptionsSchema, type ForkOptions, type ForkReceipt } from './fork';
export type { MessageArg } from './inputs';
export {
  listQuery,
  MAX_LIST_LIMIT,
  type SessionListFilters,
  type SessionPage,
  type SessionRow,
  type UsageSummary,
} from './visibility';
export { delay } from './poll';
export {
  DEFAULT_UPGRADE_RATE,
  upgradeSessions,
  UpgradeOptionsSchema,
  type UpgradeOptions,
  type UpgradeReport,
} from './upgrade';
export {
  describeVersions,
  EXECUTION_STATUSES,
  setCurrentVersion,
  setRampingVersion,
  type DeploymentReport,
  type ExecutionStatusName,
  type VersionReport,
} from './deployments';
export type { WatchItem } from './watch';
export type { LiveText, StreamItem, TextDelta } from './stream';
