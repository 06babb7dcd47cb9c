/**
 * The sandbox line, enforced at bundle time (STYLE.md 1): our workflow entry bundles with Temporal's bundler, which
 * refuses Node built-ins and I/O modules, so a stray import fails CI before it fails a worker.
 */
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';

const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };
const root = path.resolve(__dirname, '../..');

describe('workflow bundle', () => {
  it('bundles src/workflows/index.ts without Node built-ins or the client, worker and activity packages', async () => {
    const { code } = await bundleWorkflowCode({
      workflowsPath: path.join(root, 'src/workflows/index.ts'),
      logger: quiet,
    });
    expect(code).toContain('agentSession');
    for (const forbidden of [
      '@temporalio/client/lib',
      '@temporalio/worker/lib',
      '@temporalio/activity/lib',
      'src/activities/index',
    ]) {
      expect(code).not.toContain(forbidden);
    }
  });

  it('refuses a workflow module that imports a Node built-in', async () => {
    await expect(
      bundleWorkflowCode({
        workflowsPath: path.join(root, 'test/fixtures/bad-workflow/index.ts'),
        logger: quiet,
      }),
    ).rejects.toThrow(/Webpack finished with errors/);
  });
});
