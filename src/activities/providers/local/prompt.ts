/**
 * How the `local` provider talks to a small model that has no native function calling: the AI SDK prompt becomes a
 * plain chat (system, user, model turns), the tools are described in the system text, and a tool call is one JSON
 * object `{"tool": name, "arguments": {...}}` that a grammar forces (./grammar). Pure; runs in activities.
 *
 * Tool choice policy (docs/decisions/2026-12-03-local-model.md): `none` → text; `required` → a call to any offered
 * tool; `{type:'tool', toolName}` → a call to that tool; `auto` (the default) → `either` when the user has said
 * something since the last call or answer (a question, or a steer or context after tool results): the model writes a
 * call of an offered tool or of `none` (answer in text), its number arguments grounded in the conversation
 * (./grounded); text when tool results are the last thing (answer with them).
 */
import type {
  LanguageModelV3CallOptions,
  LanguageModelV3FunctionTool,
  LanguageModelV3Message,
} from '@ai-sdk/provider';
import { TEXT_CHOICE } from './grammar';
import { groundArguments, lastAnswerIndex, outputText, sentence, textAnswers, userText } from './grounded';

export { answerStart, numbersIn, outputText, repeatsCall } from './grounded';

/** A chat turn in the shape node-llama-cpp's LlamaChat takes (ChatHistoryItem, text-only subset). */
export type LocalChatItem =
  { type: 'system'; text: string } | { type: 'user'; text: string } | { type: 'model'; response: string[] };

/**
 * What one request produces: free text; one call to one of `tools` (JSON under a grammar); or either, as the model
 * chooses (one grammar admits a call of the tools or of `none`, which means a text answer).
 */
export type LocalMode =
  | { kind: 'text' }
  | { kind: 'tool'; tools: LanguageModelV3FunctionTool[] }
  | {
      kind: 'either';
      tools: LanguageModelV3FunctionTool[];
      /** By tool, the numbers its arguments may take (./grammar). */
      numbers: Record<string, string[]>;
      /** Values of earlier results the question may refer to, shown before it ("Last result: 391."). */
      carried: string[];
    };

/** The mode of a request under the tool choice policy (see the file header). Pure. */
export function decideMode(
  prompt: readonly LanguageModelV3Message[],
  tools: LanguageModelV3CallOptions['tools'],
  toolChoice: LanguageModelV3CallOptions['toolChoice'],
): LocalMode {
  const functions = (tools ?? []).filter((t): t is LanguageModelV3FunctionTool => t.type === 'function');
  if (functions.length === 0) return { kind: 'text' };
  const choice = toolChoice ?? { type: 'auto' };
  switch (choice.type) {
    case 'none':
      return { kind: 'text' };
    case 'required':
      return { kind: 'tool', tools: functions };
    case 'tool': {
      const named = functions.filter((t) => t.name === choice.toolName);
      return named.length ? { kind: 'tool', tools: named } : { kind: 'text' };
    }
    case 'auto': {
      const results = lastResultsIndex(prompt);
      const asked =
        results >= 0
          ? prompt.slice(results + 1).some((m) => m.role === 'user' && userText(m))
          : lastRole(prompt) === 'user';
      if (!asked) return { kind: 'text' };
      const { offered, numbers, carried } = groundArguments(prompt, functions);
      if (!offered.length) return { kind: 'text' };
      return { kind: 'either', tools: offered, numbers, carried };
    }
  }
}

/** Index of the last tool message after the last assistant message (-1 when no results follow it). */
function lastResultsIndex(prompt: readonly LanguageModelV3Message[]): number {
  let assistant = -1;
  let results = -1;
  prompt.forEach((m, i) => {
    if (m.role === 'assistant') assistant = i;
    if (m.role === 'tool') results = i;
  });
  return assistant >= 0 && results > assistant ? results : -1;
}

function lastRole(prompt: readonly LanguageModelV3Message[]): string | undefined {
  return [...prompt].reverse().find((m) => m.role !== 'system')?.role;
}

/**
 * The chat the model continues: one system turn (the session's system text, plus the tool list and the call format
 * when it may call), then user and model turns in order, merged where two of one side meet (chat templates expect
 * alternation), ending with an empty model turn to continue.
 * The exchange since the last text answer reads as one user turn: the question, then each result ("The calculator
 * tool says: 17 times 23 is 391."), then whatever came after (a steer, a tool's context); no internal line asks the
 * question again (the model copied such lines into its answer). Before it, `earlier` exchanges (default: all for a
 * text answer, none when the model may call; the provider passes 1 for a text answer in a session with tools: with
 * more, SmolLM2 drifted) as the user's words and the model's text answers, without their calls and results (a small
 * model that sees earlier calls repeats one); when calling, the values its question may refer to ("Last result:
 * 391.").
 */
export function toChatHistory(
  prompt: readonly LanguageModelV3Message[],
  mode: LocalMode,
  options: { earlier?: number } = {},
): LocalChatItem[] {
  const system = prompt
    .filter((m): m is Extract<LanguageModelV3Message, { role: 'system' }> => m.role === 'system')
    .map((m) => m.content.trim())
    .filter(Boolean);
  if (mode.kind !== 'text') system.push(toolInstructions(mode.tools, mode.kind === 'either'));
  const items: LocalChatItem[] = system.length ? [{ type: 'system', text: system.join('\n\n') }] : [];
  const pushUser = (text: string) => {
    const last = items[items.length - 1];
    if (last?.type === 'user') last.text = `${last.text}\n\n${text}`;
    else items.push({ type: 'user', text });
  };
  const pushModel = (text: string) => {
    const last = items[items.length - 1];
    if (last?.type === 'model') last.response = [`${String(last.response[0] ?? '')}\n${text}`];
    else items.push({ type: 'model', response: [text] });
  };
  const current = lastAnswerIndex(prompt) + 1;
  const earlier = options.earlier ?? (mode.kind === 'text' ? Infinity : 0);
  const answers = textAnswers(prompt);
  const from = earlier < answers.length ? answers[answers.length - 1 - earlier]! + 1 : 0;
  if (mode.kind === 'either' && mode.carried.length) pushUser(`Last result: ${mode.carried.join(', ')}.`);
  prompt.forEach((message, i) => {
    if (i < from) return;
    switch (message.role) {
      case 'system':
        break;
      case 'user': {
        const text = userText(message);
        if (text) pushUser(text);
        break;
      }
      case 'assistant': {
        // Only text answers: a call reads as its results (in the current exchange) or not at all (before it).
        const text = message.content
          .flatMap((p) => (p.type === 'text' && p.text.trim() ? [p.text.trim()] : []))
          .join('\n');
        if (text && !message.content.some((p) => p.type === 'tool-call')) pushModel(text);
        break;
      }
      case 'tool': {
        if (i < current) break;
        const results = message.content.flatMap((p) =>
          p.type === 'tool-result' ? [`The ${p.toolName} tool says: ${sentence(outputText(p.output))}`] : [],
        );
        if (results.length) pushUser(results.join('\n'));
        break;
      }
    }
  });
  items.push({ type: 'model', response: [] });
  return items;
}

/** The tool list and the call format, appended to the system text in tool mode. */
export function toolInstructions(tools: readonly LanguageModelV3FunctionTool[], either = false): string {
  const lines = tools.map((t) => {
    const args = argumentsHint(t.inputSchema as Record<string, unknown>);
    return `- ${t.name}: ${(t.description ?? '').trim() || 'no description'} Arguments: ${args}`;
  });
  if (either)
    lines.push('- none: no tool, I answer in words (greetings, translations, facts, thanks). Arguments: {}');
  return [
    'You can call these tools:',
    ...lines,
    'To call a tool, answer with JSON: {"tool": "<name>", "arguments": {...}}.',
  ].join('\n');
}

/** A short `{"name": type}` rendering of a tool's required arguments (what the grammar asks the model to fill). */
function argumentsHint(schema: Record<string, unknown>): string {
  const properties = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
  const fields = Object.entries(properties)
    .filter(([name]) => required.has(name))
    .map(([name, s]) => {
      const about =
        typeof s.description === 'string' && s.description.trim() ? ` (${s.description.trim()})` : '';
      return `"${name}": ${typeName(s)}${about}`;
    });
  return `{${fields.join(', ')}}`;
}

function typeName(schema: Record<string, unknown>): string {
  if (Array.isArray(schema.enum)) return schema.enum.map((v) => JSON.stringify(v)).join(' | ');
  if (typeof schema.type === 'string') return schema.type;
  if (Array.isArray(schema.type)) return schema.type.join(' | ');
  return 'value';
}

/** Whether a generation in `either` mode chose to answer in text (the call of `none`, ./grammar TEXT_CHOICE). */
export function isTextChoice(text: string): boolean {
  return text.trim() === TEXT_CHOICE;
}

/**
 * The call in a generation made in tool mode: `{tool, arguments}` with a tool name of `tools`, or undefined when the
 * text is not such a call (the generation was cut by the token limit or a cancel).
 */
export function parseToolCall(
  text: string,
  tools: readonly LanguageModelV3FunctionTool[],
): { toolName: string; input: Record<string, unknown> } | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { tool, arguments: args } = value as { tool?: unknown; arguments?: unknown };
  if (typeof tool !== 'string' || !tools.some((t) => t.name === tool)) return undefined;
  const input =
    typeof args === 'object' && args !== null && !Array.isArray(args)
      ? (args as Record<string, unknown>)
      : {};
  return { toolName: tool, input };
}
