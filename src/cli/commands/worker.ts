/** `agent-sessions worker`: runs a worker for the agentSession workflow until SIGINT/SIGTERM. */
import type * as WorkerModule from '../../worker';
import { positionals, stringOpt } from '../args';
import { type Command } from '../command';
import { resolveTarget } from '../connect';

export const workerCommand: Command = {
  name: 'worker',
  summary: 'run a worker for the agentSession workflow (until Ctrl-C)',
  usage: 'agent-sessions worker [--toolsets LIST]',
  details: [
    'options:',
    '  --toolsets LIST   comma-separated toolsets to register (env AGENT_SESSIONS_TOOLSETS), e.g. testing',
    "Next to a running `agent-sessions dev` it uses that server, but not the dev chat's task queue: it polls",
    'TASK_QUEUE (default "agent-sessions"). Other settings (TLS, API key) come from the environment: see docs/cli.md.',
    'It runs as a version of a Worker Deployment (AGENT_SESSIONS_DEPLOYMENT, default the task queue; AGENT_SESSIONS_BUILD_ID,',
    'default a hash of its workflow bundle; AGENT_SESSIONS_VERSIONING=off to run unversioned): see docs/upgrades.md.',
  ].join('\n'),
  options: { toolsets: { type: 'string' } },
  connects: true,
  async run(p) {
    positionals(p, []);
    // Next to `agent-sessions dev`: its server, but not its task queue (the dev chat's worker has other tools).
    const target = resolveTarget(p, process.env, { devTaskQueue: false });
    const toolsets = stringOpt(p, 'toolsets');
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      TEMPORAL_NAMESPACE: target.namespace,
      TASK_QUEUE: target.taskQueue,
      ...(toolsets !== undefined ? { AGENT_SESSIONS_TOOLSETS: toolsets } : {}),
    };
    // Loaded only when the command runs: the Temporal worker is heavy for the other commands.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { runWorkerFromEnv } = require('../../worker') as typeof WorkerModule;
    await runWorkerFromEnv(env, target.address);
    return 0;
  },
};
