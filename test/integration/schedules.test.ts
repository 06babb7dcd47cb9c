/**
 * Schedules of followups on the dev server (Temporal Schedules): a firing starts an absent session and delivers the
 * prompt with the firing's workflow id as the message id; another firing is another turn; the same firing run again
 * is a duplicate, not a second turn; a disposed session is not started again; bad options name the field; the CLI
 * creates, lists, shows, fires and deletes them.
 */
import { WorkflowFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidInputError, ScheduleNotFoundError, type SessionClient } from '../../src/client';
import { SCHEDULED_FOLLOWUP_WORKFLOW_TYPE } from '../../src/contract';
import type { SessionEvent, UserMessage } from '../../src/domain';
import { assertBuilt, cli, cliEnv } from '../cli/cliSupport';
import { newId, settle, startSessionTestEnv, waitUntil, type SessionTestEnv } from '../support/sessionEnv';

let t: SessionTestEnv;
let s: SessionClient;
beforeAll(async () => {
  t = await startSessionTestEnv('dev');
  s = t.sessions();
});
afterAll(async () => {
  await t?.teardown();
});

const userMessages = (events: readonly SessionEvent[]): UserMessage[] =>
  events.flatMap((e) => (e.type === 'user/message' ? [e.data.message] : []));

/** A firing runs on its own: wait for it to have started the session. */
const started = (id: string) =>
  waitUntil(
    () =>
      s.state(id).then(
        () => true,
        () => false,
      ),
    (exists) => exists,
    `session ${id} to be started by its schedule`,
  );

describe('schedules of followups', () => {
  it('each firing is one followup with its own id; an absent session is started; the same firing again is a duplicate', async () => {
    const scheduleId = newId('morning');
    const sessionId = newId('scheduled');
    const created = await s.schedules.create(scheduleId, {
      sessionId,
      content: 'Summarise the overnight alerts.',
      everyMs: 3_600_000,
      config: {
        labels: ['scheduled'],
        model: { provider: 'scripted', steps: [{ text: 'No alerts overnight.' }, { text: 'Still none.' }] },
      },
    });
    expect(created).toMatchObject({ scheduleId, sessionId, spec: 'every 3600000 ms', paused: false });
    expect(created.nextRuns.length).toBeGreaterThan(0);

    await s.schedules.trigger(scheduleId);
    await started(sessionId);
    const first = await settle(s, sessionId);
    const [m1] = userMessages(first);
    expect(m1).toMatchObject({
      content: [{ type: 'text', text: 'Summarise the overnight alerts.' }],
      source: { kind: 'schedule', name: scheduleId },
    });
    expect(m1!.id.startsWith(`schedule:${scheduleId}-`)).toBe(true);
    // The session was started with the schedule's config: its labels are visible to operators.
    expect((await s.row(sessionId)).labels).toEqual(['scheduled']);

    // Triggers within one second may share a scheduled time (and so a message id): fire again a second later.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await s.schedules.trigger(scheduleId);
    const second = await settle(s, sessionId, 2);
    const ids = userMessages(second).map((m) => m.id);
    expect(ids).toHaveLength(2);
    expect(new Set(ids).size).toBe(2);
    expect(second.filter((e) => e.type === 'assistant/message')).toHaveLength(2);

    const described = await waitUntil(
      () => s.schedules.describe(scheduleId),
      (d) => d.recent.length === 2,
      'the two firings in the schedule',
    );
    expect(described.content).toBe('Summarise the overnight alerts.');
    expect(described.recent.map((r) => r.workflowId).sort()).toEqual([...ids].sort());

    // The first firing run again (as a retry of its delivery would): the session reports a duplicate.
    const again = await t.env.client.workflow.execute(SCHEDULED_FOLLOWUP_WORKFLOW_TYPE, {
      workflowId: ids[0]!,
      taskQueue: t.taskQueue,
      args: [{ scheduleId, sessionId, content: 'Summarise the overnight alerts.' }],
    });
    expect(again).toMatchObject({ messageId: ids[0], lane: 'followup', duplicate: true });
    expect(userMessages(await settle(s, sessionId, 2))).toHaveLength(2);

    const listed = await waitUntil(
      () => s.schedules.list(),
      (rows) => rows.some((r) => r.scheduleId === scheduleId),
      'the schedule in the list',
    );
    expect(listed.find((r) => r.scheduleId === scheduleId)).toMatchObject({
      sessionId,
      spec: 'every 3600000 ms',
    });

    await s.schedules.delete(scheduleId);
    await expect(s.schedules.describe(scheduleId)).rejects.toBeInstanceOf(ScheduleNotFoundError);
    // The session and what the schedule delivered stay.
    expect((await s.state(sessionId)).status).toBe('idle');
  });

  it('does not start a disposed session again: the firing fails, naming it', async () => {
    const sessionId = newId('gone');
    await s.start(sessionId, { model: { provider: 'scripted', steps: [] } });
    await s.dispose(sessionId);
    await waitUntil(
      () => t.env.client.workflow.getHandle(sessionId).describe(),
      (d) => d.status.name === 'COMPLETED',
      'the session to complete',
    );
    const failure = await t.env.client.workflow
      .execute(SCHEDULED_FOLLOWUP_WORKFLOW_TYPE, {
        workflowId: `schedule:${newId('late')}-2026-12-04T09:00:00Z`,
        taskQueue: t.taskQueue,
        args: [{ scheduleId: 'late', sessionId, content: 'anyone there?' }],
      })
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    // The workflow failed because its activity did: the activity's failure says why.
    const cause = (failure as WorkflowFailedError).cause as Error & { cause?: Error };
    expect(String(cause.cause?.message)).toContain(`session ${sessionId} has ended (disposed)`);
    await expect(t.env.client.workflow.getHandle(sessionId).describe()).resolves.toMatchObject({
      status: { name: 'COMPLETED' },
    });
  });

  it('refuses bad options naming the field', async () => {
    const make = (id: string, o: Record<string, unknown>) =>
      s.schedules.create(id, { sessionId: 's', content: 'x', ...o } as never).then(
        () => undefined,
        (err: unknown) => err,
      );
    const cases: [string, Record<string, unknown>, string][] = [
      ['ok-id', {}, 'schedule.everyMs'],
      ['ok-id', { everyMs: 60_000, cron: '@daily' }, 'schedule.everyMs'],
      ['ok-id', { everyMs: 10 }, 'schedule.everyMs'],
      ['ok-id', { cron: '@daily', content: '' }, 'schedule.content'],
      ['ok-id', { cron: '@daily', config: { tools: ['not a name'] } }, 'schedule.config.tools[0]'],
      ['has space', { cron: '@daily' }, 'scheduleId'],
      ['x'.repeat(97), { cron: '@daily' }, 'scheduleId'],
    ];
    for (const [id, o, field] of cases) {
      const err = await make(id, o);
      expect(err, JSON.stringify(o)).toBeInstanceOf(InvalidInputError);
      expect((err as InvalidInputError).field).toBe(field);
    }
  });

  it('the CLI creates, lists, shows, fires and deletes a schedule', async () => {
    assertBuilt();
    const env = cliEnv({ TEMPORAL_ADDRESS: t.env.address, TASK_QUEUE: t.taskQueue });
    const scheduleId = newId('cli');
    const sessionId = newId('cli-session');
    const created = await cli(
      [
        'schedule',
        'create',
        scheduleId,
        sessionId,
        'Daily',
        'digest',
        '--cron',
        '0 9 * * *',
        '--script',
        '[{"text":"digest sent"}]',
      ],
      env,
    );
    expect(created.stderr).toBe('');
    expect(created.stdout).toMatch(
      new RegExp(`^created schedule ${scheduleId} → session ${sessionId}: cron 0 9 \\* \\* \\* · next `),
    );
    expect((await cli(['schedule', 'trigger', scheduleId], env)).stdout).toBe(
      `schedule ${scheduleId} fired\n`,
    );
    await started(sessionId);
    const events = await settle(s, sessionId);
    expect(userMessages(events).map((m) => m.content[0]?.text)).toEqual(['Daily digest']);
    const shown = await waitUntil(
      () => cli(['schedule', 'show', scheduleId], env),
      (r) => r.stdout.includes('fired '),
      'the firing in `schedule show`',
    );
    expect(shown.stdout).toContain('  prompt: Daily digest');
    const listed = await waitUntil(
      () => cli(['schedule', 'list', '--json'], env),
      (r) => r.stdout.includes(scheduleId),
      'the schedule in `schedule list`',
    );
    const row = listed.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { scheduleId: string; sessionId: string })
      .find((r) => r.scheduleId === scheduleId);
    expect(row).toMatchObject({ sessionId, spec: 'cron 0 9 * * *' });
    expect((await cli(['schedule', 'delete', scheduleId], env)).code).toBe(0);
    const gone = await cli(['schedule', 'show', scheduleId], env);
    expect(gone).toMatchObject({ code: 1, stderr: `agent-sessions schedule: no schedule ${scheduleId}\n` });
    const bad = await cli(['schedule', 'create', 'x', 'y', 'hi', '--every', 'soon'], env);
    expect(bad).toMatchObject({ code: 2, stdout: '' });
    expect(bad.stderr).toContain('invalid --every "soon"');
  });
});
