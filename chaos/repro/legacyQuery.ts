/**
 * A reproduction of an upstream Temporal defect found by the chaos suite (docs/reliability.md, "Known upstream
 * defect"): a query answered by a worker that does not have the run cached, at a moment when the run's history holds
 * an event no workflow task has processed yet (here an activity's result), makes that worker apply the event to the
 * workflow in an activation of its own and keep the resulting state in its cache. A signal that arrives afterwards is
 * then processed after the result on that worker, while a replay of the same history processes both in one
 * activation, signal first. The live execution and the replay disagree: a nondeterminism error, and the run's next
 * workflow task on any other worker fails for good.
 *
 *   npm run chaos:repro     # prints one JSON line; exits 1 when the replay fails (the defect is present)
 *
 * Steps, each on this machine's dev server: worker A (workflows) runs the first task and is SIGKILLed (its sticky
 * queue is now dead); a query sent then waits on that sticky queue; the activity (its own worker) completes, and the
 * workflow task it schedules waits on the dead sticky queue too; worker C starts; the query moves to the normal queue
 * first and C answers it from a fresh replay that includes the activity's result; a signal follows; the workflow task
 * moves to the normal queue and C runs it on the cached state. Then the history is replayed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { spawnDevServer } from '../../src/devserver';

const WORKFLOWS = require.resolve('./legacyQueryWorkflow');
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function runWorker(role: string, address: string): Promise<void> {
  const connection = await NativeConnection.connect({ address });
  const worker = await Worker.create(
    role === 'activities'
      ? {
          connection,
          taskQueue: 'legacy-query-activities',
          activities: { slow: () => sleep(4_000) },
        }
      : { connection, taskQueue: 'legacy-query-workflows', workflowsPath: WORKFLOWS },
  );
  process.stderr.write(`${role} worker polling\n`);
  await worker.run();
}

function spawnWorker(role: string, address: string): ChildProcess {
  return spawn(process.execPath, [__filename, '--worker', role, address], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

async function main(): Promise<number> {
  const server = await spawnDevServer({ inMemory: true });
  const children: ChildProcess[] = [];
  try {
    const client = new Client({ connection: await Connection.connect({ address: server.address }) });
    children.push(spawnWorker('activities', server.address));
    const workerA = spawnWorker('workflows', server.address);
    children.push(workerA);
    await sleep(8_000); // both workers bundle and poll
    const workflowId = `legacy-query-${Date.now()}`;
    const handle = await client.workflow.start('legacyQueryWorkflow', {
      taskQueue: 'legacy-query-workflows',
      workflowId,
    });
    await sleep(1_500); // worker A ran the first workflow task: the activity is scheduled, A holds the run
    workerA.kill('SIGKILL');
    const query = handle.query<{ state: string; seen: string[] }>('state');
    children.push(spawnWorker('workflows', server.address)); // worker C, with an empty cache
    const answered = await query;
    await handle.signal('seen');
    const result = await handle.result();
    const history = await handle.fetchHistory();
    let replay = 'ok';
    try {
      await Worker.runReplayHistory({ workflowsPath: WORKFLOWS }, history, workflowId);
    } catch (err) {
      replay = err instanceof Error ? err.message.split('\n')[0]! : String(err);
    }
    const defect = replay !== 'ok';
    process.stdout.write(
      `${JSON.stringify({ defectPresent: defect, queryAnswered: answered, liveResult: result, replay })}\n`,
    );
    return defect ? 1 : 0;
  } finally {
    for (const child of children) child.kill('SIGKILL');
    await server.stop({ signal: 'SIGKILL' });
  }
}

if (process.argv[2] === '--worker') {
  runWorker(process.argv[3]!, process.argv[4]!).catch((err) => {
    process.stderr.write(`${String(err)}\n`);
    process.exit(1);
  });
} else {
  main().then(
    (code) => process.exit(code),
    (err) => {
      process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exit(2);
    },
  );
}
