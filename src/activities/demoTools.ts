/**
 * The `demo` toolset (AGENT_SESSIONS_TOOLSETS=demo): two small, real tools for the `npm start` demo and the
 * real-model tests — a clock (which also leaves a context card, so a newcomer sees tool context enter the next
 * step) and a calculator (two numbers and an operation in words, over a small arithmetic parser; no eval). Both
 * answer in words ("It is 11:48 UTC on Sunday, …", "17 times 23 is 391."), which a small model repeats as it is.
 * Runs in activities.
 */
import { z } from 'zod';
import { defineTool, type ToolDefinition } from './tools';

export const clockTool = defineTool({
  name: 'clock',
  description: 'Tells the date and the time now.',
  input: z.object({}),
  execute(_args, ctx) {
    const now = new Date();
    // A card with no numbers: an answer takes the time from the result, not from here.
    ctx.deferContext("The clock tool read this worker's clock, which runs on UTC.", {
      kind: 'plugin',
      plugin: 'clock',
    });
    return `It is ${timeInWords(now)}.`;
  },
});

/** A time in words, as an answer says it: "11:48 UTC on Sunday, 6 December 2026". */
export function timeInWords(date: Date): string {
  const day = date.toLocaleDateString('en-GB', {
    weekday: 'long',
    day: 'numeric',
    month: 'long',
    year: 'numeric',
    timeZone: 'UTC',
  });
  const time = date.toLocaleTimeString('en-GB', {
    hour: '2-digit',
    minute: '2-digit',
    timeZone: 'UTC',
  });
  // en-GB writes "Sunday 6 December 2026" (Node 20) or "Sunday, 6 December 2026": one form.
  return `${time} UTC on ${day.replace(/^(\w+),? /, '$1, ')}`;
}

/** The calculator's operations, as a question names them. */
export const CALCULATOR_OPERATIONS = ['plus', 'minus', 'times', 'divided by', 'to the power of'] as const;
const SYMBOLS: Record<(typeof CALCULATOR_OPERATIONS)[number], string> = {
  plus: '+',
  minus: '-',
  times: '*',
  'divided by': '/',
  'to the power of': '^',
};

export const calculatorTool = defineTool({
  name: 'calculator',
  description: 'Works out a plus, minus, times, divided by or to the power of b, for two numbers a and b.',
  input: z.object({
    a: z.number().describe('the first number'),
    op: z.enum(CALCULATOR_OPERATIONS).describe('the operation, in words'),
    b: z.number().describe('the second number'),
  }),
  execute({ a, op, b }) {
    const value = evaluateArithmetic(`(${a}) ${SYMBOLS[op]} (${b})`);
    // The result in the question's own words, so an answer can say it as it is.
    return `${formatNumber(a)} ${op} ${formatNumber(b)} is ${formatNumber(value)}.`;
  },
});

/** A tool that waits for a person: every call needs approval (`/approve` in the chat, `agent-sessions approve`). */
export const publishNoteTool = defineTool({
  name: 'publish_note',
  description:
    'Publishes a short note to the team board. A person approves each call before it runs, so say what you publish.',
  input: z.object({ text: z.string().min(1).max(500).describe('the note, one or two sentences') }),
  approval: 'always',
  execute({ text }) {
    return `published to the team board: ${text}`;
  },
});

/** Every tool of the demo toolset. */
export const demoTools: ToolDefinition[] = [clockTool, calculatorTool, publishNoteTool] as ToolDefinition[];

/**
 * The value of an arithmetic expression: numbers, + - * / % (remainder), ^ or ** (power, right-associative),
 * unary minus, parentheses; `x` and `×` multiply, `÷` divides. Throws an Error saying where the text went wrong.
 */
export function evaluateArithmetic(text: string): number {
  const tokens = tokenize(text);
  let i = 0;
  const peek = () => tokens[i];
  const fail = (what: string): never => {
    throw new Error(`cannot evaluate "${text}": ${what}`);
  };
  const expression = (): number => {
    let value = term();
    for (let op = peek(); op === '+' || op === '-'; op = peek()) {
      i++;
      value = op === '+' ? value + term() : value - term();
    }
    return value;
  };
  const term = (): number => {
    let value = power();
    for (let op = peek(); op === '*' || op === '/' || op === '%'; op = peek()) {
      i++;
      const right = power();
      if ((op === '/' || op === '%') && right === 0) fail('division by zero');
      value = op === '*' ? value * right : op === '/' ? value / right : value % right;
    }
    return value;
  };
  const power = (): number => {
    const base = unary();
    if (peek() !== '^') return base;
    i++;
    return base ** power();
  };
  const unary = (): number => {
    if (peek() === '-') {
      i++;
      return -unary();
    }
    if (peek() === '+') {
      i++;
      return unary();
    }
    return primary();
  };
  const primary = (): number => {
    const token = peek();
    if (token === undefined) return fail('it ends too early');
    i++;
    if (token === '(') {
      const value = expression();
      if (peek() !== ')') fail('a ")" is missing');
      i++;
      return value;
    }
    const value = Number(token);
    if (!Number.isFinite(value)) fail(`"${token}" is not a number`);
    return value;
  };
  const value = expression();
  if (i < tokens.length) fail(`unexpected "${tokens[i]}"`);
  if (!Number.isFinite(value)) fail('the result is not a finite number');
  return value;
}

function tokenize(text: string): string[] {
  const normalized = text.replace(/\*\*/g, '^').replace(/[x×]/g, '*').replace(/÷/g, '/').replace(/,/g, '');
  const tokens = normalized.match(/\d+(?:\.\d+)?(?:e[-+]?\d+)?|\.\d+|[-+*/%^()]|\S/gi) ?? [];
  return tokens;
}

function formatNumber(value: number): string {
  return Number.isInteger(value) ? String(value) : String(Number(value.toPrecision(12)));
}
