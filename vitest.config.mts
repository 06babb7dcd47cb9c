import { defineConfig } from 'vitest/config';

// One run bundles the workflow code once (test/global-setup.ts) and hands the bundle's path to every test file.
// Tests run in forked processes: the Temporal worker's native bridge does not belong in worker threads.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 2,
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    teardownTimeout: 30_000,
  },
});
