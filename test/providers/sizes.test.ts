/**
 * Sizes and secrets at the model and tool edges (issue 33; docs/protocol.md, "Sizes"), over real HTTP on a dev
 * server (the time-skipping server does not enforce Temporal's 2 MiB payload limit, which is what hung sessions): an answer over the worker's answer cap (a tool call with 10 MiB of arguments, a stream that
 * never ends) ends its turn `MODEL_ANSWER_TOO_LARGE` with the stream cut, instead of a result Temporal refuses
 * again and again; a tool result over the result cap becomes a `TOOL_RESULT_TOO_LARGE` error the model reads; and a
 * provider that echoes the key it received in a 401 puts no key into the turn's error or the session's history.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineHook } from '../../src/activities/hooks';
import { defineTool } from '../../src/activities/tools';
import { testingTools } from '../../src/activities/testingTools';
import { loadConfig } from '../../src/worker/config';
import { modelsFromConfig, resultCapsFromConfig } from '../../src/worker';
import { newId, settle } from '../support/sessionEnv';
import { FakeModelServer } from './fakeModelServer';
import { ofType, startWorkerEnv, turnEnds, until, type WorkerEnv } from './support';

const KEY = 'sk-compat-7Hq2XvL9pR4mN8wK3zT6yB1c';
const MiB = 1024 * 1024;

/** A tool that answers `bytes` characters of text: a result as large as asked (`pad` only makes the call large). */
const bigTool = defineTool({
  name: 'big',
  description: 'returns as many characters as asked',
  input: z.object({ bytes: z.number().int().min(1), pad: z.string().optional() }),
  execute: ({ bytes }) => 'x'.repeat(bytes),
});

/** A post-tool hook that lets every result through: its input holds the call's arguments and its result. */
const passHook = defineHook({ name: 'pass', kind: 'post-tool', run: () => ({}) });

let oa: FakeModelServer;
let t: WorkerEnv;

beforeAll(async () => {
  oa = await FakeModelServer.start('openai');
  const config = loadConfig({
    OPENAI_COMPATIBLE_BASE_URL: oa.url,
    OPENAI_COMPATIBLE_API_KEY: KEY,
  });
  t = await startWorkerEnv(
    {
      ...modelsFromConfig(config),
      ...resultCapsFromConfig(config),
      tools: [...testingTools, bigTool],
      hooks: [passHook],
    },
    'dev',
  );
});
afterAll(async () => {
  await t?.teardown();
  await oa?.close();
});
beforeEach(() => oa.script());

const compat = { provider: 'openai-compatible' as const, model: 'fake-model' };

describe('an answer over the answer cap (1 MiB by default)', () => {
  it('a tool call with 10 MiB of arguments ends the turn MODEL_ANSWER_TOO_LARGE, not retried; the next message is served', async () => {
    const args = JSON.stringify({ text: 'a'.repeat(10 * MiB) });
    const huge = { toolCalls: [{ id: 'call_1', name: 'echo', arguments: args }] };
    // Every attempt would get the same answer, as from a provider that always sends it.
    oa.script(huge, huge, huge, huge, huge);
    const id = newId();
    await t.client.start(id, { model: compat, tools: ['echo'] });
    await t.client.followup(id, 'write a lot');
    const events = await settle(t.client, id);
    const [reason] = turnEnds(events);
    expect(reason).toMatchObject({ kind: 'error', error: { code: 'MODEL_ANSWER_TOO_LARGE' } });
    expect(reason!.kind === 'error' && reason!.error.message).toMatch(
      /^openai-compatible's answer passed the limit of 1\.0 MB \(1048576 bytes of text and tool-call arguments, worker option maxAnswerBytes\): the stream was cut at \d+ bytes$/,
    );
    expect(ofType(events, 'tool/call')).toHaveLength(0);
    expect(oa.requests).toHaveLength(1);

    oa.script({ chunks: ['fine'] });
    await t.client.followup(id, 'something short');
    expect(turnEnds(await settle(t.client, id, 2))[1]).toEqual({ kind: 'completed' });
  });

  it('a stream that never ends is cut at the cap: the provider sees the client go away, the turn ends with the code', async () => {
    oa.script({ chunks: ['Here it comes: '], endless: 'y'.repeat(8192) });
    const id = newId();
    await t.client.start(id, { model: compat });
    await t.client.followup(id, 'talk forever');
    const [reason] = turnEnds(await settle(t.client, id));
    expect(reason).toMatchObject({ kind: 'error', error: { code: 'MODEL_ANSWER_TOO_LARGE' } });
    await until(() => oa.clientGone, 'the endless stream to lose its client');
    expect(oa.requests).toHaveLength(1);
    // Cut near the cap: what was sent beyond it is at most what the transport had in flight.
    expect(oa.bytesSent).toBeLessThan(16 * MiB);
  });
});

describe('a tool result over the result cap (1.5 MiB by default)', () => {
  it('becomes a TOOL_RESULT_TOO_LARGE error the model reads, and the turn completes', async () => {
    const id = newId();
    await t.client.start(id, {
      model: {
        provider: 'scripted',
        steps: [{ toolCalls: [{ name: 'big', args: { bytes: 3 * MiB } }] }, { text: 'that was too much' }],
      },
      tools: ['big'],
    });
    await t.client.followup(id, 'fetch it all');
    const events = await settle(t.client, id);
    const [result] = ofType(events, 'tool/result');
    expect(result!.data.error).toEqual({
      code: 'TOOL_RESULT_TOO_LARGE',
      message: expect.stringMatching(
        /^the result of tool "big" is 3\.0 MB \(\d+ bytes\), over the limit of 1\.5 MB \(1572864 bytes, worker option maxToolResultBytes\): it was not kept/,
      ),
    });
    expect(turnEnds(events)).toEqual([{ kind: 'completed' }]);
    // The model read the error, not the result.
    const seen = t.recorder.requests(id)[1]!.messages.at(-1);
    expect(JSON.stringify(seen)).toContain('TOOL_RESULT_TOO_LARGE');
    expect(JSON.stringify(seen).length).toBeLessThan(4096);
  });

  it('a result within the cap is kept whole', async () => {
    const id = newId();
    await t.client.start(id, {
      model: {
        provider: 'scripted',
        steps: [{ toolCalls: [{ name: 'big', args: { bytes: MiB } }] }, { text: 'got it' }],
      },
      tools: ['big'],
    });
    await t.client.followup(id, 'fetch a megabyte');
    const [result] = ofType(await settle(t.client, id), 'tool/result');
    expect(result!.data.error).toBeUndefined();
    expect(result!.data.content).toEqual([{ type: 'text', text: 'x'.repeat(MiB) }]);
  });
});

describe('a payload the workflow would create over the limit', () => {
  it('a post-tool hook input (arguments and result, each within its cap) over 2 MiB is not sent: PAYLOAD_TOO_LARGE', async () => {
    const id = newId();
    const args = { bytes: 1_400_000, pad: 'p'.repeat(700_000) };
    await t.client.start(id, {
      model: { provider: 'scripted', steps: [{ toolCalls: [{ name: 'big', args }] }, { text: 'withheld' }] },
      tools: ['big'],
      hooks: ['pass'],
    });
    await t.client.followup(id, 'fetch and check');
    const events = await settle(t.client, id);
    const [result] = ofType(events, 'tool/result');
    expect(result!.data.error).toEqual({
      code: 'POST_TOOL_HOOK_FAILED',
      message: expect.stringMatching(
        /^the input of activity postToolHook is 2\.0 MB \(\d+ bytes\), over the limit of 1966080 bytes that Temporal's 2 MiB payload limit leaves: it was not sent$/,
      ),
    });
    expect(turnEnds(events)).toEqual([{ kind: 'completed' }]);
  });
});

describe('a provider that echoes the key it received', () => {
  it('a 401 body holding the key: the turn says MODEL_AUTH_FAILED with the key masked, and no history holds it', async () => {
    oa.script({ status: 401, echoAuth: true });
    const id = newId();
    await t.client.start(id, { model: compat });
    await t.client.followup(id, 'go');
    const [reason] = turnEnds(await settle(t.client, id));
    expect(reason).toEqual({
      kind: 'error',
      error: {
        code: 'MODEL_AUTH_FAILED',
        message:
          'OPENAI_COMPATIBLE_API_KEY was rejected (401): check the key (openai-compatible said: Incorrect API key provided: Bearer [redacted]. You can find your API key in your account settings)',
      },
    });
    // The server did receive the key (so it could echo it), and nothing of it reached the history.
    expect(oa.requests[0]!.headers.authorization).toBe(`Bearer ${KEY}`);
    const history = allText(await t.env.client.workflow.getHandle(id).fetchHistory());
    expect(history).toContain('Bearer [redacted]');
    expect(history).not.toContain(KEY.slice(3));
  });
});

/** Every string in a history, payload bytes decoded as UTF-8: what anyone reading it could see. */
function allText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value instanceof Uint8Array) return Buffer.from(value).toString('utf8');
  if (Array.isArray(value)) return value.map(allText).join('\n');
  if (value && typeof value === 'object') return Object.values(value).map(allText).join('\n');
  return '';
}
