/**
 * The `local` provider without the model: the tool choice policy, the chat it builds from an AI SDK prompt, the
 * tool-call grammar, parsing a call, the language model's stream over a fake engine (and `toolChoice` passed through
 * from the session's ModelSpec), the generation queue, which files a session may name, its configuration, and the
 * demo toolset. The real model runs in test/e2e.
 */
import type {
  LanguageModelV3CallOptions,
  LanguageModelV3FunctionTool,
  LanguageModelV3Message,
  LanguageModelV3StreamPart,
} from '@ai-sdk/provider';
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { calculatorTool, clockTool, evaluateArithmetic } from '../../src/activities/demoTools';
import type { ModelCallContext } from '../../src/activities/model';
import {
  AiSdkProvider,
  LocalEngine,
  LocalLanguageModel,
  localModelPath,
  type LocalEngine as Engine,
} from '../../src/activities/providers';
import type { GenerateRequest, GenerateResult } from '../../src/activities/providers/local/engine';
import { SerialQueue } from '../../src/activities/providers/local/engine';
import { MAX_STRING_CHARS, toolCallGrammar } from '../../src/activities/providers/local/grammar';
import { decideMode, parseToolCall, toChatHistory } from '../../src/activities/providers/local/prompt';
import { runTool, ToolRegistry } from '../../src/activities/tools';
import { demoModel, demoConfig, DEMO_SCRIPT } from '../../src/cli/demo';
import { ModelSpecSchema } from '../../src/domain/wire';
import { loadConfig } from '../../src/worker/config';

const fn = (name: string, inputSchema: Record<string, unknown> = { type: 'object' }) =>
  ({ type: 'function', name, description: `${name} tool.`, inputSchema }) as LanguageModelV3FunctionTool;
const tools = [
  fn('clock'),
  fn('calculator', {
    type: 'object',
    properties: {
      expression: { type: 'string', description: 'e.g. "1 + 2"' },
      precision: { type: 'integer' },
    },
    required: ['expression'],
  }),
];
const user = (text: string): LanguageModelV3Message => ({ role: 'user', content: [{ type: 'text', text }] });
const callOf = (toolName: string, input: unknown, toolCallId = 'c1'): LanguageModelV3Message => ({
  role: 'assistant',
  content: [{ type: 'tool-call', toolCallId, toolName, input }],
});
const resultOf = (toolName: string, value: string, toolCallId = 'c1'): LanguageModelV3Message => ({
  role: 'tool',
  content: [{ type: 'tool-result', toolCallId, toolName, output: { type: 'text', value } }],
});
const answer = (text: string): LanguageModelV3Message => ({
  role: 'assistant',
  content: [{ type: 'text', text }],
});

describe('the tool choice policy', () => {
  const question = [user('What is 2 + 2?')];
  const afterResult = [
    ...question,
    callOf('calculator', { expression: '2 + 2' }),
    resultOf('calculator', '4'),
  ];

  it('auto: a call on a new question, text once results follow the last answer (whatever came after them)', () => {
    expect(decideMode(question, tools, undefined)).toEqual({ kind: 'tool', tools });
    expect(decideMode(question, tools, { type: 'auto' })).toEqual({ kind: 'tool', tools });
    expect(decideMode(afterResult, tools, undefined)).toEqual({ kind: 'text' });
    // A steer or a tool's context after the results still gets the answer, not another call.
    expect(decideMode([...afterResult, user('answer briefly')], tools, undefined)).toEqual({ kind: 'text' });
    expect(decideMode([...afterResult, answer('4'), user('and 3 + 3?')], tools, undefined)).toEqual({
      kind: 'tool',
      tools,
    });
  });

  it('none, required and a named tool; no tools at all is always text', () => {
    expect(decideMode(question, tools, { type: 'none' })).toEqual({ kind: 'text' });
    expect(decideMode(afterResult, tools, { type: 'required' })).toEqual({ kind: 'tool', tools });
    expect(decideMode(question, tools, { type: 'tool', toolName: 'clock' })).toEqual({
      kind: 'tool',
      tools: [tools[0]],
    });
    expect(decideMode(question, [], { type: 'required' })).toEqual({ kind: 'text' });
    expect(decideMode(question, undefined, undefined)).toEqual({ kind: 'text' });
  });
});

describe('the chat the model continues', () => {
  it('tool mode: the system text with the tool list and call format; only the exchange since the last answer', () => {
    const prompt: LanguageModelV3Message[] = [
      { role: 'system', content: 'Be brief.' },
      user('What is 12 * 12?'),
      callOf('calculator', { expression: '12 * 12' }),
      resultOf('calculator', '144'),
      answer('It is 144.'),
      user('What time is it?'),
    ];
    const history = toChatHistory(prompt, { kind: 'tool', tools });
    expect(history).toHaveLength(3);
    expect(history[0]!.type).toBe('system');
    const system = (history[0] as { text: string }).text;
    expect(system.startsWith('Be brief.\n\nYou can call these tools:\n')).toBe(true);
    expect(system).toContain('- clock: clock tool. Arguments: {}');
    expect(system).toContain(
      '- calculator: calculator tool. Arguments: {"expression": string (e.g. "1 + 2")}',
    );
    expect(system).toContain('{"tool": "<name>", "arguments": {...}}');
    expect(history.slice(1)).toEqual([
      { type: 'user', text: 'What time is it?' },
      { type: 'model', response: [] },
    ]);
  });

  it('text mode after results: the call as a sentence, the results named, the question asked again', () => {
    const prompt: LanguageModelV3Message[] = [
      { role: 'system', content: 'Be brief.' },
      user('What is 12 * 12?'),
      callOf('calculator', { expression: '12 * 12' }),
      resultOf('calculator', '12 * 12 = 144'),
      user('Answer in French.'),
    ];
    expect(toChatHistory(prompt, { kind: 'text' })).toEqual([
      { type: 'system', text: 'Be brief.' },
      { type: 'user', text: 'What is 12 * 12?' },
      { type: 'model', response: ['Let me use the calculator tool.'] },
      {
        type: 'user',
        text: 'The calculator tool says: 12 * 12 = 144\n\nAnswer in French.\n\nNow answer my question: What is 12 * 12?',
      },
      { type: 'model', response: [] },
    ]);
  });

  it('text mode without tools: the conversation as it is, consecutive user turns merged', () => {
    expect(toChatHistory([user('a'), user('b'), answer('c'), user('d')], { kind: 'text' })).toEqual([
      { type: 'user', text: 'a\n\nb' },
      { type: 'model', response: ['c'] },
      { type: 'user', text: 'd' },
      { type: 'model', response: [] },
    ]);
  });
});

describe('the tool-call grammar', () => {
  it('one call of one of the tools, compact JSON, required arguments only, bounded strings', () => {
    const grammar = toolCallGrammar(tools.map((t) => ({ name: t.name, inputSchema: t.inputSchema })));
    expect(grammar.split('\n').slice(0, 5)).toEqual([
      'root ::= "{\\"tool\\":" (r1 | r3) "}"',
      'r0 ::= "{}"',
      'r1 ::= "\\"clock\\",\\"arguments\\":" r0',
      'r2 ::= "{" "\\"expression\\":" string "}"',
      'r3 ::= "\\"calculator\\",\\"arguments\\":" r2',
    ]);
    expect(grammar).not.toContain('precision');
    expect(grammar).toContain(`string ::= "\\"" char{0,${MAX_STRING_CHARS}} "\\""`);
  });

  it('enums, consts, arrays, unions, nested objects, bounds', () => {
    const grammar = toolCallGrammar([
      {
        name: 't',
        inputSchema: {
          type: 'object',
          properties: {
            mode: { enum: ['a', 'b'] },
            fixed: { const: 3 },
            list: { type: 'array', items: { type: 'integer' }, minItems: 1, maxItems: 3 },
            either: { anyOf: [{ type: 'string', minLength: 2, maxLength: 5 }, { type: 'null' }] },
            nested: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
            anything: {},
          },
          required: ['mode', 'fixed', 'list', 'either', 'nested', 'anything'],
        },
      },
    ]);
    expect(grammar).toContain('"\\"a\\"" | "\\"b\\""');
    expect(grammar).toContain('"\\"fixed\\":" "3"');
    expect(grammar).toContain('"[" integer ("," integer){0,2} "]"');
    expect(grammar).toContain('"\\"" char{2,5} "\\""');
    expect(grammar).toContain('"{" "\\"ok\\":" boolean "}"');
    expect(grammar).toContain('"\\"anything\\":" scalar');
  });

  it('needs a tool', () => {
    expect(() => toolCallGrammar([])).toThrow(/at least one tool/);
  });
});

describe('parseToolCall', () => {
  it('a call of an offered tool; anything else is not a call', () => {
    expect(parseToolCall('{"tool":"calculator","arguments":{"expression":"1+1"}}', tools)).toEqual({
      toolName: 'calculator',
      input: { expression: '1+1' },
    });
    expect(parseToolCall('{"tool":"clock","arguments":[]}', tools)).toEqual({ toolName: 'clock', input: {} });
    expect(parseToolCall('{"tool":"rm","arguments":{}}', tools)).toBeUndefined();
    expect(parseToolCall('{"tool":"calculator","arguments":{"expre', tools)).toBeUndefined();
    expect(parseToolCall('null', tools)).toBeUndefined();
  });
});

/** An engine that answers from a script and records what it was asked. */
function fakeEngine(
  answerWith: (request: GenerateRequest) => Partial<GenerateResult> & { chunks?: string[] },
) {
  const requests: GenerateRequest[] = [];
  const engine = {
    async generate(request: GenerateRequest): Promise<GenerateResult> {
      requests.push(request);
      const { chunks, ...rest } = answerWith(request);
      for (const chunk of chunks ?? []) request.onText?.(chunk);
      return {
        text: (chunks ?? []).join(''),
        stopReason: 'stop',
        inputTokens: 10,
        cachedInputTokens: 4,
        outputTokens: 3,
        ...rest,
      };
    },
  } as unknown as Engine;
  return { engine, requests };
}

async function partsOf(model: LocalLanguageModel, options: LanguageModelV3CallOptions) {
  const { stream } = await model.doStream(options);
  const parts: LanguageModelV3StreamPart[] = [];
  for await (const part of stream as unknown as AsyncIterable<LanguageModelV3StreamPart>) parts.push(part);
  return parts;
}

describe('LocalLanguageModel over an engine', () => {
  it('text: streams the deltas, then finish with usage; temperature 0 unless set', async () => {
    const { engine, requests } = fakeEngine(() => ({ chunks: ['Hel', 'lo'] }));
    const model = new LocalLanguageModel({ engine, modelPath: '/m.gguf', modelId: 'default' });
    const parts = await partsOf(model, { prompt: [user('hi')] });
    expect(parts.map((p) => p.type)).toEqual([
      'stream-start',
      'text-start',
      'text-delta',
      'text-delta',
      'text-end',
      'finish',
    ]);
    const finish = parts.at(-1) as Extract<LanguageModelV3StreamPart, { type: 'finish' }>;
    expect(finish.finishReason.unified).toBe('stop');
    expect(finish.usage.inputTokens).toMatchObject({ total: 10, noCache: 6, cacheRead: 4 });
    expect(finish.usage.outputTokens.total).toBe(3);
    expect(requests[0]).toMatchObject({ modelPath: '/m.gguf', temperature: 0, maxTokens: 512 });
    expect(requests[0]!.grammar).toBeUndefined();
  });

  it('tool mode: one tool-call part from the grammar-bound JSON; a cut call shows as text and runs nothing', async () => {
    const { engine, requests } = fakeEngine(() => ({
      text: '{"tool":"calculator","arguments":{"expression":"2*3"}}',
    }));
    const model = new LocalLanguageModel({ engine, modelPath: '/m.gguf', modelId: 'default' });
    const parts = await partsOf(model, { prompt: [user('2*3?')], tools });
    const call = parts.find((p) => p.type === 'tool-call');
    expect(call).toMatchObject({ toolName: 'calculator', input: '{"expression":"2*3"}' });
    expect(parts.at(-1)).toMatchObject({ type: 'finish', finishReason: { unified: 'tool-calls' } });
    expect(requests[0]!.grammar).toContain('root ::=');
    expect(requests[0]!.maxTokens).toBeLessThanOrEqual(256);

    const cut = fakeEngine(() => ({ text: '{"tool":"calc', stopReason: 'length' }));
    const cutParts = await partsOf(
      new LocalLanguageModel({ engine: cut.engine, modelPath: '/m', modelId: 'd' }),
      {
        prompt: [user('2*3?')],
        tools,
      },
    );
    expect(cutParts.some((p) => p.type === 'tool-call')).toBe(false);
    expect(cutParts.find((p) => p.type === 'text-delta')).toMatchObject({ delta: '{"tool":"calc' });
    expect(cutParts.at(-1)).toMatchObject({ type: 'finish', finishReason: { unified: 'length' } });
  });

  it('an engine failure is an error part', async () => {
    const failing = {
      generate: () => Promise.reject(new Error('boom')),
    } as unknown as Engine;
    const parts = await partsOf(new LocalLanguageModel({ engine: failing, modelPath: '/m', modelId: 'd' }), {
      prompt: [user('x')],
    });
    expect(parts.at(-1)).toMatchObject({ type: 'error' });
  });

  it("the session's toolChoice reaches the model through the provider (none → text on a user turn)", async () => {
    const { engine, requests } = fakeEngine(() => ({ chunks: ['plain answer'] }));
    const provider = new AiSdkProvider({
      name: 'local',
      model: () => new LocalLanguageModel({ engine, modelPath: '/m.gguf', modelId: 'default' }),
    });
    const registry = new ToolRegistry([calculatorTool]);
    const ctx: ModelCallContext = {
      signal: new AbortController().signal,
      heartbeat: () => {},
      sleep: async () => {},
    };
    const request = (toolChoice?: 'none' | 'required') => ({
      sessionId: 's',
      turn: 1,
      step: 1,
      requestIndex: 0,
      model: { provider: 'local' as const, ...(toolChoice ? { toolChoice } : {}) },
      tools: ['calculator'],
      toolSpecs: [registry.spec('calculator')!],
      messages: [
        {
          role: 'user' as const,
          id: 'u',
          content: [{ type: 'text' as const, text: '2*3?' }],
          source: { kind: 'user' as const },
        },
      ],
    });
    const none = await provider.step(request('none'), ctx);
    expect(none).toMatchObject({ text: 'plain answer', toolCalls: [], finish: 'stop' });
    expect(requests[0]!.grammar).toBeUndefined();
    await provider.step(request(), ctx);
    expect(requests[1]!.grammar).toContain('calculator');
  });
});

describe('the generation queue', () => {
  it('runs one at a time in arrival order; a request leaving while it waits does not let the next one overtake', async () => {
    const queue = new SerialQueue(10);
    const log: string[] = [];
    let releaseFirst!: () => void;
    const first = queue.run(undefined, async () => {
      log.push('first start');
      await new Promise<void>((resolve) => (releaseFirst = resolve));
      log.push('first end');
    });
    const leaving = new AbortController();
    const second = queue.run(leaving.signal, async () => void log.push('second'));
    const third = queue.run(undefined, async () => void log.push('third'));
    leaving.abort(new Error('cancelled'));
    await expect(second).rejects.toThrow('cancelled');
    await Promise.resolve();
    expect(log).toEqual(['first start']);
    releaseFirst();
    await Promise.all([first, third]);
    expect(log).toEqual(['first start', 'first end', 'third']);
  });

  it('a full queue fails at once as retryable ModelUnavailable', async () => {
    const queue = new SerialQueue(1);
    let release!: () => void;
    const running = queue.run(undefined, () => new Promise<void>((resolve) => (release = resolve)));
    const refused = await queue.run(undefined, async () => 'x').catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(ApplicationFailure);
    expect(refused).toMatchObject({ type: 'ModelUnavailable', nonRetryable: false });
    release();
    await running;
    expect(queue.pending).toBe(0);
  });
});

describe('which model file a session may run', () => {
  it('names from the worker configuration only; a path in session input is just an unknown name', () => {
    const settings = { modelPath: '/models/small.gguf', models: { qwen: '/models/qwen.gguf' } };
    expect(localModelPath(settings, undefined)).toBe('/models/small.gguf');
    expect(localModelPath(settings, 'default')).toBe('/models/small.gguf');
    expect(localModelPath(settings, 'qwen')).toBe('/models/qwen.gguf');
    for (const name of ['/etc/passwd', 'other']) {
      let failure: unknown;
      try {
        localModelPath(settings, name);
      } catch (err) {
        failure = err;
      }
      expect(failure).toMatchObject({ type: 'ModelRequestInvalid', nonRetryable: true });
      expect((failure as Error).message).toMatch(
        /not configured on this worker \(configured: default, qwen\).*LOCAL_MODELS/,
      );
    }
  });

  it('a missing file fails the call, not retryable, saying what to run', async () => {
    const failure = await new LocalEngine()
      .generate({ modelPath: '/nonexistent/model.gguf', history: [], maxTokens: 1, temperature: 0 })
      .catch((err: unknown) => err);
    expect(failure).toMatchObject({ type: 'ModelRequestInvalid', nonRetryable: true });
    expect((failure as Error).message).toMatch(/npm run setup.*LOCAL_MODEL_PATH/);
  });

  it('the wire accepts {provider:"local", model?} and toolChoice on every provider', () => {
    expect(ModelSpecSchema.parse({ provider: 'local' })).toEqual({ provider: 'local' });
    expect(ModelSpecSchema.parse({ provider: 'local', model: 'qwen', toolChoice: 'none' })).toEqual({
      provider: 'local',
      model: 'qwen',
      toolChoice: 'none',
    });
    expect(
      ModelSpecSchema.parse({
        provider: 'openai',
        model: 'm',
        toolChoice: { type: 'tool', toolName: 'echo' },
      }),
    ).toMatchObject({ toolChoice: { type: 'tool', toolName: 'echo' } });
    expect(ModelSpecSchema.safeParse({ provider: 'local', path: '/x.gguf' }).success).toBe(false);
    expect(ModelSpecSchema.safeParse({ provider: 'local', toolChoice: 'sometimes' }).success).toBe(false);
  });
});

describe('configuration', () => {
  it('LOCAL_MODEL_PATH, LOCAL_MODELS and the tuning variables', () => {
    const config = loadConfig({
      LOCAL_MODEL_PATH: '/m/a.gguf',
      LOCAL_MODELS: 'qwen=/m/qwen.gguf, tiny = /m/tiny.gguf',
      LOCAL_MODEL_THREADS: '2',
      LOCAL_MODEL_CONTEXT_SIZE: '2048',
      LOCAL_MODEL_MAX_TOKENS: '128',
    });
    expect(config.providers.local).toEqual({
      modelPath: '/m/a.gguf',
      models: { qwen: '/m/qwen.gguf', tiny: '/m/tiny.gguf' },
      threads: 2,
      contextSize: 2048,
      maxTokens: 128,
    });
    expect(() => loadConfig({ LOCAL_MODELS: 'bad name=/x' })).toThrow(/^invalid configuration: LOCAL_MODELS/);
    expect(() => loadConfig({ LOCAL_MODELS: 'qwen' })).toThrow(/^invalid configuration: LOCAL_MODELS/);
    expect(() => loadConfig({ LOCAL_MODEL_THREADS: '0' })).toThrow(
      /^invalid configuration: LOCAL_MODEL_THREADS/,
    );
  });
});

describe('the demo', () => {
  it('no key: the local model when installed, else the script; AGENT_SESSIONS_DEMO_MODEL picks', () => {
    const providers = ['scripted', 'local'];
    expect(demoModel({}, providers, true)).toEqual({ provider: 'local' });
    expect(demoModel({}, providers, false)).toEqual({ provider: 'scripted', steps: DEMO_SCRIPT });
    expect(demoModel({ AGENT_SESSIONS_DEMO_MODEL: 'scripted' }, providers, true)).toEqual({
      provider: 'scripted',
      steps: DEMO_SCRIPT,
    });
    expect(demoModel({ AGENT_SESSIONS_DEMO_MODEL: 'local:qwen' }, providers, false)).toEqual({
      provider: 'local',
      model: 'qwen',
    });
    expect(demoModel({ OPENAI_API_KEY: 'k' }, [...providers, 'openai'], true)).toEqual({
      provider: 'openai',
      model: 'gpt-4o-mini',
    });
    expect(demoConfig({ provider: 'local' }).tools).toEqual(['clock', 'calculator']);
  });

  it('calculator: arithmetic with precedence, power, parentheses; errors say where', () => {
    expect(evaluateArithmetic('17 * 23')).toBe(391);
    expect(evaluateArithmetic('2 ^ 10')).toBe(1024);
    expect(evaluateArithmetic('2 ** 3 ** 2')).toBe(512);
    expect(evaluateArithmetic('(2 + 3) / 4')).toBe(1.25);
    expect(evaluateArithmetic('-3 + 10 % 4')).toBe(-1);
    expect(evaluateArithmetic('12 x 12')).toBe(144);
    expect(evaluateArithmetic('1,234 + 5')).toBe(1239);
    expect(() => evaluateArithmetic('today')).toThrow(/"t" is not a number/);
    expect(() => evaluateArithmetic('1 / 0')).toThrow(/division by zero/);
    expect(() => evaluateArithmetic('(1 + 2')).toThrow(/"\)" is missing/);
    expect(() => evaluateArithmetic('1 2')).toThrow(/unexpected "2"/);
  });

  it('clock: the time, and a context card from plugin:clock for the next step', async () => {
    const contexts: unknown[] = [];
    const runtime = {
      sessionId: 's',
      callId: 'c',
      turn: 1,
      step: 1,
      signal: new AbortController().signal,
      heartbeat: () => {},
      sleep: async () => {},
      inject: async () => {},
      steer: async () => {},
    };
    const out = await runTool(clockTool, 'clock', {}, runtime);
    expect(out.error).toBeUndefined();
    expect((out.content[0] as { text: string }).text).toMatch(/^It is \w+day, .* \d{2}:\d{2} UTC\.$/);
    contexts.push(...out.additionalContexts);
    expect(contexts).toEqual([expect.objectContaining({ source: { kind: 'plugin', plugin: 'clock' } })]);
  });
});
