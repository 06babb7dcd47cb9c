import { defineConfig } from 'vitest/config';

// The cluster tier (`npm run test:cluster`): test/cluster/ against the Temporal cluster of scripts/cluster.sh, which
// must be up (`bash scripts/cluster.sh up`). Not part of `npm test`; .ci/run runs it between `up` and `down`. One
// file at a time: the tests kill parts of the one shared cluster. The workflow bundle for replay is built once by
// the same global setup as the main suite.
export default defineConfig({
  test: {
    name: 'cluster',
    include: ['test/cluster/**/*.test.ts'],
    pool: 'forks',
    fileParallelism: false,
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 180_000,
    hookTimeout: 240_000,
    teardownTimeout: 30_000,
  },
});
