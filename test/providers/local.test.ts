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
import {
  groundedTextGrammar,
  MAX_STRING_CHARS,
  TEXT_CHOICE,
  toolCallGrammar,
} from '../../src/activities/providers/local/grammar';
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

  it('auto: the model chooses (a call or none) when the user said something last, text when results are last', () => {
    expect(decideMode(question, tools, undefined)).toMatchObject({ kind: 'either', tools });
    expect(decideMode(question, tools, { type: 'auto' })).toMatchObject({ kind: 'either', tools });
    expect(decideMode(afterResult, tools, undefined)).toEqual({ kind: 'text' });
    // A steer or a tool's context after the results: the model may call again (a repeated call is answered instead).
    expect(decideMode([...afterResult, user('use 3 + 3 instead')], tools, undefined)).toMatchObject({
      kind: 'either',
      tools,
    });
    expect(decideMode([...afterResult, answer('4'), user('and 3 + 3?')], tools, undefined)).toMatchObject({
      kind: 'either',
      tools,
    });
  });

  it("auto: number arguments are grounded in the user's latest numbers, or the last result's value", () => {
    const calc = fn('calculator', {
      type: 'object',
      properties: { a: { type: 'number' }, op: { enum: ['plus', 'times'] }, b: { type: 'number' } },
      required: ['a', 'op', 'b'],
    });
    const both = [tools[0]!, calc];
    // No number in the question: a tool that needs numbers is not offered.
    expect(decideMode([user('Say hello in French.')], both, undefined)).toMatchObject({ tools: [tools[0]] });
    expect(decideMode([user('What is 12 times 12?')], both, undefined)).toMatchObject({
      kind: 'either',
      numbers: { clock: ['12'], calculator: ['12'] },
      carried: [],
    });
    const earlier = [
      user('What is 17 times 23?'),
      callOf('calculator', { a: 17, op: 'times', b: 23 }),
      resultOf('calculator', '17 times 23 is 391.'),
      answer('17 times 23 is 391.'),
    ];
    // One number where two are needed: the last result's value fills in, and the model is shown it.
    const mode = decideMode([...earlier, user('And what is that number plus 9?')], both, undefined);
    expect(mode).toMatchObject({ numbers: { calculator: ['9', '391'] }, carried: ['391'] });
    expect(toChatHistory([...earlier, user('And what is that number plus 9?')], mode)[1]).toEqual({
      type: 'user',
      text: 'Last result: 391.\n\nAnd what is that number plus 9?',
    });
    // A steer with numbers overrides the question's.
    const steered = [
      user('What is 12 times 12?'),
      callOf('calculator', { a: 12, op: 'times', b: 12 }),
      resultOf('calculator', '12 times 12 is 144.'),
      user('Actually, use 13 times 13 instead.'),
    ];
    expect(decideMode(steered, both, undefined)).toMatchObject({
      numbers: { calculator: ['13'] },
      carried: [],
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

  it('text mode after results: one user turn, the question, the results named, what came after; no internal line', () => {
    const prompt: LanguageModelV3Message[] = [
      { role: 'system', content: 'Be brief.' },
      user('What is 12 * 12?'),
      callOf('calculator', { expression: '12 * 12' }),
      resultOf('calculator', '12 * 12 = 144'),
      user('Answer in French.'),
    ];
    expect(toChatHistory(prompt, { kind: 'text' })).toEqual([
      { type: 'system', text: 'Be brief.' },
      {
        type: 'user',
        text: 'What is 12 * 12?\n\nThe calculator tool says: 12 * 12 = 144.\n\nAnswer in French.',
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

  it('or the choice to answer (the call of `none`); number arguments among given numbers', () => {
    const calc = {
      name: 'calc',
      inputSchema: { type: 'object', properties: { a: { type: 'integer' } }, required: ['a'] },
    };
    const grammar = toolCallGrammar([calc], { orText: true, numbers: { calc: ['12', '2.5', '13'] } });
    expect(grammar.split('\n').slice(0, 3)).toEqual([
      'root ::= call | none',
      'call ::= "{\\"tool\\":" (r2) "}"',
      `none ::= ${JSON.stringify(TEXT_CHOICE)}`,
    ]);
    expect(grammar).toContain('r0 ::= "12" | "13"');
  });

  it('a grounded answer: every digit run is one of the numbers', () => {
    expect(groundedTextGrammar(['391', '9', '16:45'])).toBe(
      'root ::= [^0-9]* (number [^0-9]+)* number?\nnumber ::= "391" | "9" | "16" | "45"',
    );
    expect(groundedTextGrammar([])).toBe('root ::= [^0-9]*');
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

  it('either mode: the choice of `none` leads to a text answer; after results the answer starts with them', async () => {
    const { engine, requests } = fakeEngine((r) =>
      r.grammar?.includes('none ::=') ? { text: TEXT_CHOICE } : { chunks: ['Bonjour.'] },
    );
    const model = new LocalLanguageModel({ engine, modelPath: '/m.gguf', modelId: 'default' });
    const parts = await partsOf(model, { prompt: [user('Say hello in French.')], tools });
    expect(parts.filter((p) => p.type === 'text-delta')).toEqual([
      { type: 'text-delta', id: 'text-0', delta: 'Bonjour.' },
    ]);
    expect(parts.some((p) => p.type === 'tool-call')).toBe(false);
    // The choice, then the answer: free text (no grammar), one paragraph, a repeat penalty.
    expect(requests).toHaveLength(2);
    expect(requests[1]).toMatchObject({ repeatPenalty: 1.3, stopTriggers: ['\n\n'] });
    expect(requests[1]!.grammar).toBeUndefined();
    // Outputs of both count.
    expect((parts.at(-1) as { usage: { outputTokens: { total: number } } }).usage.outputTokens.total).toBe(6);

    const after = fakeEngine(() => ({ chunks: [] }));
    await partsOf(new LocalLanguageModel({ engine: after.engine, modelPath: '/m', modelId: 'd' }), {
      prompt: [
        user('What is 2 + 2?'),
        callOf('calculator', { expression: '2 + 2' }),
        resultOf('calculator', '2 + 2 = 4'),
      ],
      tools,
    });
    expect(after.requests).toHaveLength(1);
    expect(after.requests[0]).toMatchObject({ prefix: '2 + 2 = 4.', stopTriggers: ['\n'] });
    expect(after.requests[0]!.grammar).toContain('number ::= "2" | "4"');
  });

  it('either mode: a call already made since the last answer is not made again; the model answers', async () => {
    const { engine, requests } = fakeEngine((r) =>
      r.grammar?.includes('none ::=') ? { text: '{"tool":"clock","arguments":{}}' } : { chunks: [] },
    );
    const model = new LocalLanguageModel({ engine, modelPath: '/m.gguf', modelId: 'default' });
    const parts = await partsOf(model, {
      prompt: [
        user('What time is it?'),
        callOf('clock', {}),
        resultOf('clock', 'It is 11:48 UTC.'),
        user('a card'),
      ],
      tools,
    });
    expect(parts.some((p) => p.type === 'tool-call')).toBe(false);
    expect(requests[1]).toMatchObject({ prefix: 'It is 11:48 UTC.' });
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

  it('calculator: two numbers and an operation in words, answered in words', async () => {
    const ctx = {} as Parameters<typeof runTool>[3];
    const run = async (args: Record<string, unknown>) =>
      (await runTool(calculatorTool, 'calculator', args, ctx)).content[0];
    expect(await run({ a: 17, op: 'times', b: 23 })).toMatchObject({ text: '17 times 23 is 391.' });
    expect(await run({ a: 2, op: 'to the power of', b: 10 })).toMatchObject({
      text: '2 to the power of 10 is 1024.',
    });
    expect(await run({ a: 1, op: 'divided by', b: 4 })).toMatchObject({ text: '1 divided by 4 is 0.25.' });
    expect(await run({ a: -3, op: 'minus', b: 2 })).toMatchObject({ text: '-3 minus 2 is -5.' });
  });

  it('arithmetic with precedence, power, parentheses; errors say where', () => {
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
    // In words, as an answer says it (never an ISO timestamp); the card has no numbers.
    expect((out.content[0] as { text: string }).text).toMatch(
      /^It is \d{2}:\d{2} UTC on \w+day, \d{1,2} \w+ \d{4}\.$/,
    );
    contexts.push(...out.additionalContexts);
    expect(contexts).toEqual([expect.objectContaining({ source: { kind: 'plugin', plugin: 'clock' } })]);
  });
});
