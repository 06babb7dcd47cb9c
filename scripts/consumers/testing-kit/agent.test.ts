// A testing-kit test of a service's own agent (ESM, TypeScript bundler resolution, node:test): the time-skipping
// server that `agent-sessions setup` installed, the scripted model, the log checked, the history replayed.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { z } from 'zod';
import {
  createTestSessionEnv,
  defineTool,
  exportHistory,
  replayHistories,
  type TestSessionEnv,
} from 'agent-sessions/testing';

const weather = defineTool({
  name: 'weather',
  description: 'Current weather in a city.',
  input: z.object({ city: z.string() }),
  execute: ({ city }) => `sunny in ${city}`,
});

let t: TestSessionEnv;
before(async () => {
  t = await createTestSessionEnv({ tools: [weather] });
});
after(() => t.teardown());

test('calls the weather tool, answers, and replays', async () => {
  await t.client.start('trip-1', {
    tools: ['weather'],
    model: {
      provider: 'scripted',
      steps: [{ toolCalls: [{ name: 'weather', args: { city: 'Oslo' } }] }, { text: 'Pack sunglasses.' }],
    },
  });
  await t.client.followup('trip-1', 'What should I pack for Oslo?');
  const events = await t.settle('trip-1'); // waits for the turn; throws if the log breaks an invariant
  const end = events.at(-1);
  assert.deepEqual(end?.type === 'turn/end' && end.data.reason, { kind: 'completed' });
  assert.deepEqual(
    t.recorder.requests('trip-1')[1]?.messages.map((m) => m.role),
    ['user', 'assistant', 'tool'],
  );
  const dir = mkdtempSync(path.join(os.tmpdir(), 'consumer-histories-'));
  await exportHistory(t.env.client, 'trip-1', path.join(dir, 'trip-1.json'));
  assert.equal((await replayHistories(dir)).replayed, 1);
  rmSync(dir, { recursive: true });
});
