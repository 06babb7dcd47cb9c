/**
 * What a user's own agent test looks like with the testing kit: a tool of their own, a scripted model, the
 * time-skipping server, the log checked by the invariant checker, and the history replayed against the same code.
 * Uses only `src/testing` (in a user’s project: `agent-sessions/testing`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createTestSessionEnv,
  defineTool,
  exportHistory,
  replayHistories,
  type TestSessionEnv,
} from '../../src/testing';

const weather = defineTool({
  name: 'weather',
  description: 'Current weather in a city.',
  input: z.object({ city: z.string() }),
  execute: ({ city }) => `sunny in ${city}`,
});

let t: TestSessionEnv;
beforeAll(async () => {
  t = await createTestSessionEnv({ tools: [weather] });
});
afterAll(() => t?.teardown());

it('my agent calls the weather tool and answers with its result', async () => {
  await t.client.start('trip-1', {
    tools: ['weather'],
    model: {
      provider: 'scripted',
      steps: [{ toolCalls: [{ name: 'weather', args: { city: 'Oslo' } }] }, { text: 'Pack sunglasses.' }],
    },
  });
  await t.client.followup('trip-1', 'What should I pack for Oslo?');
  const events = await t.settle('trip-1'); // waits for the turn; throws if the log breaks an invariant

  expect(events.filter((e) => e.type === 'tool/result').map((e) => e.data)).toMatchObject([
    { content: [{ text: 'sunny in Oslo' }] },
  ]);
  expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: { kind: 'completed' } } });
  const [, second] = t.recorder.requests('trip-1'); // what the model saw in its second request
  expect(second!.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);

  // Replay: the recorded history must replay with the current workflow code (keep such files as a corpus).
  const dir = mkdtempSync(path.join(os.tmpdir(), 'my-agent-histories-'));
  await exportHistory(t.env.client, 'trip-1', path.join(dir, 'trip-1.json'));
  expect(await replayHistories(dir)).toMatchObject({ replayed: 1 });
  rmSync(dir, { recursive: true });
});
