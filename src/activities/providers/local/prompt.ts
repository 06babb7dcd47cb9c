/**
 * How the `local` provider talks to a small model that has no native function calling: the AI SDK prompt becomes a
 * plain chat (system, user, model turns), the tools are described in the system text, and a tool call is one JSON
 * object `{"tool": name, "arguments": {...}}` that a grammar forces (./grammar). Pure; runs in activities.
 *
 * Tool choice policy (docs/decisions/2026-12-03-local-model.md): small models answer "tool or text?" badly, so the
 * provider decides. `none` → text; `required` → a call to any offered tool; `{type:'tool', toolName}` → a call to
 * that tool; `auto` (the default) → text once tool results follow the last assistant message (answer with them,
 * whatever contexts or steers came after them), else a call when the prompt ends with a user message (a new
 * question), else text.
 */
import type {
  LanguageModelV3CallOptions,
  LanguageModelV3FunctionTool,
  LanguageModelV3Message,
  LanguageModelV3ToolResultOutput,
} from '@ai-sdk/provider';

/** A chat turn in the shape node-llama-cpp's LlamaChat takes (ChatHistoryItem, text-only subset). */
export type LocalChatItem =
  { type: 'system'; text: string } | { type: 'user'; text: string } | { type: 'model'; response: string[] };

/** What one generation produces: free text, or one call to one of `tools` (JSON under a grammar). */
export type LocalMode = { kind: 'text' } | { kind: 'tool'; tools: LanguageModelV3FunctionTool[] };

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
    case 'auto':
      return resultsSinceLastAnswer(prompt) || lastRole(prompt) !== 'user'
        ? { kind: 'text' }
        : { kind: 'tool', tools: functions };
  }
}

/** Index of the last assistant message that answered in text without calling a tool (-1 when none). */
function lastAnswerIndex(prompt: readonly LanguageModelV3Message[]): number {
  let last = -1;
  prompt.forEach((m, i) => {
    if (m.role === 'assistant' && !m.content.some((p) => p.type === 'tool-call')) last = i;
  });
  return last;
}

/** Whether tool results follow the last assistant message (the model called tools and now has their results). */
function resultsSinceLastAnswer(prompt: readonly LanguageModelV3Message[]): boolean {
  let last = -1;
  prompt.forEach((m, i) => {
    if (m.role === 'assistant') last = i;
  });
  return last >= 0 && prompt.slice(last + 1).some((m) => m.role === 'tool');
}

function lastRole(prompt: readonly LanguageModelV3Message[]): string | undefined {
  return [...prompt].reverse().find((m) => m.role !== 'system')?.role;
}

/**
 * The chat the model continues: one system turn (the session's system text, plus the tool list and the call format
 * in tool mode), then user and model turns in order. An earlier call reads as "Let me use the X tool." and its
 * results as a user turn that names the tool (measured: 8/8 answers used the result, against 3/8 when the model saw
 * its call as JSON).
 * Consecutive user turns are merged (chat templates expect alternation). Ends with an empty model turn to continue.
 * In text mode after tool results, a last user line repeats the question the call answered, which is what gets a
 * small model to use the result.
 */
export function toChatHistory(prompt: readonly LanguageModelV3Message[], mode: LocalMode): LocalChatItem[] {
  const system = prompt
    .filter((m): m is Extract<LanguageModelV3Message, { role: 'system' }> => m.role === 'system')
    .map((m) => m.content.trim())
    .filter(Boolean);
  if (mode.kind === 'tool') system.push(toolInstructions(mode.tools));
  const items: LocalChatItem[] = system.length ? [{ type: 'system', text: system.join('\n\n') }] : [];
  const pushUser = (text: string) => {
    const last = items[items.length - 1];
    if (last?.type === 'user') last.text = `${last.text}\n\n${text}`;
    else items.push({ type: 'user', text });
  };
  // The question a tool call answered: the last user text before the last assistant message.
  let lastAssistant = -1;
  prompt.forEach((m, i) => {
    if (m.role === 'assistant') lastAssistant = i;
  });
  let question = '';
  prompt.forEach((m, i) => {
    if (m.role === 'user' && i < lastAssistant) question = userText(m) || question;
  });
  // In tool mode the model sees only the exchange since its last answer: with earlier calls in view, a small model
  // repeats one of them instead of reading the new question.
  const from = mode.kind === 'tool' ? lastAnswerIndex(prompt) + 1 : 0;
  for (const message of prompt.slice(from)) {
    switch (message.role) {
      case 'system':
        break;
      case 'user': {
        const text = userText(message);
        if (text) pushUser(text);
        break;
      }
      case 'assistant': {
        // An earlier call reads as a sentence, never as its JSON: a small model that sees its own JSON keeps
        // writing JSON after the result (text mode) or repeats the same call for the next question (tool mode).
        const texts = message.content.flatMap((p) =>
          p.type === 'text' && p.text.trim() ? [p.text.trim()] : [],
        );
        const names = [
          ...new Set(message.content.flatMap((p) => (p.type === 'tool-call' ? [p.toolName] : []))),
        ];
        const parts =
          texts.length || !names.length
            ? texts
            : [`Let me use the ${names.join(' and ')} tool${names.length > 1 ? 's' : ''}.`];
        if (parts.length) items.push({ type: 'model', response: [parts.join('\n')] });
        break;
      }
      case 'tool': {
        const results = message.content.flatMap((p) =>
          p.type === 'tool-result' ? [`The ${p.toolName} tool says: ${outputText(p.output)}`] : [],
        );
        if (results.length) pushUser(results.join('\n'));
        break;
      }
    }
  }
  if (mode.kind === 'text' && question && resultsSinceLastAnswer(prompt)) {
    pushUser(`Now answer my question: ${question}`);
  }
  items.push({ type: 'model', response: [] });
  return items;
}

/** The tool list and the call format, appended to the system text in tool mode. */
export function toolInstructions(tools: readonly LanguageModelV3FunctionTool[]): string {
  const lines = tools.map((t) => {
    const args = argumentsHint(t.inputSchema as Record<string, unknown>);
    return `- ${t.name}: ${(t.description ?? '').trim() || 'no description'} Arguments: ${args}`;
  });
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

function userText(message: LanguageModelV3Message): string {
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
