/**
 * The operator commands of docs/upgrades.md (`versions`, `check`, `promote`, `ramp`, `rollback`), run as the built
 * CLI against the dev server with two real builds: v1 (the test bundle) and v2 (test/fixtures/workflowsV2.ts, one
 * more command before every model call, so v1 histories do not replay on it). Needs `npm run build` (dist).
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ScriptedRecorder } from '../../src/activities/model';
import { testingTools } from '../../src/activities/testingTools';
import type { ToolDefinition } from '../../src/activities/tools';
import { SessionClient, type DeploymentReport } from '../../src/client';
import { createDevServerEnv } from '../../src/devserver';
import type { SessionConfig } from '../../src/domain/wire';
import { bundleWorkflows, createSessionWorker } from '../../src/worker';
import { settle, waitUntil } from '../support/sessionEnv';
import { CLI, processEnv } from '../support/workerProcess';

let env: TestWorkflowEnvironment;
let v2Path: string;
const stops: (() => Promise<void>)[] = [];

beforeAll(async () => {
  const [e, { code }] = await Promise.all([
    createDevServerEnv(),
    bundleWorkflows({ workflowsPath: path.join(__dirname, '../fixtures/workflowsV2.ts') }),
  ]);
  env = e;
  v2Path = path.join(mkdtempSync(path.join(tmpdir(), 'as-v2-')), 'workflow-bundle-v2.js');
  writeFileSync(v2Path, code);
}, 120_000);
afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
  await env?.teardown();
});

async function startWorker(taskQueue: string, bundle: { codePath: string }, buildId: string) {
  const worker = await createSessionWorker({
    connection: env.nativeConnection,
    taskQueue,
    tools: testingTools as ToolDefinition[],
    scriptedRecorder: new ScriptedRecorder(),
    workflowBundle: bundle,
    versioning: { deploymentName: taskQueue, buildId },
  });
  const running = worker.run();
  stops.push(async () => {
    worker.shutdown();
    await running;
  });
}

/** The built CLI, run without blocking the workers of this process. */
function cli(taskQueue: string, ...args: string[]) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: processEnv({ TEMPORAL_ADDRESS: env.address, TASK_QUEUE: taskQueue }),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const scripted: SessionConfig = { model: { provider: 'scripted', steps: [{ text: 'hi' }] } };

describe('operator commands', () => {
  it('versions counts sessions per version; check passes v1 and refuses v2; promote, ramp, rollback', async () => {
    const taskQueue = `ops-${randomUUID()}`;
    const s = new SessionClient({ client: env.client, taskQueue });
    await startWorker(taskQueue, { codePath: inject('workflowBundlePath') }, 'v1');
    const v1Sessions = [`ops-a-${randomUUID()}`, `ops-b-${randomUUID()}`];
    for (const id of v1Sessions) {
      await s.start(id, scripted);
      await s.followup(id, 'hello');
    }
    for (const id of v1Sessions) await settle(s, id, 1);
    await startWorker(taskQueue, { codePath: v2Path }, 'v2');

    const versions = async () => {
      const r = await cli(taskQueue, 'versions', '--json');
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout) as DeploymentReport;
    };
    // v2 shows up once its worker has polled; v1 is current with both sessions running.
    const before = await waitUntil(versions, (r) => r.versions.length === 2, 'v2 among the versions');
    expect(before).toMatchObject({ deploymentName: taskQueue, current: 'v1', rampingPercent: 0 });
    expect(before.versions[0]).toMatchObject({ buildId: 'v1', role: 'current', sessions: { Running: 2 } });
    expect(before.versions[1]).toMatchObject({ buildId: 'v2', role: '-', sessions: {} });
    const table = await cli(taskQueue, 'versions');
    expect(table.stdout).toMatch(/^v1\s+current\s+-\s+running 2$/m);
    console.log(`versions before promote:\n${table.stdout}`);

    // check: the v1 sessions (and the corpus) replay on v1; v2 is refused, naming each v1 session and the event.
    const query = `TemporalWorkerDeploymentVersion="${taskQueue}:v1"`;
    const ok = await cli(taskQueue, 'check', '--bundle', inject('workflowBundlePath'), '--query', query);
    expect(ok.code, ok.stdout + ok.stderr).toBe(0);
    for (const id of v1Sessions) expect(ok.stdout).toContain(`ok   session ${id} run `);
    expect(ok.stdout).toMatch(/ok {3}test\/replay\/histories\/.+\.json/);
    console.log(`check v1: ${ok.stdout.trim().split('\n').at(-1)}`);
    const refused = await cli(taskQueue, 'check', '--bundle', v2Path, '--query', query, '--json');
    expect(refused.code, refused.stderr).toBe(1);
    const report = JSON.parse(refused.stdout) as {
      failed: number;
      results: { sessionId?: string; error?: string }[];
    };
    for (const id of v1Sessions)
      expect(report.results.find((r) => r.sessionId === id)?.error).toMatch(/[Nn]ondeterminism/);
    console.log(
      `check v2: ${report.failed} of ${report.results.length} refused, e.g. ${JSON.stringify(report.results.find((r) => r.sessionId))}`,
    );

    // promote v2: a new session starts on it.
    const promoted = await cli(taskQueue, 'promote', '--build-id', 'v2');
    expect(promoted.code, promoted.stderr).toBe(0);
    expect(promoted.stdout).toContain('current version is now v2 (was v1)');
    const onV2 = `ops-c-${randomUUID()}`;
    await s.start(onV2, scripted);
    await s.followup(onV2, 'hello');
    await settle(s, onV2, 1);
    const after = await waitUntil(
      versions,
      (r) => r.versions.find((v) => v.buildId === 'v2')?.sessions.Running === 1,
      'the v2 session counted',
    );
    expect(after.current).toBe('v2');
    expect(after.versions.find((v) => v.buildId === 'v1')).toMatchObject({
      role: '-',
      sessions: { Running: 2 },
    });

    // ramp v1 at 10 %, refuse 150 %, ramp off; roll back to v1.
    const bad = await cli(taskQueue, 'ramp', '--build-id', 'v1', '--percent', '150');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('invalid --percent "150": a percentage from 0 to 100');
    expect((await cli(taskQueue, 'ramp', '--build-id', 'v1', '--percent', '10')).code).toBe(0);
    expect(await versions()).toMatchObject({ current: 'v2', ramping: 'v1', rampingPercent: 10 });
    expect((await cli(taskQueue, 'ramp', '--off')).code).toBe(0);
    expect((await versions()).ramping).toBeUndefined();
    const back = await cli(taskQueue, 'rollback', '--build-id', 'v1');
    expect(back.code, back.stderr).toBe(0);
    expect(back.stdout).toContain('rolled back to v1 (was v2)');
    expect((await versions()).current).toBe('v1');
  }, 120_000);
});
