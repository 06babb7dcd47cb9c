import { configDefaults, defineConfig } from 'vitest/config';

// One run bundles the workflow code once per project (test/global-setup.ts) and hands the bundle's path to every test
// file. Tests run in forked processes: the Temporal worker's native bridge does not belong in worker threads.
// Two projects, both in `npm test`: `main` (everything but the real model), then `e2e` (test/e2e: the real local
// model, CPU-bound) alone, after `main` has finished, one file at a time, so decode speed is not shared.
export default defineConfig({
  test: {
    pool: 'forks',
    maxWorkers: 2,
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    teardownTimeout: 30_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'main',
          include: ['test/**/*.test.ts'],
          // test/cluster: its own tier against scripts/cluster.sh (vitest.cluster.config.mts, npm run test:cluster).
          exclude: [...configDefaults.exclude, 'test/e2e/**', 'test/cluster/**'],
        },
      },
      {
        extends: true,
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          sequence: { groupOrder: 1 },
          fileParallelism: false,
          testTimeout: 180_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
