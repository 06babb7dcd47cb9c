/**
 * `npm run bench:local`: the `local` model (llama.cpp in the worker, the GGUF `npm run setup` installs or
 * LOCAL_MODEL_PATH) measured on this machine, and the cost of running it durably. Writes
 * bench-results/local.json and prints a summary. Figures, all from one run:
 * - load: time to load the model; worker RSS before and after (the bench process hosts the worker);
 * - decode: tokens/s and time to first token of text answers, called directly (the provider in-process, no
 *   Temporal), on a fixed set of prompts;
 * - tool calls: on a fixed prompt set with the demo tools (clock, calculator), how often the model picks the right
 *   tool, fills the arguments right (the calculator's result is the expected number), and then uses
 *   the result in its answer;
 * - durable over direct: the same tool round trips (model → tool → model) run directly in-process and as durable
 *   sessions (Temporal dev server, in-process worker), each prompt both ways back to back, turn wall time, and the
 *   ratio of the means; model-step latency as the worker's activities saw it.
 * No figure here is asserted anywhere: machines are noisy. BENCH_QUICK=1 runs one round of each set.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { demoTools } from '../src/activities/demoTools';
import type { ModelCallContext, ModelProvider } from '../src/activities/model';
import type { LanguageModelV3StreamPart } from '@ai-sdk/provider';
import {
  createLocalProvider,
  defaultLocalModelPath,
  disposeLocalModels,
  LocalLanguageModel,
} from '../src/activities/providers';
import { runTool, ToolRegistry, type ToolRuntime } from '../src/activities/tools';
import type { ModelRequest, ModelStepResult } from '../src/activities/types';
import { SessionClient } from '../src/client';
import { findProjectRoot, spawnDevServer } from '../src/devserver';
import type { SessionEvent } from '../src/domain/events';
import type { TranscriptEntry } from '../src/domain/transcript';
import { createSessionWorker } from '../src/worker';

const root = findProjectRoot(__dirname) ?? process.cwd();
const quick = process.env.BENCH_QUICK === '1';
const SYSTEM = 'You are a helpful assistant. Be brief. Use a tool when it helps.';

/** Text prompts for decode speed (no tools). */
const TEXT_PROMPTS = [
  'Write three sentences about the sea.',
  'Explain in a short paragraph what a compiler does.',
  'List five fruits and say one thing about each.',
];

/** The fixed tool-call prompt set: the tool the model should pick and, for the calculator, the expected value. */
export const TOOL_PROMPTS: { prompt: string; tool: 'clock' | 'calculator'; value?: number }[] = [
  { prompt: 'What time is it now?', tool: 'clock' },
  { prompt: 'What is 17 times 23?', tool: 'calculator', value: 391 },
  { prompt: 'Compute 1234 + 5678.', tool: 'calculator', value: 6912 },
  { prompt: "What's today's date?", tool: 'clock' },
  { prompt: 'How much is 2 to the power of 10?', tool: 'calculator', value: 1024 },
  { prompt: 'Please tell me the current time.', tool: 'clock' },
  { prompt: 'What is 144 divided by 12?', tool: 'calculator', value: 12 },
  { prompt: 'Subtract 58 from 100.', tool: 'calculator', value: 42 },
];

const rssMb = () => Math.round(process.memoryUsage().rss / 1e6);
const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]! : 0;
};
const round = (x: number, digits = 1) => Number(x.toFixed(digits));

function context(): ModelCallContext {
  return {
    signal: new AbortController().signal,
    heartbeat: () => {},
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  };
}

function request(messages: TranscriptEntry[], tools: string[], requestIndex: number): ModelRequest {
  const registry = new ToolRegistry(demoTools);
  return {
    sessionId: 'bench',
    turn: 1,
    step: requestIndex + 1,
    requestIndex,
    model: { provider: 'local' },
    system: SYSTEM,
    tools,
    toolSpecs: tools.flatMap((t) => {
      const spec = registry.spec(t);
      return spec ? [spec] : [];
    }),
    messages,
  };
}

const user = (text: string): TranscriptEntry => ({
  role: 'user',
  id: `u-${text.length}`,
  content: [{ type: 'text', text }],
  source: { kind: 'user' },
});

/** One tool round trip done directly: model step, the tool, model step. */
async function directRoundTrip(provider: ModelProvider, prompt: string) {
  const started = Date.now();
  const messages: TranscriptEntry[] = [user(prompt)];
  const tools = ['clock', 'calculator'];
  const first = await provider.step(request(messages, tools, 0), context());
  const call = first.toolCalls[0];
  let result = '';
  let second: ModelStepResult | undefined;
  if (call) {
    const registry = new ToolRegistry(demoTools);
    const runtime: ToolRuntime = {
      ...context(),
      sessionId: 'bench',
      callId: call.callId,
      turn: 1,
      step: 1,
      inject: async () => {},
      steer: async () => {},
    };
    const out = await runTool(registry.get(call.name), call.name, call.arguments ?? {}, runtime);
    result = out.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
    messages.push(
      {
        role: 'assistant',
        id: 'a-1',
        content: first.text ? [{ type: 'text', text: first.text }] : [],
        toolCalls: first.toolCalls,
      },
      {
        role: 'tool',
        callId: call.callId,
        name: call.name,
        content: out.content,
        ...(out.error ? { error: out.error } : {}),
      },
      // The tool's contexts enter after its result, as in a session (the clock leaves one).
      ...out.additionalContexts.map((c, n): TranscriptEntry => ({
        role: 'user',
        id: `ctx-${n}`,
        content: typeof c.content === 'string' ? [{ type: 'text', text: c.content }] : c.content,
        source: c.source ?? { kind: 'tool', callId: call.callId },
      })),
    );
    second = await provider.step(request(messages, tools, 1), context());
  }
  return { ms: Date.now() - started, call, result, answer: second?.text ?? first.text };
}

/** The number or time in a tool result that a good answer repeats. */
function keyOf(result: string, tool: string): string | undefined {
  if (tool === 'calculator') return result.match(/(-?\d+(?:\.\d+)?)\.?$/)?.[1];
  return result.match(/\d{2}:\d{2}/)?.[0] ?? result.match(/\d{4}/)?.[0];
}

async function main(): Promise<void> {
  const modelPath = process.env.LOCAL_MODEL_PATH ?? defaultLocalModelPath();
  if (!modelPath) throw new Error('no model: run `npm run setup` or set LOCAL_MODEL_PATH');
  const threads = Number(process.env.LOCAL_MODEL_THREADS ?? 1);
  const rssStart = rssMb();
  const { provider, engine } = createLocalProvider({ modelPath, threads });

  // ---- load ----
  let t = Date.now();
  await engine.preload(modelPath);
  const loadMs = Date.now() - t;
  const rssLoaded = rssMb();
  console.log(`model ${path.basename(modelPath)} loaded in ${loadMs} ms; RSS ${rssStart} → ${rssLoaded} MB`);

  // ---- decode (direct, text only): the language model's own stream, timed per part ----
  const decode: { prompt: string; ttftMs: number; tokens: number; ms: number; tokensPerSecond: number }[] =
    [];
  const lm = new LocalLanguageModel({ engine, modelPath, modelId: 'default' });
  for (const prompt of quick ? TEXT_PROMPTS.slice(0, 1) : TEXT_PROMPTS) {
    t = Date.now();
    const { stream } = await lm.doStream({
      prompt: [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: [{ type: 'text', text: prompt }] },
      ],
    });
    let first: number | undefined;
    let tokens = 0;
    for await (const part of stream as unknown as AsyncIterable<LanguageModelV3StreamPart>) {
      if (part.type === 'text-delta') first ??= Date.now();
      if (part.type === 'finish') tokens = part.usage.outputTokens.total ?? 0;
      if (part.type === 'error') throw part.error;
    }
    const end = Date.now();
    const ttft = (first ?? end) - t;
    // Tokens after the first, over the time after the first.
    const rate = tokens > 1 && first !== undefined ? ((tokens - 1) / Math.max(end - first, 1)) * 1000 : 0;
    decode.push({ prompt, ttftMs: ttft, tokens, ms: end - t, tokensPerSecond: round(rate) });
  }

  // ---- the durable side: a dev server and an in-process worker with the same provider ----
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const dataDir = path.join(root, '.cache', `bench-local-${process.pid}`);
  const server = await spawnDevServer({ dataDir });
  const stepTimes: number[] = [];
  const directStepTimes: number[] = [];
  const timedInto = (times: number[]): ModelProvider => ({
    name: 'local',
    async step(input, ctx) {
      const started = Date.now();
      try {
        return await provider.step(input, ctx);
      } finally {
        times.push(Date.now() - started);
      }
    },
  });
  const timed = timedInto(stepTimes);
  const timedDirect = timedInto(directStepTimes);
  const nativeConnection = await NativeConnection.connect({ address: server.address });
  const connection = await Connection.connect({ address: server.address });
  const taskQueue = `bench-local-${process.pid}`;
  const worker = await createSessionWorker({
    connection: nativeConnection,
    taskQueue,
    tools: demoTools,
    providers: { local: timed },
  });
  const running = worker.run();
  const sessions = new SessionClient({ client: new Client({ connection }), taskQueue });

  // ---- tool-call accuracy, and the same round trips direct and durable, one after the other per prompt (the
  // order alternating by round), so a change in the machine's load hits both sides alike ----
  const rounds = quick ? 1 : 3;
  const direct: number[] = [];
  const durable: number[] = [];
  const pairedRatios: number[] = [];
  let sameAnswers = 0;
  let rssPeak = rssMb();
  const accuracy = TOOL_PROMPTS.map((p) => ({
    ...p,
    rightTool: 0,
    rightArgument: 0,
    usedResult: 0,
    runs: 0,
  }));
  const samples: { prompt: string; call?: unknown; result: string; answer: string }[] = [];
  try {
    // A warm-up session: the first workflow task pays for the worker's caches, not for durability.
    await runSession(sessions, `bench-local-warmup-${process.pid}`, 'What is 1 + 1?');
    stepTimes.length = 0;
    for (let r = 0; r < rounds; r++) {
      for (const [i, p] of TOOL_PROMPTS.entries()) {
        const viaSession = () => runSession(sessions, `bench-local-${r}-${i}-${process.pid}`, p.prompt);
        const before = r % 2 === 1 ? await viaSession() : undefined;
        const out = await directRoundTrip(timedDirect, p.prompt);
        const session = before ?? (await viaSession());
        direct.push(out.ms);
        durable.push(session.ms);
        pairedRatios.push(session.ms / Math.max(out.ms, 1));
        // Greedy decoding on the same model-visible prompt: the same answer, unless the clock moved a minute.
        if (session.answer === out.answer) sameAnswers++;
        rssPeak = Math.max(rssPeak, rssMb());
        const a = accuracy[i]!;
        a.runs++;
        if (out.call?.name === p.tool) {
          a.rightTool++;
          if (p.value === undefined) a.rightArgument++;
          // The calculator answers "17 times 23 is 391.": its value is the last number.
          else if (Number(out.result.match(/(-?\d+(?:\.\d+)?)\.?$/)?.[1]) === p.value) a.rightArgument++;
        }
        const key = out.call ? keyOf(out.result, out.call.name) : undefined;
        if (key && out.answer.includes(key)) a.usedResult++;
        if (r === 0)
          samples.push({
            prompt: p.prompt,
            call: out.call,
            result: out.result,
            answer: out.answer.slice(0, 200),
          });
      }
    }
  } finally {
    worker.shutdown();
    await running;
    await connection.close();
    await nativeConnection.close();
    await server.stop();
    await disposeLocalModels();
    rmSync(dataDir, { recursive: true, force: true });
  }

  const sum = (f: (a: (typeof accuracy)[number]) => number) => accuracy.reduce((n, a) => n + f(a), 0);
  const runs = sum((a) => a.runs);
  const result = {
    date: new Date().toISOString(),
    machine: { cpus: os.cpus().length, cpu: os.cpus()[0]?.model, node: process.version },
    model: { file: path.basename(modelPath), threads },
    loadMs,
    rssMb: { beforeLoad: rssStart, afterLoad: rssLoaded, peakDuringSessions: rssPeak },
    decode: {
      prompts: decode,
      tokensPerSecond: round(mean(decode.map((d) => d.tokensPerSecond))),
      timeToFirstTokenMs: Math.round(mean(decode.map((d) => d.ttftMs))),
      note: 'direct calls of the language model (no Temporal); time to first token includes evaluating the prompt',
    },
    toolCalls: {
      promptSet: 'bench/local.ts TOOL_PROMPTS (8 prompts; tools clock and calculator)',
      runs,
      rightTool: `${sum((a) => a.rightTool)}/${runs}`,
      rightArgument: `${sum((a) => a.rightArgument)}/${runs}`,
      usedResultInAnswer: `${sum((a) => a.usedResult)}/${runs}`,
      perPrompt: accuracy,
      samples,
    },
    roundTrip: {
      directMs: { mean: Math.round(mean(direct)), p50: pct(direct, 50), p95: pct(direct, 95) },
      durableMs: { mean: Math.round(mean(durable)), p50: pct(durable, 50), p95: pct(durable, 95) },
      durableOverDirect: round(pct(pairedRatios, 50), 2),
      durableOverDirectOfMeans: round(mean(durable) / Math.max(mean(direct), 1), 2),
      overheadMsPerRoundTrip: Math.round(mean(durable) - mean(direct)),
      sameAnswers: `${sameAnswers}/${durable.length}`,
      note: 'durableOverDirect is the median of the per-prompt ratios (each prompt run both ways back to back); a round trip is two model steps and one tool call',
      modelStepMs: { mean: Math.round(mean(stepTimes)), p50: pct(stepTimes, 50), p95: pct(stepTimes, 95) },
      directModelStepMs: {
        mean: Math.round(mean(directStepTimes)),
        p50: pct(directStepTimes, 50),
        p95: pct(directStepTimes, 95),
      },
    },
  };
  const dir = path.join(root, 'bench-results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    path.join(dir, quick ? 'local-partial.json' : 'local.json'),
    `${JSON.stringify(result, null, 2)}\n`,
  );
  console.log(
    [
      `decode: ${result.decode.tokensPerSecond} tokens/s, time to first token ${result.decode.timeToFirstTokenMs} ms`,
      `tool calls (${runs} runs): right tool ${result.toolCalls.rightTool}, right argument ${result.toolCalls.rightArgument}, result used in the answer ${result.toolCalls.usedResultInAnswer}`,
      `round trip (p50): direct ${result.roundTrip.directMs.p50} ms, durable ${result.roundTrip.durableMs.p50} ms; durable/direct ${result.roundTrip.durableOverDirect} (median of pairs), ${result.roundTrip.durableOverDirectOfMeans} (of means); same answers ${result.roundTrip.sameAnswers}`,
      `model step in the worker: p50 ${result.roundTrip.modelStepMs.p50} ms, p95 ${result.roundTrip.modelStepMs.p95} ms (direct: p50 ${result.roundTrip.directModelStepMs.p50} ms); RSS peak ${rssPeak} MB`,
      `raw figures: bench-results/${quick ? 'local-partial.json' : 'local.json'}`,
    ].join('\n'),
  );
}

/** Starts a session with the demo tools, sends one prompt, waits for its turn to end; returns the wall time. */
async function runSession(
  sessions: SessionClient,
  id: string,
  prompt: string,
): Promise<{ ms: number; answer: string }> {
  await sessions.start(id, { model: { provider: 'local' }, system: SYSTEM, tools: ['clock', 'calculator'] });
  const started = Date.now();
  await sessions.followup(id, prompt);
  for (;;) {
    const state = await sessions.state(id);
    if (state.status === 'idle' && state.turn >= 1) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const ms = Date.now() - started;
  const events: SessionEvent[] = await sessions.allEvents(id);
  if (!events.some((e) => e.type === 'turn/end')) throw new Error(`session ${id} has no turn/end`);
  await sessions.dispose(id);
  const answers = events.flatMap((e) =>
    e.type === 'assistant/message' ? [e.data.message.content.map((b) => b.text).join('')] : [],
  );
  return { ms, answer: answers.at(-1) ?? '' };
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
