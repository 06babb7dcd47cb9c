/**
 * `agent-sessions check`: before a new build becomes current, replays a sample of real histories from the namespace
 * (the latest runs of sessions of each status) and the repo's corpus against its bundle, and refuses (exit 1) on any
 * nondeterminism, naming the session and the event (docs/upgrades.md "Operator commands"). Replay only catches
 * changes on the code paths a history used: sample sessions that did real work.
 */
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import type { History as TemporalHistory } from '@temporalio/common/lib/proto-utils';
import type * as TemporalWorker from '@temporalio/worker';
import { encryptionDataConverter } from '../../codec';
import { EXECUTION_STATUSES } from '../../client';
import type { TranscriptRefSinks } from '../../contract';
import type * as History from '../../testing/history';
import { loadConfig } from '../../worker/config';
import type * as WorkerEntry from '../../worker';
import { boolOpt, intOpt, positionals, stringOpt } from '../args';
import { out, type Command } from '../command';
import { withSessions } from '../connect';
import { UsageError } from '../errors';

// Loaded only when the command runs: they pull in the Temporal worker and the bundler.
/* eslint-disable @typescript-eslint/no-require-imports */
const history = () => require('../../testing/history') as typeof History;
const bundler = () => require('../../worker') as typeof WorkerEntry;
const temporalWorker = () => require('@temporalio/worker') as typeof TemporalWorker;
/* eslint-enable @typescript-eslint/no-require-imports */

/** The corpus read when `--corpus` is not given, relative to the working directory (when it exists). */
export const DEFAULT_CORPUS = 'test/replay/histories';
const DEFAULT_SAMPLE = 5;

/** One history checked and how it went. */
export interface CheckResult {
  /** `session <id> run <runId> (<status>)` or the corpus file. */
  source: string;
  sessionId?: string;
  runId?: string;
  status?: string;
  file?: string;
  error?: string;
}

/** The part of a replay error that names the event and the command (`[TMPRL1100] Nondeterminism error: …`). */
export function replayErrorDetail(err: Error): string {
  const m = /\[TMPRL\d+\][^"\n]*/.exec(err.message);
  return `${err.name}: ${m ? m[0].trim() : (err.message.split('\n')[0] ?? err.message)}`;
}

/** Up to `sample` latest runs of each status of `workflowType`, with their histories. */
async function sampleHistories(client: Client, workflowType: string, sample: number, query?: string) {
  const picked: { sessionId: string; runId: string; status: string; history: TemporalHistory }[] = [];
  for (const status of EXECUTION_STATUSES) {
    const q = [
      `WorkflowType = ${JSON.stringify(workflowType)}`,
      `ExecutionStatus = ${JSON.stringify(status)}`,
      ...(query ? [`(${query})`] : []),
    ].join(' AND ');
    let n = 0;
    for await (const run of client.workflow.list({ query: q, pageSize: sample })) {
      if (n++ >= sample) break;
      const h = await client.workflow.getHandle(run.workflowId, run.runId).fetchHistory();
      picked.push({ sessionId: run.workflowId, runId: run.runId, status, history: h });
    }
  }
  return picked;
}

export const checkCommand: Command = {
  name: 'check',
  summary:
    'replay real histories of the namespace and the corpus against a new build before it becomes current',
  usage:
    'agent-sessions check (--bundle PATH | --workflows PATH) [--sample N] [--corpus DIR] [--query Q] [--json]',
  details: [
    'Fetches the latest runs of up to N sessions of each status (Running, Completed, ContinuedAsNew, …) and replays',
    'them, with the histories of the corpus folder, against the given build. Exit 1 when any fails, naming the session',
    'and the event. Replay only catches changes on the code paths a history used.',
    'options:',
    '  --bundle PATH       a built workflow bundle (e.g. the new release’s dist/workflow-bundle.js)',
    '  --workflows PATH    a workflows module to bundle instead',
    `  --sample N          sessions of each status to replay (default ${DEFAULT_SAMPLE}; 0: the corpus only)`,
    `  --corpus DIR        history files to replay too (default ${DEFAULT_CORPUS} when it exists)`,
    '  --query Q           a raw visibility query narrowing the sample (e.g. TemporalWorkerDeploymentVersion="D:v1")',
    '  --json              print the results as one JSON object',
  ].join('\n'),
  options: {
    bundle: { type: 'string' },
    workflows: { type: 'string' },
    sample: { type: 'string' },
    corpus: { type: 'string' },
    query: { type: 'string' },
    json: { type: 'boolean' },
  },
  connects: true,
  async run(p) {
    positionals(p, []);
    const bundlePath = stringOpt(p, 'bundle');
    const workflowsPath = stringOpt(p, 'workflows');
    if ((bundlePath === undefined) === (workflowsPath === undefined))
      throw new UsageError('give exactly one of --bundle PATH and --workflows PATH (the build to check)');
    for (const [flag, file] of [
      ['--bundle', bundlePath],
      ['--workflows', workflowsPath],
    ] as const)
      if (file !== undefined && !existsSync(file))
        throw new UsageError(`invalid ${flag}: no such file: ${file}`);
    const sample = intOpt(p, 'sample', 0) ?? DEFAULT_SAMPLE;
    if (sample > 1000) throw new UsageError(`invalid --sample "${sample}": at most 1000`);
    const corpusOpt = stringOpt(p, 'corpus');
    if (corpusOpt !== undefined && !(existsSync(corpusOpt) && statSync(corpusOpt).isDirectory()))
      throw new UsageError(`invalid --corpus: no such folder: ${corpusOpt}`);
    const corpus = corpusOpt ?? (existsSync(DEFAULT_CORPUS) ? DEFAULT_CORPUS : undefined);
    const query = stringOpt(p, 'query');
    const { Runtime, DefaultLogger, makeTelemetryFilterString, Worker } = temporalWorker();
    Runtime.install({
      logger: new DefaultLogger('ERROR'),
      telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'ERROR', other: 'ERROR' }) } },
    });
    const keyring = loadConfig(process.env).encryption;
    return withSessions(p, async (sessions) => {
      const workflowBundle = bundlePath
        ? { codePath: path.resolve(bundlePath) }
        : await bundler().bundleWorkflows({ workflowsPath: path.resolve(workflowsPath!) });
      const worker = {
        replayName: 'agent-sessions-check',
        ...(keyring ? { dataConverter: encryptionDataConverter(keyring) } : {}),
      };
      const results: CheckResult[] = [];
      const picked = sample
        ? await sampleHistories(sessions.client, sessions.workflowType, sample, query)
        : [];
      const sinks: TemporalWorker.InjectedSinks<TranscriptRefSinks> = {
        transcriptRefs: { remember: { fn: () => undefined, callDuringReplay: false } },
      };
      const replays = Worker.runReplayHistories(
        { ...worker, sinks, workflowBundle },
        picked.map((h) => ({ workflowId: h.sessionId, history: h.history })),
      );
      for await (const r of replays) {
        const h = picked.find((x) => x.sessionId === r.workflowId && x.runId === r.runId);
        results.push({
          source: `session ${r.workflowId} run ${r.runId}${h ? ` (${h.status})` : ''}`,
          sessionId: r.workflowId,
          runId: r.runId,
          ...(h ? { status: h.status } : {}),
          ...(r.error ? { error: replayErrorDetail(r.error) } : {}),
        });
      }
      if (corpus) {
        const h = history();
        let failures: History.ReplayFailure[] = [];
        let files: string[] = [];
        try {
          files = (await h.replayHistoryFiles([corpus], { workflowBundle, worker })).files;
        } catch (err) {
          if (!(err instanceof h.HistoryReplayError)) throw err;
          ({ failures } = err);
          files = err.summary.files;
        }
        for (const file of files) {
          const f = failures.find((x) => x.file === file);
          const rel = path.relative(process.cwd(), file);
          results.push({ source: rel, file: rel, ...(f ? { error: replayErrorDetail(f.error) } : {}) });
        }
      }
      const failed = results.filter((r) => r.error);
      if (boolOpt(p, 'json'))
        out(JSON.stringify({ checked: results.length, failed: failed.length, results }));
      else {
        for (const r of results) out(r.error ? `FAIL ${r.source}: ${r.error}` : `ok   ${r.source}`);
        out(
          failed.length
            ? `refused: ${failed.length} of ${results.length} histories do not replay on this build`
            : `${results.length} histories replayed on this build, none failed`,
        );
      }
      if (results.length === 0) out('nothing to check: no sessions sampled and no corpus');
      return failed.length ? 1 : 0;
    });
  },
};
