/**
 * Traces and metrics of a real worker process (issue: operability, parts 4 and 5): `agent-sessions worker` with the
 * standard OTEL_* variables pointing at an OTLP/HTTP receiver this test runs, and METRICS_ADDRESS. A client in this
 * process traces its signal; the turn the signal opens must be one trace: client signal → workflow signal handler →
 * turn span → each activity's start and run → the GenAI span of each model and tool call, with the semantic
 * conventions' attributes. Then the worker's Prometheus endpoint must show the SDK's metrics and ours.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionClient } from '../../src/client';
import { spawnDevServer, type DevServerProcess } from '../../src/devserver';
import { getFreePort } from '../../src/devserver/devServer';
import { clientTracingInterceptors, startTracing, type Tracing } from '../../src/telemetry';
import { settle, waitUntil } from '../support/sessionEnv';

const ROOT = path.resolve(__dirname, '../..');
const CLI = path.join(ROOT, 'bin/agent-sessions.js');

interface Span {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: Record<string, unknown>;
}

let server: DevServerProcess;
let receiver: http.Server;
const spans: Span[] = [];
let worker: ChildProcess;
let workerOutput = '';
let metricsAddress: string;
let tracing: Tracing;
let connection: Connection;
let sessions: SessionClient;
const taskQueue = `telemetry-${randomUUID()}`;

/** An OTLP/HTTP JSON receiver: keeps every span it is sent. */
function startReceiver(): Promise<string> {
  receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      if (req.url === '/v1/traces') spans.push(...spansOf(JSON.parse(body)));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  return new Promise((resolve) =>
    receiver.listen(0, '127.0.0.1', () =>
      resolve(`http://127.0.0.1:${(receiver.address() as AddressInfo).port}`),
    ),
  );
}

/** The spans of an OTLP JSON export request, with attributes as plain values. */
function spansOf(request: {
  resourceSpans?: { scopeSpans?: { spans?: Record<string, unknown>[] }[] }[];
}): Span[] {
  const value = (v: Record<string, unknown>): unknown =>
    'stringValue' in v
      ? v.stringValue
      : 'intValue' in v
        ? Number(v.intValue)
        : 'arrayValue' in v
          ? ((v.arrayValue as { values?: Record<string, unknown>[] }).values ?? []).map(value)
          : (v.boolValue ?? v.doubleValue);
  return (request.resourceSpans ?? []).flatMap((rs) =>
    (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((s) => ({
        traceId: s.traceId as string,
        spanId: s.spanId as string,
        ...(s.parentSpanId ? { parentSpanId: s.parentSpanId as string } : {}),
        name: s.name as string,
        attributes: Object.fromEntries(
          ((s.attributes as { key: string; value: Record<string, unknown> }[]) ?? []).map((a) => [
            a.key,
            value(a.value),
          ]),
        ),
      })),
    ),
  );
}

beforeAll(async () => {
  const endpoint = await startReceiver();
  server = await spawnDevServer({ inMemory: true });
  metricsAddress = `127.0.0.1:${await getFreePort()}`;
  worker = spawn(process.execPath, [CLI, 'worker'], {
    cwd: ROOT,
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: server.address,
      TASK_QUEUE: taskQueue,
      AGENT_SESSIONS_TOOLSETS: 'testing',
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
      OTEL_SERVICE_NAME: 'agent-sessions-test-worker',
      // Export every 100 ms, so the test does not wait for the default 5 s batches.
      OTEL_BSP_SCHEDULE_DELAY: '100',
      METRICS_ADDRESS: metricsAddress,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const keep = (chunk: Buffer) => (workerOutput = (workerOutput + chunk.toString()).slice(-20_000));
  worker.stdout!.on('data', keep);
  worker.stderr!.on('data', keep);
  tracing = startTracing('agent-sessions-test-client', { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint })!;
  connection = await Connection.connect({ address: server.address });
  sessions = new SessionClient({
    client: new Client({ connection, interceptors: clientTracingInterceptors(tracing) }),
    taskQueue,
  });
});

afterAll(async () => {
  await tracing?.shutdown();
  await connection?.close();
  worker?.kill('SIGTERM');
  await server?.stop();
  receiver?.close();
});

describe('tracing', () => {
  it('one trace per delivery: client signal → handler → turn → activities → GenAI spans', async () => {
    const id = `traced-${randomUUID()}`;
    await sessions.start(id, {
      tools: ['echo'],
      model: {
        provider: 'scripted',
        steps: [
          {
            toolCalls: [{ name: 'echo', args: { text: 'hi' } }],
            usage: { inputTokens: 40, outputTokens: 5 },
          },
          { text: 'done', usage: { inputTokens: 60, outputTokens: 2 } },
        ],
      },
    });
    await sessions.followup(id, 'go');
    // The worker process may still be starting: wait up to a minute for the turn, then read the log.
    await waitUntil(
      () => sessions.state(id),
      (s) => s.turn === 1 && s.status === 'idle',
      `the turn to end (worker output: ${workerOutput.slice(-2000)})`,
      2400,
    );
    const events = await settle(sessions, id);
    expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: { kind: 'completed' } } });
    await tracing.spanProcessor.forceFlush();

    const signal = await waitUntil(
      async () => spans.find((s) => s.name === 'SignalWorkflow:followup'),
      (s) => s !== undefined,
      'the client span of the signal',
    );
    const inTrace = () => spans.filter((s) => s.traceId === signal!.traceId);
    // The worker exports its spans in batches (workflow spans when their activation ends): wait for all of them.
    const expected: Record<string, number> = {
      'HandleSignal:followup': 1,
      'turn 1': 1,
      'chat scripted': 2,
      'execute_tool echo': 1,
      'StartActivity:describeTools': 1,
      'StartActivity:modelStep': 2,
      'RunActivity:modelStep': 2,
      'StartActivity:executeTool': 1,
      'RunActivity:executeTool': 1,
    };
    await waitUntil(
      async () => inTrace().map((s) => s.name),
      (names) => Object.entries(expected).every(([n, count]) => names.filter((x) => x === n).length >= count),
      'every span of the turn',
    );
    const trace = inTrace();
    const byId = new Map(trace.map((s) => [s.spanId, s]));
    const parentName = (s: Span) => (s.parentSpanId ? byId.get(s.parentSpanId)?.name : undefined);
    const children = (name: string) =>
      trace
        .filter((s) => parentName(s) === name)
        .map((s) => s.name)
        .sort();

    expect(children('SignalWorkflow:followup')).toEqual(['HandleSignal:followup']);
    expect(children('HandleSignal:followup')).toEqual(['turn 1']);
    const turn = trace.find((s) => s.name === 'turn 1')!;
    expect(turn.attributes).toMatchObject({
      'agent_session.id': id,
      'agent_session.turn': 1,
      'agent_session.turn.end_reason': 'completed',
    });
    // The session's first turn also checks its tool names on the worker.
    expect(children('turn 1')).toEqual([
      'StartActivity:describeTools',
      'StartActivity:executeTool',
      'StartActivity:modelStep',
      'StartActivity:modelStep',
    ]);
    for (const s of trace.filter((x) => x.name.startsWith('StartActivity:')))
      expect(trace.filter((x) => x.parentSpanId === s.spanId).map((x) => x.name)).toEqual([
        s.name.replace('StartActivity:', 'RunActivity:'),
      ]);
    expect(children('RunActivity:modelStep')).toEqual(['chat scripted', 'chat scripted']);
    expect(children('RunActivity:executeTool')).toEqual(['execute_tool echo']);

    const models = trace.filter((s) => s.name === 'chat scripted').map((s) => s.attributes);
    expect(models).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          'gen_ai.operation.name': 'chat',
          'gen_ai.provider.name': 'scripted',
          'gen_ai.usage.input_tokens': 40,
          'gen_ai.usage.output_tokens': 5,
          'gen_ai.response.finish_reasons': ['tool-calls'],
          'agent_session.id': id,
          'agent_session.turn': 1,
          'agent_session.step': 1,
        }),
        expect.objectContaining({
          'gen_ai.usage.input_tokens': 60,
          'gen_ai.response.finish_reasons': ['stop'],
          'agent_session.step': 2,
        }),
      ]),
    );
    expect(trace.find((s) => s.name === 'execute_tool echo')!.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'echo',
      'gen_ai.tool.call.id': 'call_0_0',
      'agent_session.step': 1,
    });
  });
});

describe('metrics', () => {
  it("the worker's Prometheus endpoint has the SDK's metrics and the session's", async () => {
    const scrape = () => fetch(`http://${metricsAddress}/metrics`).then((r) => r.text());
    const text = await waitUntil(scrape, (t) => t.includes('agent_sessions_model_tokens'), 'our metrics');
    const line = (pattern: RegExp) => text.split('\n').find((l) => pattern.test(l));
    // The SDK's own.
    expect(line(/^temporal_workflow_task_execution_latency/)).toBeDefined();
    // Ours: turns by end reason, steps, model tokens and latency, tool latency by tool, inbox depth.
    expect(line(/^agent_sessions_turns\w*\{.*reason="completed".*\} 1$/)).toBeDefined();
    expect(line(/^agent_sessions_steps\w*\{.*\} 2$/)).toBeDefined();
    expect(line(/^agent_sessions_model_tokens\w*\{.*direction="input".*\} 100$/)).toBeDefined();
    expect(line(/^agent_sessions_model_tokens\w*\{.*direction="output".*\} 7$/)).toBeDefined();
    expect(line(/^agent_sessions_model_latency\w*_count\{.*\} 2$/)).toBeDefined();
    expect(line(/^agent_sessions_tool_latency\w*_count\{.*tool="echo".*\} 1$/)).toBeDefined();
    expect(line(/^agent_sessions_inbox_depth\{.*list="next_turn".*\} 0$/)).toBeDefined();
  });
});
