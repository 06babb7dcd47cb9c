/**
 * Runs once per `vitest run`: bundles the workflow code of the test fixtures (our `agentSession` plus the test-only
 * variants with pre-step listeners) and provides the bundle's path, so every worker in every test file loads the
 * same bundle instead of re-running webpack.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    workflowBundlePath: string;
  }
}

export async function setup(project: TestProject): Promise<void> {
  const root = path.resolve(__dirname, '..');
  const { code } = await bundleWorkflowCode({
    workflowsPath: path.join(root, 'test/fixtures/workflows.ts'),
    // The sessions' payload converter, as every bundle of ours has it (src/worker/bundle.ts).
    payloadConverterPath: path.join(root, 'src/contract/payloadConverter.ts'),
    logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} },
  });
  const dir = path.join(root, '.cache');
  mkdirSync(dir, { recursive: true });
  const bundlePath = path.join(dir, `workflow-bundle-${process.pid}.js`);
  writeFileSync(bundlePath, code);
  project.provide('workflowBundlePath', bundlePath);
}
