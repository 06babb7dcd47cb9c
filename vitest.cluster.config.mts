import { defineConfig } from 'vitest/config';

// The cluster tier (`npm run test:cluster`): test/cluster/ against the Temporal cluster of scripts/cluster.sh. Not
// part of `npm test`; .ci/run runs it as its own phase. The tier's global setup brings the cluster up when it is not
// running and down at the end (also on failure); a cluster that was already up is used and left running. One file
// at a time: the tests kill parts of the one shared cluster and start a TLS frontend in it. The workflow bundle for
// replay is built once by the same global setup as the main suite.
export default defineConfig({
  test: {
    name: 'cluster',
    include: ['test/cluster/**/*.test.ts'],
    pool: 'forks',
    fileParallelism: false,
    globalSetup: ['test/global-setup.ts', 'test/cluster/global-setup.ts'],
    testTimeout: 180_000,
    hookTimeout: 240_000,
    teardownTimeout: 60_000,
  },
});
