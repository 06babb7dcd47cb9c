/**
 * A bench worker in its own process, for the `manySessions` group: its RSS is then the worker's alone (not the
 * driving client's, not the bundler's, not what earlier groups freed). Settings from the environment:
 * BENCH_ADDRESS, BENCH_TASK_QUEUE, BENCH_BUNDLE (a prebuilt workflow bundle's path), BENCH_MAX_CACHED.
 * Protocol on stdin/stdout, one JSON object a line: `{"cmd":"rss"}` → `{rss, heapUsed, external, cached}`;
 * `{"cmd":"starts","id":…}` → `{starts:[ms…]}` (when each model request of that session started);
 * `{"cmd":"exit"}` → shuts the worker down. The first line out is `{"ready":true}`.
 */
import { createInterface } from 'node:readline';
import { NativeConnection, Runtime, DefaultLogger, Worker } from '@temporalio/worker';
import { createActivities } from '../src/activities';
import { EntryStore } from '../src/activities/entryStore';
import { ToolRegistry } from '../src/activities/tools';
import { echoTool } from '../src/activities/testingTools';
import { transcriptRefSinks } from '../src/worker';
import { benchProvider, blobTool, createBenchActivities, requestStarts } from './activities';

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger(process.env.BENCH_WORKER_LOG === 'WARN' ? 'WARN' : 'ERROR') });
  const env = (name: string) => {
    const v = process.env[name];
    if (!v) throw new Error(`scaleWorker: ${name} is not set`);
    return v;
  };
  const entries = new EntryStore();
  const connection = await NativeConnection.connect({ address: env('BENCH_ADDRESS') });
  const worker = await Worker.create({
    connection,
    taskQueue: env('BENCH_TASK_QUEUE'),
    workflowBundle: { codePath: env('BENCH_BUNDLE') },
    activities: {
      ...createActivities({
        tools: new ToolRegistry([blobTool, echoTool]),
        providers: { 'openai-compatible': benchProvider },
        entries,
      }),
      ...createBenchActivities(),
    },
    maxCachedWorkflows: Number(env('BENCH_MAX_CACHED')),
    sinks: transcriptRefSinks(entries),
  });
  const running = worker.run();
  const out = (o: unknown) => process.stdout.write(`${JSON.stringify(o)}\n`);
  createInterface({ input: process.stdin }).on('line', (line) => {
    const msg = JSON.parse(line) as { cmd: string; id?: string };
    if (msg.cmd === 'rss') {
      global.gc?.();
      const m = process.memoryUsage();
      out({
        rss: m.rss,
        heapUsed: m.heapUsed,
        external: m.external,
        cached: worker.getStatus().numCachedWorkflows,
      });
    } else if (msg.cmd === 'starts') out({ starts: requestStarts.get(msg.id ?? '') ?? [] });
    else if (msg.cmd === 'exit') worker.shutdown();
  });
  out({ ready: true });
  await running;
  await connection.close();
  process.exit(0);
}

main().catch((err) => {
  process.stdout.write(`${JSON.stringify({ error: String((err as Error).stack ?? err) })}\n`);
  process.exit(1);
});
