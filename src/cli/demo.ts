/**
 * The demo session of `agent-sessions dev` (what `npm start` shows): with no provider key, the local model (a real
 * model run in the worker, offline) with the demo tools (clock, calculator); with a provider key in the environment
 * and that provider configured on the worker, that provider's model; when the local model is not installed, the
 * scripted model, which uses the testing tools so contexts, tool results, steer and inject are visible. Pure.
 */
import {
  formatModelRef,
  parseModelRef,
  type ModelSpec,
  type ScriptedStep,
  type SessionConfig,
} from '../domain/wire';

export const DEMO_SESSION = 'demo';
export const DEMO_OPENAI_MODEL = 'gpt-4o-mini';

/** Tools the demo session may call (the worker's testing toolset, and the demo toolset's tool that needs approval). */
export const DEMO_TOOLS = ['echo', 'sleep', 'emit_context', 'inject_self', 'conclude', 'publish_note'];

/**
 * The offline script: request n answers with step n (then `echo: <latest user text>`). Turn 1 calls `echo` and
 * `emit_context` (a context card from plugin:weather enters the next step); turn 2 runs a slow `sleep` tool so a line
 * typed meanwhile steers into the same turn; turn 3 calls `publish_note`, which waits for `/approve` or `/deny`;
 * later turns echo.
 */
export const DEMO_SCRIPT: ScriptedStep[] = [
  {
    text: "Hello! I'm the offline demo model. Let me try two of the testing tools.",
    // Written word by word, as a real model's answer: the chat's prompt shows it growing.
    streamMs: 1500,
    toolCalls: [
      { name: 'echo', args: { text: 'tools work' } },
      {
        name: 'emit_context',
        args: {
          contexts: [
            { content: 'Weather report: sunny, 21 °C.', source: { kind: 'plugin', plugin: 'weather' } },
          ],
          text: 'emitted one context',
        },
      },
    ],
  },
  {
    text:
      'The weather context arrived as a card, after the tool results. Send another line: I will take a few seconds ' +
      'over it, and whatever you type meanwhile steers me within the same turn.',
    delayMs: 1000,
  },
  { text: 'Thinking it over…', delayMs: 1000, toolCalls: [{ name: 'sleep', args: { ms: 4000 } }] },
  {
    text:
      'Done. Send another line and I will use a tool that asks for your approval first. Try /inject plugin:notes ' +
      'some context before it, if you like.',
  },
  {
    text: 'Let me pin this on the team board. Publishing waits for you: type /approve or /deny [reason].',
    toolCalls: [{ name: 'publish_note', args: { text: 'The agent-sessions demo works.' } }],
  },
  {
    text:
      'Your decision is in the log above (a denial reaches me as DENIED with your reason). From now on I echo your ' +
      'latest message. Try /cancel while I work.',
  },
];

/** Tools of a demo session on a real model: the worker's demo toolset (a clock, which also leaves a context card). */
export const DEMO_REAL_TOOLS = ['clock', 'calculator'];

/**
 * The demo's model. AGENT_SESSIONS_DEMO_MODEL picks it when set: `scripted`, `local`, `provider:model`, or a bare
 * OpenAI model name (used when OPENAI_API_KEY is set). Otherwise OpenAI (gpt-4o-mini) when OPENAI_API_KEY is set
 * and the worker has the `openai` provider (else a turn would end in error); otherwise the local model when the
 * worker has it and its file is installed (`localInstalled`); otherwise the offline script. Throws an Error for a
 * malformed AGENT_SESSIONS_DEMO_MODEL.
 */
export function demoModel(
  env: NodeJS.ProcessEnv,
  availableProviders: readonly string[],
  localInstalled = false,
): ModelSpec {
  const chosen = env.AGENT_SESSIONS_DEMO_MODEL?.trim();
  const hasOpenAi = Boolean(env.OPENAI_API_KEY?.trim()) && availableProviders.includes('openai');
  if (chosen && (chosen.includes(':') || chosen === 'scripted' || chosen === 'local')) {
    const spec = parseModelRef(chosen);
    return spec.provider === 'scripted' ? { provider: 'scripted', steps: DEMO_SCRIPT } : spec;
  }
  if (hasOpenAi) return { provider: 'openai', model: chosen || DEMO_OPENAI_MODEL };
  if (localInstalled && availableProviders.includes('local')) return { provider: 'local' };
  return { provider: 'scripted', steps: DEMO_SCRIPT };
}

export function demoConfig(model: ModelSpec): SessionConfig {
  switch (model.provider) {
    case 'scripted':
      return {
        model,
        tools: DEMO_TOOLS,
        system:
          'You are the agent-sessions demo assistant. Be brief. Use the tools when they help show how they work.',
      };
    case 'local':
      // A 135M-parameter model: short instructions, two tools it can use.
      return {
        model,
        tools: DEMO_REAL_TOOLS,
        system: 'You are a helpful assistant. Be brief. Use a tool when it helps.',
      };
    default:
      return {
        model,
        tools: [...new Set([...DEMO_REAL_TOOLS, ...DEMO_TOOLS])],
        system:
          'You are the agent-sessions demo assistant. Be brief. Use the tools when they help show how they work.',
      };
  }
}

/** One line naming a model for the banner (none: a session started without one runs the worker's default). */
export function describeModel(model: ModelSpec | undefined): string {
  if (!model) return "the worker's default";
  if (model.provider === 'scripted') return 'scripted (offline demo)';
  if (model.provider === 'local') return `${formatModelRef(model)} (offline, in this process)`;
  return formatModelRef(model);
}
