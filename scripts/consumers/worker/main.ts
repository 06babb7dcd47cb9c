// A worker with its own tool and provider (CommonJS, TypeScript nodenext): runs until SIGTERM.
import { NativeConnection } from '@temporalio/worker';
import { createSessionWorker } from 'agent-sessions';
import { orderStatus, rulesProvider } from './agent';

async function main(): Promise<void> {
  const connection = await NativeConnection.connect({
    address: process.env.TEMPORAL_ADDRESS ?? 'localhost:7233',
  });
  const worker = await createSessionWorker({
    connection,
    taskQueue: process.env.TASK_QUEUE ?? 'agent-sessions',
    tools: [orderStatus],
    providers: { 'openai-compatible': rulesProvider },
  });
  process.once('SIGTERM', () => worker.shutdown());
  console.log('worker (CommonJS, nodenext): polling');
  await worker.run();
  await connection.close();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
