/**
 * A GBNF grammar (llama.cpp's grammar format) that lets a model write exactly one tool call,
 * `{"tool":"<name>","arguments":{...}}`, for a set of tools with JSON-schema inputs. Compact JSON (no whitespace),
 * so a call costs few tokens and cannot wander off. Pure.
 *
 * The schema subset: objects (their required properties, in order; optional ones are left out, so their defaults
 * apply), strings (with min/max length, capped at MAX_STRING_CHARS), numbers, integers, booleans, null, enums and
 * consts, arrays (capped at MAX_ARRAY_ITEMS), anyOf/oneOf and type lists. Anything else (a `$ref`, `{}`) accepts a
 * scalar. Bounds the grammar cannot express (minimum, pattern) are left to the tool's own validation, which answers
 * a bad call with an error the model reads.
 */

export const MAX_STRING_CHARS = 256;
export const MAX_ARRAY_ITEMS = 16;
const MAX_DEPTH = 8;

type Schema = Record<string, unknown>;

export interface GrammarTool {
  name: string;
  inputSchema: unknown;
}

const PRIMITIVES = [
  'char ::= [^"\\\\\\x7F\\x00-\\x1F] | "\\\\" (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4})',
  'integer ::= "-"? ("0" | [1-9] [0-9]{0,15})',
  'number ::= integer ("." [0-9]{1,15})? ([eE] [-+]? [0-9]{1,3})?',
  'boolean ::= "true" | "false"',
  'null ::= "null"',
  'string ::= "\\"" char{0,' + MAX_STRING_CHARS + '} "\\""',
  'scalar ::= string | number | boolean | null',
];

/**
 * The choice to answer in text, written as a call: a small model picks between tool names far better than between
 * a JSON object and free text (it answered every question in text when its first character decided).
 */
export const TEXT_CHOICE = '{"tool":"none","arguments":{}}';

export interface GrammarOptions {
  /** Admit the choice to answer in text too, written as a call of the tool `none` (TEXT_CHOICE). */
  orText?: boolean;
  /**
   * By tool name, the numbers its number and integer arguments may take (as written, e.g. "17", "2.5"): a small
   * model invents numbers ("a": 1) when it finds none, so its arguments are grounded in the conversation's.
   */
  numbers?: Readonly<Record<string, readonly string[]>>;
}

/** The grammar for one call to any of `tools` (at least one), or, with `orText`, a text answer. */
export function toolCallGrammar(tools: readonly GrammarTool[], options: GrammarOptions = {}): string {
  if (tools.length === 0) throw new Error('toolCallGrammar needs at least one tool');
  const rules: string[] = [];
  let next = 0;
  const rule = (body: string): string => {
    const name = `r${next++}`;
    rules.push(`${name} ::= ${body}`);
    return name;
  };
  let numbers: readonly string[] | undefined;
  const grounded = (integer: boolean): string | undefined => {
    const allowed = numbers?.filter((n) => !integer || /^-?\d+$/.test(n));
    return allowed?.length ? rule(allowed.map((n) => literal(n)).join(' | ')) : undefined;
  };

  const value = (schema: unknown, depth: number): string => {
    if (typeof schema !== 'object' || schema === null || depth > MAX_DEPTH) return 'scalar';
    const s = schema as Schema;
    if ('const' in s) return literal(JSON.stringify(s.const));
    if (Array.isArray(s.enum) && s.enum.length)
      return rule(s.enum.map((v) => literal(JSON.stringify(v))).join(' | '));
    const alternatives = (Array.isArray(s.anyOf) ? s.anyOf : Array.isArray(s.oneOf) ? s.oneOf : undefined) as
      unknown[] | undefined;
    if (alternatives?.length) return rule(alternatives.map((a) => value(a, depth + 1)).join(' | '));
    if (Array.isArray(s.type)) {
      const types = s.type.filter((t): t is string => typeof t === 'string');
      if (types.length) return rule(types.map((type) => value({ ...s, type }, depth + 1)).join(' | '));
    }
    switch (s.type) {
      case 'object':
        return rule(objectBody(s, depth));
      case 'string':
        return stringRule(s);
      case 'integer':
        return grounded(true) ?? 'integer';
      case 'number':
        return grounded(false) ?? 'number';
      case 'boolean':
        return 'boolean';
      case 'null':
        return 'null';
      case 'array':
        return rule(arrayBody(s, depth));
      default:
        return 'scalar';
    }
  };

  const objectBody = (s: Schema, depth: number): string => {
    const properties = (
      typeof s.properties === 'object' && s.properties !== null ? s.properties : {}
    ) as Record<string, unknown>;
    const required = new Set(Array.isArray(s.required) ? s.required : []);
    const fields = Object.entries(properties)
      .filter(([name]) => required.has(name))
      .map(([name, prop]) => `${literal(`${JSON.stringify(name)}:`)} ${value(prop, depth + 1)}`);
    return fields.length ? `"{" ${fields.join(' "," ')} "}"` : '"{}"';
  };

  const arrayBody = (s: Schema, depth: number): string => {
    const max = Math.min(typeof s.maxItems === 'number' ? s.maxItems : MAX_ARRAY_ITEMS, MAX_ARRAY_ITEMS);
    const min = Math.min(typeof s.minItems === 'number' ? s.minItems : 0, max);
    if (max <= 0) return '"[]"';
    const item = value(s.items, depth + 1);
    const rest = max > 1 ? ` ("," ${item}){${Math.max(min - 1, 0)},${max - 1}}` : '';
    return min === 0 ? `"[" (${item}${rest})? "]"` : `"[" ${item}${rest} "]"`;
  };

  const stringRule = (s: Schema): string => {
    const maxLength = typeof s.maxLength === 'number' ? s.maxLength : MAX_STRING_CHARS;
    const max = Math.min(maxLength, MAX_STRING_CHARS);
    const min = Math.min(typeof s.minLength === 'number' ? s.minLength : 0, max);
    if (min === 0 && max === MAX_STRING_CHARS) return 'string';
    return rule(`"\\"" char{${min},${max}} "\\""`);
  };

  const calls = tools.map((t) => {
    numbers = options.numbers?.[t.name];
    return rule(`${literal(`${JSON.stringify(t.name)},"arguments":`)} ${value(t.inputSchema, 0)}`);
  });
  const call = `"{\\"tool\\":" (${calls.join(' | ')}) "}"`;
  const roots = options.orText
    ? ['root ::= call | none', `call ::= ${call}`, `none ::= ${literal(TEXT_CHOICE)}`]
    : [`root ::= ${call}`];
  return [...roots, ...rules, ...PRIMITIVES].join('\n');
}

/** A GBNF string literal matching `text` exactly (GBNF literals take JSON-style escapes). */
function literal(text: string): string {
  return JSON.stringify(text);
}

/**
 * A text answer whose numbers are all among `numbers` (as written: a digit run must be one of them whole, e.g.
 * "391" or "16" and "45" of "16:45"): after a tool result a small model copies its words well but its digits badly
 * ("391 plus 9 is 480"), so the answer is grounded in the numbers of the question and the results.
 */
export function groundedTextGrammar(numbers: readonly string[]): string {
  const runs = [...new Set(numbers.flatMap((n) => n.match(/\d+/g) ?? []))];
  if (runs.length === 0) return 'root ::= [^0-9]*';
  return [
    'root ::= [^0-9]* (number [^0-9]+)* number?',
    `number ::= ${runs.map((n) => literal(n)).join(' | ')}`,
  ].join('\n');
}
