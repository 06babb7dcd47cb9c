/**
 * The peer's workflow: one long-lived conversation through `@temporalio/ai-sdk`, written the way its docs and samples
 * write agents — `generateText` with `temporalProvider.languageModel(...)` (each model call becomes the plugin's
 * `invokeModel` activity) and a tool whose `execute` is an activity — and keeping the conversation the way the
 * Vercel AI SDK (v7) documents it: an array of `ModelMessage`s, each turn's `result.responseMessages` (the assistant
 * and tool messages of all its model steps) appended to it.
 *
 * A turn is an update (`ask`): the caller sends a user message and gets the answer when the turn ends, without
 * polling (ours is measured the same way, through `SessionClient.ask`). Turns run one at a time. Bundled by the
 * worker through AiSdkPlugin, which installs the Web API polyfills the AI SDK needs in the sandbox.
 */
import { generateText, isStepCount, tool } from 'ai';
import { temporalProvider } from '@temporalio/ai-sdk/workflow';
import { condition, defineQuery, defineUpdate, proxyActivities, setHandler } from '@temporalio/workflow';
import { z } from 'zod';

const { blob } = proxyActivities({ startToCloseTimeout: '1 minute' });

export const askUpdate = defineUpdate('ask');
export const turnsQuery = defineQuery('turns');

export async function peerSession() {
  /** The conversation: AI SDK `ModelMessage`s, in workflow state (and so in every model activity's input). */
  const messages = [];
  let turns = 0;
  let busy = false;
  setHandler(turnsQuery, () => turns);
  setHandler(askUpdate, async (content) => {
    await condition(() => !busy);
    busy = true;
    try {
      messages.push({ role: 'user', content });
      const result = await generateText({
        model: temporalProvider.languageModel('bench'),
        messages,
        tools: {
          blob: tool({
            description: 'Returns `size` characters of text.',
            inputSchema: z.object({ size: z.number().int().min(0), seed: z.number().int() }),
            execute: (input) => blob(input),
          }),
        },
        stopWhen: isStepCount(5),
      });
      messages.push(...result.responseMessages);
      turns++;
      return result.text;
    } finally {
      busy = false;
    }
  });
  await condition(() => false);
}
