/**
 * Global setup of the cluster tier (vitest.cluster.config.mts): brings the cluster of scripts/cluster.sh up when it
 * is not running, and takes it down again when the run ends — whether the tests passed or failed, and also when `up`
 * itself failed half-way. A cluster that was already up (a developer's `bash scripts/cluster.sh up`) is used and
 * left running. AGENT_SESSIONS_CLUSTER_KEEP=1 leaves up a cluster this setup started (to read its logs or retry).
 * Prints the script's progress, so CI logs show how long `up` and `down` took and why they failed.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';

const SCRIPT = path.resolve(__dirname, '../../scripts/cluster.sh');

/** Runs scripts/cluster.sh with `args`; `quiet` swallows its output. Resolves with its exit code. */
function script(args: string[], quiet = false): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [SCRIPT, ...args], {
      stdio: ['ignore', quiet ? 'ignore' : 'inherit', 'inherit'],
    });
    child.once('error', reject);
    child.once('close', (code) => resolve(code ?? 1));
  });
}

export async function setup(): Promise<() => Promise<void>> {
  if ((await script(['status'], true)) === 0) {
    console.log('cluster tier: using the running cluster (left running)');
    return async () => {};
  }
  const started = Date.now();
  const code = await script(['up']);
  if (code !== 0) {
    await script(['down']);
    throw new Error(`scripts/cluster.sh up failed (exit ${code}); the output above says why`);
  }
  console.log(`cluster tier: cluster up in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return async () => {
    if (process.env.AGENT_SESSIONS_CLUSTER_KEEP === '1') {
      console.log(
        'cluster tier: AGENT_SESSIONS_CLUSTER_KEEP=1: the cluster stays up (bash scripts/cluster.sh down)',
      );
      return;
    }
    const code = await script(['down']);
    if (code !== 0) throw new Error(`scripts/cluster.sh down failed (exit ${code})`);
  };
}
