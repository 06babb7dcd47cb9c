/**
 * What the `local` provider reads out of an AI SDK prompt for a small model, and how it grounds what the model writes
 * in it: the texts of messages and results, the exchange since the last text answer, the numbers a tool's arguments
 * may take (the user's latest numbers, or an earlier result's value), how an answer after tool results starts, and
 * whether a call repeats one already made. A 135M model copies words well and digits badly, and invents numbers when
 * it finds none; these rules are the deterministic part around it (docs/decisions/2026-12-03-local-model.md). Pure.
 */
import type {
  LanguageModelV3FunctionTool,
  LanguageModelV3Message,
  LanguageModelV3ToolResultOutput,
} from '@ai-sdk/provider';

/**
 * The tools a new question may call and the numbers each may take. A tool's number arguments come from the user's
 * latest words with numbers since the last answer (a steer "use 13 times 13" overrides the question); when they hold
 * fewer numbers than the tool needs, the value of its last earlier result fills in, and the model is shown it
 * (`carried`: "that number plus 9"). A tool that needs a number is offered only when the user wrote one.
 */
export function groundArguments(
  prompt: readonly LanguageModelV3Message[],
  functions: readonly LanguageModelV3FunctionTool[],
): { offered: LanguageModelV3FunctionTool[]; numbers: Record<string, string[]>; carried: string[] } {
  const before = prompt.slice(0, lastAnswerIndex(prompt) + 1);
  const latest =
    prompt
      .slice(before.length)
      .map(userText)
      .reverse()
      .find((text) => numbersIn(text).length > 0) ?? '';
  const said = numbersIn(latest);
  const count = latest.match(NUMBER)?.length ?? 0;
  const offered = functions.filter((t) => said.length > 0 || numberArguments(t.inputSchema) === 0);
  const carried = new Set<string>();
  const numbers = Object.fromEntries(
    offered.map((t) => {
      const last = count < numberArguments(t.inputSchema) ? resultValues(before, t.name).slice(-1) : [];
      for (const value of last) carried.add(value);
      return [t.name, [...new Set([...said, ...last])]];
    }),
  );
  return { offered, numbers, carried: [...carried] };
}

/** Indexes of the assistant messages that answered in text without calling a tool. */
export function textAnswers(prompt: readonly LanguageModelV3Message[]): number[] {
  return prompt.flatMap((m, i) =>
    m.role === 'assistant' && !m.content.some((p) => p.type === 'tool-call') ? [i] : [],
  );
}

/** Index of the last assistant message that answered in text without calling a tool (-1 when none). */
export function lastAnswerIndex(prompt: readonly LanguageModelV3Message[]): number {
  return textAnswers(prompt).at(-1) ?? -1;
}

const NUMBER = /(?<![\w.])-?\d+(?:\.\d+)?/g;

/** The numbers written in a text, as written ("17", "2.5", "-3"), in order, without repeats. */
export function numbersIn(text: string): string[] {
  return [...new Set(text.match(NUMBER) ?? [])];
}

/** How many required number or integer arguments a tool's input has (at its top level). */
function numberArguments(schema: unknown): number {
  const s = schema as { properties?: Record<string, { type?: unknown }>; required?: unknown };
  const required = Array.isArray(s.required) ? (s.required as string[]) : [];
  return required.filter((name) => ['number', 'integer'].includes(String(s.properties?.[name]?.type))).length;
}

/** The values of a tool's results in `prompt`: the number each ends with ("17 times 23 is 391." → 391). */
function resultValues(prompt: readonly LanguageModelV3Message[], toolName: string): string[] {
  return prompt.flatMap((m) =>
    m.role === 'tool'
      ? m.content.flatMap((p) =>
          p.type === 'tool-result' && p.toolName === toolName
            ? numbersIn(outputText(p.output)).slice(-1)
            : [],
        )
      : [],
  );
}

/** The text of the results in `prompt` (of one tool, or of all). */
function resultText(prompt: readonly LanguageModelV3Message[], toolName?: string): string {
  return prompt
    .flatMap((m) => (m.role === 'tool' ? m.content : []))
    .map((p) =>
      p.type === 'tool-result' && (!toolName || p.toolName === toolName) ? outputText(p.output) : '',
    )
    .join('\n');
}

/** Text that ends as a sentence does (a result read as one). */
export function sentence(text: string): string {
  const trimmed = text.trim();
  return /[.!?]$/.test(trimmed) ? trimmed : `${trimmed}.`;
}

export function userText(message: LanguageModelV3Message): string {
  if (message.role !== 'user') return '';
  return message.content
    .flatMap((p) => (p.type === 'text' ? [p.text] : []))
    .join('\n')
    .trim();
}

/** A tool result's output as the text the model reads (data parts named, never their base64). */
export function outputText(output: LanguageModelV3ToolResultOutput): string {
  switch (output.type) {
    case 'text':
    case 'error-text':
      return output.value;
    case 'json':
    case 'error-json':
      return JSON.stringify(output.value);
    case 'execution-denied':
      return `denied${output.reason ? `: ${output.reason}` : ''}`;
    case 'content':
      // Data parts never reach this text-only model as data: each is named by its type and media type.
      return output.value
        .map((p) =>
          p.type === 'text'
            ? p.text
            : `[${p.type}${'mediaType' in p && p.mediaType ? ` ${p.mediaType}` : ''}]`,
        )
        .join('\n');
  }
}

/**
 * How an answer after tool results starts: with the results as the tools worded them, when every one is a short line
 * of words (not JSON, not an error), and the numbers its continuation may use (those of the question and results).
 * A 135M model copies words well and digits badly ("391 plus 9 is 480"); it may go on after the results, or stop.
 * Undefined when no results follow the last assistant message.
 */
export function answerStart(
  prompt: readonly LanguageModelV3Message[],
): { prefix: string; numbers: string[] } | undefined {
  let assistant = -1;
  prompt.forEach((m, i) => {
    if (m.role === 'assistant') assistant = i;
  });
  const parts = prompt
    .slice(assistant + 1)
    .flatMap((m) => (m.role === 'tool' ? m.content : []))
    .flatMap((p) => (p.type === 'tool-result' ? [p] : []));
  if (assistant < 0 || parts.length === 0) return undefined;
  const lines = parts.map((p) => (p.output.type === 'text' ? sentence(p.output.value) : undefined));
  const words = lines.every((l) => l && l.length <= MAX_PREFIX_CHARS && !/[\n{}[\]]/.test(l));
  const current = prompt.slice(lastAnswerIndex(prompt) + 1);
  const numbers = numbersIn([...current.map(userText), resultText(prompt)].join('\n'));
  return { prefix: words ? lines.join(' ') : '', numbers };
}

const MAX_PREFIX_CHARS = 200;

/** Whether `call` repeats a call made since the last text answer (same tool, same arguments): its result is in view. */
export function repeatsCall(
  prompt: readonly LanguageModelV3Message[],
  call: { toolName: string; input: Record<string, unknown> },
): boolean {
  const key = JSON.stringify([call.toolName, call.input]);
  return prompt
    .slice(lastAnswerIndex(prompt) + 1)
    .some(
      (m) =>
        m.role === 'assistant' &&
        m.content.some(
          (p) =>
            p.type === 'tool-call' &&
            JSON.stringify([p.toolName, typeof p.input === 'string' ? safeParse(p.input) : p.input]) === key,
        ),
    );
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
