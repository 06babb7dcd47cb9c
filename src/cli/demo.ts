/**
 * The demo session of `agent-sessions dev` (what `npm start` shows): offline, the scripted model answers and uses
 * the testing tools so contexts, tool results, steer and inject are visible; with a provider key in the environment
 * and that provider configured on the worker, a real model instead. Pure.
 */
import type { ModelSpec, ScriptedStep, SessionConfig } from '../domain/wire';

export const DEMO_SESSION = 'demo';
export const DEMO_OPENAI_MODEL = 'gpt-4o-mini';

/** Tools the demo session may call (all in the worker's testing toolset). */
export const DEMO_TOOLS = ['echo', 'sleep', 'emit_context', 'inject_self', 'conclude'];

/**
 * The offline script: request n answers with step n (then `echo: <latest user text>`). Turn 1 calls `echo` and
 * `emit_context` (a context card from plugin:weather enters the next step); turn 2 runs a slow `sleep` tool so a line
 * typed meanwhile steers into the same turn; later turns echo.
 */
export const DEMO_SCRIPT: ScriptedStep[] = [
  {
    text: "Hello! I'm the offline demo model. Let me try two of the testing tools.",
    delayMs: 1500,
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
      'Done. From now on I echo your latest message. Try /inject plugin:notes some context, then a line; or /cancel ' +
      'while I work.',
  },
];

/**
 * The demo's model: OpenAI when OPENAI_API_KEY is set and the worker has the `openai` provider (else a turn would
 * end in error), otherwise the offline script. AGENT_SESSIONS_DEMO_MODEL picks the OpenAI model.
 */
export function demoModel(env: NodeJS.ProcessEnv, availableProviders: readonly string[]): ModelSpec {
  if (env.OPENAI_API_KEY?.trim() && availableProviders.includes('openai')) {
    return { provider: 'openai', model: env.AGENT_SESSIONS_DEMO_MODEL?.trim() || DEMO_OPENAI_MODEL };
  }
  return { provider: 'scripted', steps: DEMO_SCRIPT };
}

export function demoConfig(model: ModelSpec): SessionConfig {
  return {
    model,
    tools: DEMO_TOOLS,
    system:
      'You are the agent-sessions demo assistant. Be brief. Use the tools when they help show how they work.',
  };
}

/** One line naming a model for the banner. */
export function describeModel(model: ModelSpec | undefined): string {
  if (!model || model.provider === 'scripted') return 'scripted (offline demo)';
  return `${model.provider}:${model.model}`;
}
