/**
 * A user's test run with the testing kit prints no noise (issue 35, part 5): a child process imports
 * `agent-sessions/testing` (the package's own export, from dist/), runs one session on the time-skipping server and
 * prints one line. Neither core's server capability warning nor the search attribute check's UNIMPLEMENTED warning
 * appears, and the SDK's own INFO lines count as DEBUG. Needs `npm run build`.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, expect, it } from 'vitest';

const ROOT = path.resolve(__dirname, '../..');
const SCRIPT = path.join(ROOT, 'test/fixtures/quiet-testing-kit.mjs');

beforeAll(() => {
  if (!existsSync(path.join(ROOT, 'dist/testing/index.js')))
    throw new Error('dist/ is missing: run `npm run build` before this test');
});

function run(): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SCRIPT], { cwd: ROOT, env: { ...process.env, NO_COLOR: '1' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

it('a testing-kit run on the time-skipping server prints its own line and no noise', async () => {
  const { code, stdout, stderr } = await run();
  const output = stdout + stderr;
  expect(code, output).toBe(0);
  expect(stdout).toMatch(/^ok \d+$/m);
  expect(output).not.toContain('could not check the session search attributes');
  expect(output).not.toContain('activity_failure_include_heartbeat');
  expect(output).not.toContain('Worker state changed');
}, 120_000);
