/**
 * `agent-sessions dev` as a person uses it: in a pseudo-terminal (tmux), type lines and commands, read the screen
 * (bubbles, context cards, tool calls and results, turn boundaries, the spinner), quit, start again on the same
 * SQLite file and find the same session resumed, then dispose it. The built CLI runs with its own embedded dev
 * server in a temporary data folder (AGENT_SESSIONS_DATA_DIR), offline, on the demo script.
 *
 * Needs tmux. Skips with the reason when tmux is missing, except under CI (where .ci/run installs it), where a
 * missing tmux fails.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getFreePort } from '../../src/devserver';
import { assertBuilt, BIN, cli, cliEnv, ROOT } from './cliSupport';
import { hasTmux, Terminal } from './terminal';

const tmux = hasTmux();
if (!tmux && process.env.CI) throw new Error('tmux is missing: .ci/run installs it for test/cli/dev.test.ts');
if (!tmux) console.warn('test/cli/dev.test.ts skipped: tmux is not installed (apt-get install tmux)');

const socket = `agent-sessions-test-${process.pid}`;
let dataDir: string;
let port: number;

/**
 * The dev command line: offline and unconfigured (a clean environment: no TEMPORAL_ADDRESS, provider keys, hooks or
 * task queue of the machine), on the scripted demo, with its own data folder and port.
 */
function devCommand(opts: { session?: string; demoModel?: string } = {}): string {
  const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  const session = opts.session ? ` --session ${quote(opts.session)}` : '';
  return [
    'env -i PATH="$PATH" HOME="$HOME" TERM="$TERM" LANG=C.UTF-8',
    `AGENT_SESSIONS_DATA_DIR=${quote(dataDir)}`,
    // The scripted demo, whether or not the local model is installed (test/e2e covers the local one).
    `AGENT_SESSIONS_DEMO_MODEL=${quote(opts.demoModel ?? 'scripted')}`,
    `sh -c ${quote(`cd ${quote(ROOT)} && exec ${quote(process.execPath)} ${quote(BIN)} dev --port ${port}${session}`)}`,
  ].join(' ');
}

/** The part of the screen between two markers (the first `from`, then the first `to` after it). */
function between(screen: string, from: string, to: string): string {
  const start = screen.indexOf(from);
  expect(start, `"${from}" on the screen`).toBeGreaterThanOrEqual(0);
  const end = screen.indexOf(to, start);
  expect(end, `"${to}" after "${from}"`).toBeGreaterThan(start);
  return screen.slice(start, end + to.length);
}

const SPINNER = /[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] (model|◆ [^\n]*) · steer › /;
/** The prompt while the answer is being written: the text so far (the demo's first answer streams). */
const STREAMING = /[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] ◆ Hello![^\n]* · steer › /;

describe.skipIf(!tmux)('agent-sessions dev in a terminal', () => {
  beforeAll(async () => {
    assertBuilt();
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'agent-sessions-dev-'));
    port = await getFreePort();
  });

  afterAll(() => {
    Terminal.killServer(socket);
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('chats on the demo session, quits, and resumes the same session from the SQLite file', async () => {
    // ---- first run: a new demo session ----
    const first = Terminal.start(socket, 'first', devCommand());
    await first.waitFor((s) => s.includes('followup › '), 'the chat prompt', 90_000);
    expect(first.screen()).toContain('session demo (new) · model scripted (offline demo)');

    // Turn 1: the demo model calls echo and emit_context; the context enters the next step as a card. While the
    // model call runs (1.5 s in the script) the prompt spins and offers to steer.
    first.type('hello there');
    let sawSpinner = false;
    let sawStreaming = false;
    let screen = await first.waitFor((s) => {
      sawSpinner ||= SPINNER.test(s);
      sawStreaming ||= STREAMING.test(s);
      return s.includes('turn 1 · completed');
    }, 'turn 1 to complete');
    expect(sawSpinner, 'a spinner while the model call runs').toBe(true);
    expect(sawStreaming, 'the answer in the prompt as it is written').toBe(true);
    const turn1 = between(screen, '── turn 1 ─', 'turn 1 · completed');
    expect(turn1).toMatch(/╭─ you ─+╮\n│ hello there +│\n╰─+╯/);
    expect(turn1).toContain("◆ Hello! I'm the offline demo model.");
    expect(turn1).toContain('⚙ echo {"text":"tools work"}');
    expect(turn1).toContain('⚙ emit_context {"contexts"');
    expect(turn1).toContain('↳ tools work');
    expect(turn1).toContain('↳ emitted one context');
    expect(turn1).toContain('· step 1.2');
    expect(turn1).toMatch(/┌─ context · plugin:weather\n│ Weather report: sunny, 21 °C\.\n└─/);
    // The typed line is not echoed raw: the message shows once, as the bubble the session logged.
    expect(screen.split('hello there')).toHaveLength(2);

    // Turn 2: the model runs the slow sleep tool; a plain line typed meanwhile is a steer into the same turn.
    first.type('second line');
    await first.waitFor((s) => s.includes('⚙ sleep'), 'the sleep tool call');
    first.type('hurry up');
    screen = await first.waitFor((s) => s.includes('turn 2 · completed'), 'turn 2 to complete');
    const turn2 = between(screen, '── turn 2 ─', 'turn 2 · completed');
    expect(turn2).toMatch(/╭─ you ─+╮\n│ second line +│/);
    expect(turn2).toContain('· queued steer for the next step: "hurry up"');
    expect(turn2).toContain('↳ slept 4000 ms');
    expect(turn2).toMatch(/· step 2\.2\n\n╭─ you · steer ─+╮\n│ hurry up +│/);
    expect(turn2).toContain(
      '◆ Done. Send another line and I will use a tool that asks for your approval first.',
    );
    expect(screen).not.toContain('── turn 3');

    // An idle inject waits as queued context; the next line's turn shows it as a card before the bubble.
    first.type('/inject plugin:notes remember the milk');
    await first.waitFor(
      (s) => s.includes('· queued context from plugin:notes: "remember the milk"'),
      'the queued context',
    );
    // Turn 3: publish_note needs approval; the prompt says what waits, and /approve lets it run.
    first.type('third');
    screen = await first.waitFor(
      (s) => s.includes('waiting for approval: publish_note'),
      'the approval prompt',
    );
    expect(screen).toContain(
      '⏸ publish_note needs approval (call call_4_0) {"text":"The agent-sessions demo works."}',
    );
    first.type('/approve');
    screen = await first.waitFor((s) => s.includes('turn 3 · completed'), 'turn 3 to complete');
    const turn3 = between(screen, '── turn 3 ─', 'turn 3 · completed');
    expect(turn3).toMatch(/┌─ context · plugin:notes\n│ remember the milk\n└─\n\n╭─ you ─+╮\n│ third +│/);
    expect(turn3).toContain('✓ approved (call call_4_0)');
    expect(turn3).toContain('↳ published to the team board: The agent-sessions demo works.');
    expect(turn3).toContain('◆ Your decision is in the log above');

    first.type('/help');
    await first.waitFor((s) => s.includes('/cancel [--keep-inbox]'), 'the chat help');
    first.type('/frobnicate');
    await first.waitFor(
      (s) => s.includes('! unknown command /frobnicate (try /help)'),
      'the unknown-command line',
    );

    first.type('/quit');
    expect(await first.waitForExit('dev to exit after /quit')).toBe(0);
    expect(first.screen()).toContain(`bye: session demo stays in ${dataDir}; run again to resume it`);

    // ---- second run: the same session from the SQLite file ----
    const second = Terminal.start(socket, 'second', devCommand());
    screen = await second.waitFor(
      (s) => s.includes('followup › ') && s.includes('turn 3 · completed'),
      'the resumed transcript',
      90_000,
    );
    expect(screen).toContain('session demo (resumed: 3 turns so far, idle)');
    expect(screen).toMatch(/╭─ you ─+╮\n│ hello there +│/);
    expect(screen).toMatch(/╭─ you · steer ─+╮\n│ hurry up +│/);
    second.type('again');
    screen = await second.waitFor((s) => s.includes('turn 4 · completed'), 'turn 4 to complete');
    expect(between(screen, '── turn 4 ─', 'turn 4 · completed')).toMatch(/│ again +│[\s\S]*◆ echo: again/);

    // Dispose ends the session (and the chat); the next run starts a new session under the same id.
    second.type('/dispose');
    expect(await second.waitForExit('dev to exit after /dispose')).toBe(0);
    screen = second.screen();
    expect(screen).toContain('── session disposed ─');
    expect(screen).toContain('session demo is disposed; bye');

    const third = Terminal.start(socket, 'third', devCommand());
    screen = await third.waitFor((s) => s.includes('followup › '), 'the chat prompt', 90_000);
    expect(screen).toContain('session demo (new; the previous session demo was disposed)');
    expect(screen).not.toContain('hello there');
    third.type('/quit');
    expect(await third.waitForExit('dev to exit')).toBe(0);
  }, 300_000);

  it('runs on a task queue of its own, which a second terminal finds; a resumed session names its own model', async () => {
    // A session on another model than the script (never called here): on resume the banner must name that model,
    // not the one the demo would pick for a new session now.
    const first = Terminal.start(
      socket,
      'queue-first',
      devCommand({ session: 'queues', demoModel: 'openai:gpt-4o-mini' }),
    );
    let screen = await first.waitFor((s) => s.includes('followup › '), 'the chat prompt', 90_000);
    expect(screen).toContain('session queues (new) · model openai:gpt-4o-mini');
    expect(screen).toContain('· task queue agent-sessions-dev');

    // The session runs on the dev queue, and no worker of dev polls the default one, where a user's own worker
    // (with its own tools) would otherwise share the session's tasks.
    const connection = await Connection.connect({ address: `127.0.0.1:${port}` });
    try {
      const client = new Client({ connection });
      expect((await client.workflow.getHandle('queues').describe()).taskQueue).toBe('agent-sessions-dev');
      const pollers = async (name: string) =>
        (
          await connection.workflowService.describeTaskQueue({
            namespace: 'default',
            taskQueue: { name },
            taskQueueType: 1, // workflow tasks
          })
        ).pollers ?? [];
      expect(await pollers('agent-sessions')).toEqual([]);
      expect((await pollers('agent-sessions-dev')).length).toBeGreaterThan(0);
    } finally {
      await connection.close();
    }

    // A second terminal's commands find the dev through its dev-server.json: a session they start goes to the dev
    // queue, and the dev worker answers it.
    const vars = cliEnv({ AGENT_SESSIONS_DATA_DIR: dataDir });
    const script = JSON.stringify([{ text: 'answered by the dev worker' }]);
    expect((await cli(['start', 'side', '--script', script], vars)).code).toBe(0);
    expect(await cli(['ask', 'side', 'hi'], vars)).toMatchObject({
      code: 0,
      stdout: 'answered by the dev worker\n',
    });
    // A session started on another queue (as an older dev did, on the default one) keeps it when dev resumes it.
    const legacy = JSON.stringify([{ text: 'answered on the old queue' }]);
    const started = await cli(
      ['start', 'legacy', '--script', legacy, '--task-queue', 'agent-sessions'],
      vars,
    );
    expect(started.code).toBe(0);
    first.type('/quit');
    expect(await first.waitForExit('dev to exit after /quit')).toBe(0);

    const second = Terminal.start(socket, 'queue-second', devCommand({ session: 'queues' }));
    screen = await second.waitFor((s) => s.includes('followup › '), 'the resumed chat', 90_000);
    expect(screen).toContain('session queues (resumed: 0 turns so far, idle) · model openai:gpt-4o-mini');
    second.type('/quit');
    expect(await second.waitForExit('dev to exit after /quit')).toBe(0);

    const third = Terminal.start(socket, 'queue-third', devCommand({ session: 'legacy' }));
    screen = await third.waitFor((s) => s.includes('followup › '), 'the legacy chat', 90_000);
    expect(screen).toContain('· task queue agent-sessions\n');
    third.type('hello');
    screen = await third.waitFor((s) => s.includes('turn 1 · completed'), 'turn 1 on the old queue');
    expect(screen).toContain('◆ answered on the old queue');
    third.type('/quit');
    expect(await third.waitForExit('dev to exit after /quit')).toBe(0);
  }, 300_000);
});
