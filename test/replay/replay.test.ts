/**
 * Rule 34 / scenario 26: every golden history in test/replay/histories/ replays with the current workflow code (the
 * test bundle: agentSession and its pre-step variants) without a determinism error. And the check can fail: a copy of
 * a golden history whose recorded commands no longer match what the code does is reported, naming the file.
 *
 * When this test fails after a workflow change, read docs/testing.md ("When a change breaks replay").
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { HistoryReplayError, replayHistories, replayHistoryFiles } from '../../src/testing';
import { CORPUS_DIR } from './record';

const bundle = () => ({ workflowBundle: { codePath: inject('workflowBundlePath') } });
const tmpDirs: string[] = [];
afterAll(() => {
  for (const dir of tmpDirs) rmSync(dir, { recursive: true, force: true });
});

interface JsonEvent {
  eventType: string;
  activityTaskScheduledEventAttributes?: { activityType: { name: string } };
  [key: string]: unknown;
}

const golden = (name: string) =>
  JSON.parse(readFileSync(path.join(CORPUS_DIR, name), 'utf8')) as { events: JsonEvent[] };

/** Writes `history` as `<name>` into a fresh temporary folder and returns the folder. */
function folderWith(name: string, history: unknown): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'agent-sessions-replay-'));
  tmpDirs.push(dir);
  writeFileSync(path.join(dir, name), JSON.stringify(history));
  return dir;
}

describe('replay corpus', () => {
  it('replays every golden history with the current workflow code', async () => {
    const files = readdirSync(CORPUS_DIR).filter((f) => f.endsWith('.json'));
    expect(files.length).toBeGreaterThanOrEqual(8);
    const summary = await replayHistories(CORPUS_DIR, bundle());
    expect(summary).toEqual({
      replayed: files.length,
      files: files.sort().map((f) => path.join(CORPUS_DIR, f)),
    });
  });

  it("carries the old branch of patched('deliver-checks-config'): a deliver accepted before the names were checked", async () => {
    // Recorded with the workflow code of the commit before the patch (6ad661d; docs/testing.md, "The replay
    // corpus"): the session names a tool, and its first message comes through the `deliver` update. No run of today's
    // code writes this history: it checks the names before accepting, so the update waits for `describeTools`. On
    // replay `patched` is false (no marker), the handler takes the old branch and accepts at once, as recorded; the
    // corpus test above replays it, and fails without the old branch (a nondeterminism error at the update).
    const history = golden('patch-deliver-checks-config-old-branch-v0.json');
    // The session's config, the workflow's first argument.
    const started = history.events[0]!.workflowExecutionStartedEventAttributes as {
      input: { payloads: { data: string }[] };
    };
    const config = JSON.parse(Buffer.from(started.input.payloads[0]!.data, 'base64').toString()) as {
      tools?: string[];
    };
    expect(config.tools).toEqual(['echo']);
    expect(JSON.stringify(history)).not.toContain('deliver-checks-config');
    expect(history.events.some((e) => e.eventType === 'EVENT_TYPE_MARKER_RECORDED')).toBe(false);
    const at = (type: string, activity?: string) =>
      history.events.findIndex(
        (e) =>
          e.eventType === type &&
          (activity === undefined || e.activityTaskScheduledEventAttributes?.activityType.name === activity),
      );
    const completed = at('EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED');
    const described = at('EVENT_TYPE_ACTIVITY_TASK_SCHEDULED', 'describeTools');
    expect(completed).toBeGreaterThan(0);
    expect(described).toBeGreaterThan(completed);
    const file = path.join(CORPUS_DIR, 'patch-deliver-checks-config-old-branch-v0.json');
    expect(await replayHistoryFiles([file], bundle())).toEqual({ replayed: 1, files: [file] });
  });

  it("carries the old branch of patched('refused-session-ends'): a refused new session stayed idle and ran on", async () => {
    // Recorded with the workflow code before the patch (35f5d69): a session naming a tool no worker registers ends
    // turn 1 in error, stays idle, and its next follow-up opens turn 2, which asks the worker again (two
    // describeTools). Today's code disposes such a session after turn 1; on replay `patched` is false (no marker), so
    // it stays, as recorded.
    const history = golden('patch-refused-session-ends-old-branch-v1.json');
    expect(JSON.stringify(history)).not.toContain('refused-session-ends');
    expect(history.events.some((e) => e.eventType === 'EVENT_TYPE_MARKER_RECORDED')).toBe(false);
    const described = history.events.filter(
      (e) => e.activityTaskScheduledEventAttributes?.activityType.name === 'describeTools',
    );
    expect(described).toHaveLength(2);
    const file = path.join(CORPUS_DIR, 'patch-refused-session-ends-old-branch-v1.json');
    expect(await replayHistoryFiles([file], bundle())).toEqual({ replayed: 1, files: [file] });
  });

  it('fails, naming the file, when a recorded command no longer matches the code (a renamed activity)', async () => {
    const history = golden('scenario-05-inject-from-tool-v1.json');
    const scheduled = history.events.filter((e) => e.eventType === 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED');
    const model = scheduled.find(
      (e) => e.activityTaskScheduledEventAttributes?.activityType.name === 'modelStep',
    );
    expect(model).toBeDefined();
    model!.activityTaskScheduledEventAttributes!.activityType.name = 'modelStepV0';
    const dir = folderWith('renamed-activity.json', history);

    const error = await replayHistories(dir, bundle()).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(HistoryReplayError);
    const failure = (error as HistoryReplayError).failures[0]!;
    expect(failure.file).toBe(path.join(dir, 'renamed-activity.json'));
    expect(failure.error.name).toBe('DeterminismViolationError');
    expect((error as Error).message).toContain('renamed-activity.json');
    expect((error as Error).message).toMatch(/modelStepV0|modelStep/);
  });

  it('fails when the history holds a command the code does not issue at that point (describeTools for modelStep)', async () => {
    // Scenario 2's session has no tools, so its first activity is the model call; a history whose first activity
    // resolves tools is what a change in when tools are resolved would leave behind.
    const history = golden('scenario-02-idle-inject-followup-v1.json');
    const model = history.events.find((e) => e.eventType === 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED')!;
    model.activityTaskScheduledEventAttributes!.activityType.name = 'describeTools';
    const dir = folderWith('scenario-02-changed.json', history);
    await expect(replayHistories(dir, bundle())).rejects.toThrow(
      /scenario-02-changed\.json: DeterminismViolationError/,
    );
  });

  it('reports every failing file of a folder, and replays the good ones', async () => {
    const dir = folderWith('good.json', golden('scenario-16-cancel-during-model-v1.json'));
    const bad = golden('scenario-11-tool-batch-contexts-v1.json');
    const tool = bad.events.find(
      (e) => e.activityTaskScheduledEventAttributes?.activityType.name === 'executeTool',
    )!;
    tool.activityTaskScheduledEventAttributes!.activityType.name = 'runTool';
    writeFileSync(path.join(dir, 'bad.json'), JSON.stringify(bad));
    const error = (await replayHistories(dir, bundle()).catch((err: unknown) => err)) as HistoryReplayError;
    expect(error).toBeInstanceOf(HistoryReplayError);
    expect(error.failures.map((f) => path.basename(f.file))).toEqual(['bad.json']);
    expect(error.summary.replayed).toBe(1);
  });
});
