/**
 * What the Temporal UI shows of a session (issue: operability, part 3), read the way the UI reads it, on the dev
 * server: the static summary and details a session starts with (`describe`), the current details the workflow keeps
 * (the `__temporal_workflow_metadata` query, which also lists every signal, update and query with its
 * description), and the summary of every activity in the history.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, settle, startSessionTestEnv, waitUntil, type SessionTestEnv } from '../support/sessionEnv';

type Metadata = temporal.api.sdk.v1.IWorkflowMetadata;

let dev: SessionTestEnv;
beforeAll(async () => {
  dev = await startSessionTestEnv('dev');
});
afterAll(async () => {
  await dev?.teardown();
});

const metadata = (id: string) =>
  dev.env.client.workflow.getHandle(id).query<Metadata>('__temporal_workflow_metadata');

describe('the Temporal UI view of a session', () => {
  it('static summary and details, current details through a turn, activity summaries, handler descriptions', async () => {
    const s = dev.sessions();
    const id = newId('ui');
    await s.start(id, {
      labels: ['team-ui'],
      tools: ['echo', 'sleep'],
      model: {
        provider: 'scripted',
        steps: [
          {
            toolCalls: [
              { name: 'echo', args: { text: 'hi' } },
              { name: 'sleep', args: { ms: 4000 } },
            ],
          },
          { text: 'done' },
          { text: 'second turn', delayMs: 60_000 },
        ],
      },
    });
    const handle = dev.env.client.workflow.getHandle(id);
    const described = await handle.describe();
    expect(await described.staticSummary()).toBe(
      'agent session · scripted · tools: echo, sleep · labels: team-ui',
    );
    expect(await described.staticDetails()).toBe(
      '**model** scripted\n**tools** echo, sleep\n**hooks** none\n**labels** team-ui',
    );

    // Idle before any message; running tools while the sleep call runs; idle again after the turn.
    expect(
      (
        await waitUntil(
          () => metadata(id),
          (m) => Boolean(m.currentDetails),
          'details',
        )
      ).currentDetails,
    ).toBe('**idle** · 0 turns · waiting for a message');
    await s.followup(id, 'go');
    const during = await waitUntil(
      () => metadata(id),
      (m) => m.currentDetails?.includes('running tools') ?? false,
      'details while the tools run',
    );
    expect(during.currentDetails).toMatch(
      /^\*\*running\*\* · turn 1 · step 1 · running tools: (echo, )?sleep$/,
    );
    await settle(s, id);
    expect((await metadata(id)).currentDetails).toBe('**idle** · 1 turn · waiting for a message');

    // A second turn whose model call is slow: the details say so, with what is pending.
    await s.followup(id, 'again');
    const waitingModel = await waitUntil(
      () => metadata(id),
      (m) => m.currentDetails?.includes('waiting for the model') ?? false,
      'details while the model runs',
    );
    expect(waitingModel.currentDetails).toMatch(
      /^\*\*running\*\* · turn 2 · step 1 · waiting for the model \(scripted\)/,
    );
    await s.followup(id, 'queued');
    const pending = await waitUntil(
      () => metadata(id),
      (m) => m.currentDetails?.includes('pending') ?? false,
      'pending messages in the details',
    );
    expect(pending.currentDetails).toContain('pending: 1 for the next turn');

    // Every signal, update and query of the wire is described.
    const definition = (await metadata(id)).definition!;
    const described2 = (defs: { name?: string | null; description?: string | null }[] | null | undefined) =>
      Object.fromEntries((defs ?? []).map((d) => [d.name, d.description]));
    const signals = described2(definition.signalDefinitions);
    for (const name of ['followup', 'steer', 'inject', 'cancel', 'dispose'])
      expect(signals[name]).toMatch(/^[A-Z].{20,}/);
    expect(described2(definition.updateDefinitions).deliver).toMatch(/receipt/);
    const queries = described2(definition.queryDefinitions);
    for (const name of ['events', 'state', 'transcript']) expect(queries[name]).toMatch(/^[A-Z].{20,}/);

    // Activity summaries, as the UI's event history shows them.
    await s.dispose(id);
    await handle.result();
    const history = await handle.fetchHistory();
    const summaries = (history.events ?? [])
      .filter((e) => e.activityTaskScheduledEventAttributes)
      .map((e) => defaultPayloadConverter.fromPayload<string>(e.userMetadata!.summary!));
    expect(summaries).toEqual([
      'describe tools echo, sleep',
      'model 1.1 scripted',
      'tool echo #call_0_0',
      'tool sleep #call_0_1',
      'model 1.2 scripted',
      'model 2.1 scripted',
    ]);
  });

  it('the timer of a delivery that waits for its turn is named on the timeline', async () => {
    const s = dev.sessions();
    const id = newId('ui-ask');
    await s.start(id, { model: { provider: 'scripted', steps: [{ text: 'answered' }] } });
    const receipt = await s.ask(id, { id: 'question-1', content: 'a question' });
    expect(receipt.outcome).toMatchObject({ status: 'ended', answer: 'answered' });
    const history = await dev.env.client.workflow.getHandle(id).fetchHistory();
    const timers = (history.events ?? [])
      .filter((e) => e.timerStartedEventAttributes)
      .map((e) => defaultPayloadConverter.fromPayload<string>(e.userMetadata!.summary!));
    expect(timers).toEqual(['wait for the turn of question-1']);
  });
});
