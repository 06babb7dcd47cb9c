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

/** The grammar for one call to any of `tools` (at least one). */
export function toolCallGrammar(tools: readonly GrammarTool[]): string {
  if (tools.length === 0) throw new Error('toolCallGrammar needs at least one tool');
  const rules: string[] = [];
  let next = 0;
  const rule = (body: string): string => {
    const name = `r${next++}`;
    rules.push(`${name} ::= ${body}`);
    return name;
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
        return 'integer';
      case 'number':
        return 'number';
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

  const calls = tools.map((t) =>
    rule(`${literal(`${JSON.stringify(t.name)},"arguments":`)} ${value(t.inputSchema, 0)}`),
  );
  return [`root ::= "{\\"tool\\":" (${calls.join(' | ')}) "}"`, ...rules, ...PRIMITIVES].join('\n');
}

/** A GBNF string literal matching `text` exactly (GBNF literals take JSON-style escapes). */
function literal(text: string): string {
  return JSON.stringify(text);
}
