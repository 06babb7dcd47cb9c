/**
 * Records the replay corpus (semantics scenario 26; STYLE.md 12). With RECORD_HISTORIES=1 the scenarios of
 * record.ts rewrite test/replay/histories/ (review the diff, then commit); without it the same histories are
 * recorded into a temporary folder and replayed at once with the current bundle, so every run of the suite also
 * replays freshly recorded histories, not only the golden ones.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { createTimeSkippingEnv } from '../../src/devserver';
import { replayHistories } from '../../src/testing';
import { CORPUS_DIR, recordCorpus, SCENARIOS } from './record';

const rewrite = process.env.RECORD_HISTORIES === '1';
let env: TestWorkflowEnvironment;
let outDir: string;

beforeAll(async () => {
  env = await createTimeSkippingEnv();
  outDir = rewrite ? CORPUS_DIR : mkdtempSync(path.join(os.tmpdir(), 'agent-sessions-histories-'));
});
afterAll(async () => {
  await env?.teardown();
  if (outDir && !rewrite) rmSync(outDir, { recursive: true, force: true });
});

it(`records ${SCENARIOS.length} scenarios${rewrite ? ' into the corpus' : ''} and replays them with the current bundle`, async () => {
  const bundle = { codePath: inject('workflowBundlePath') };
  const files = await recordCorpus(env, bundle, outDir);
  expect(files.length).toBeGreaterThanOrEqual(SCENARIOS.length);
  const summary = await replayHistories(outDir, { workflowBundle: bundle });
  expect(summary.replayed).toBe(files.length);
});
