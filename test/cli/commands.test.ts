/**
 * Every `agent-sessions` subcommand, run as the built CLI in a child process against a dev server with an
 * in-process worker (testing toolset): output, exit codes (0 ok, 1 failure, 2 bad usage with a one-line error), the
 * disposed message, watch following live, history export and replay, and the `worker` command serving a session.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { SessionClient } from '../../src/client';
import { COMMANDS } from '../../src/cli/main';
import { createDevServerEnv, getFreePort } from '../../src/devserver';
import type { SessionEvent } from '../../src/domain/events';
import { assertLogValid } from '../../src/domain/invariants';
import { testingTools } from '../../src/activities/testingTools';
import { createSessionWorker } from '../../src/worker';
import { newId, settle, summarize, waitUntil } from '../support/sessionEnv';
import { assertBuilt, cli, cliEnv, spawnCli, until } from './cliSupport';

// Every test here spawns CLI processes (a Node start each, a dozen per test): on a loaded machine that takes
// minutes, not the suite's default minute.
vi.setConfig({ testTimeout: 180_000 });

let env: TestWorkflowEnvironment;
let worker: Worker;
let running: Promise<void>;
let sessions: SessionClient;
let tmp: string;
let cliVars: NodeJS.ProcessEnv;
const taskQueue = newId('cli-q');

beforeAll(async () => {
  assertBuilt();
  tmp = mkdtempSync(path.join(os.tmpdir(), 'agent-sessions-cli-'));
  env = await createDevServerEnv();
  worker = await createSessionWorker({
    connection: env.nativeConnection,
    taskQueue,
    tools: testingTools,
    workflowBundle: { codePath: inject('workflowBundlePath') },
  });
  running = worker.run();
  sessions = new SessionClient({ client: env.client, taskQueue });
  cliVars = cliEnv({
    TEMPORAL_ADDRESS: env.address,
    TASK_QUEUE: taskQueue,
    AGENT_SESSIONS_DATA_DIR: path.join(tmp, 'data'),
  });
});

afterAll(async () => {
  if (worker) {
    worker.shutdown();
    await running;
  }
  await env?.teardown();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

const run = (...args: string[]) => cli(args, cliVars);

/** The CLI's one-line error for bad usage: exit 2, one stderr line, nothing on stdout. */
async function expectUsageError(args: string[], pattern: RegExp) {
  const r = await cli(args, cliVars);
  expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(2);
  expect(r.stdout).toBe('');
  expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
  expect(r.stderr).toMatch(pattern);
}

/** Runs the tasks at most four at a time (CLI children compete for two cores with the servers). */
async function limited<T>(tasks: (() => Promise<T>)[], width = 4): Promise<T[]> {
  const results: T[] = [];
  for (let i = 0; i < tasks.length; i += width)
    results.push(...(await Promise.all(tasks.slice(i, i + width).map((t) => t()))));
  return results;
}

const jsonLines = (text: string) =>
  text
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as SessionEvent);

describe('help', () => {
  it('lists every command, and every command answers --help with its usage', async () => {
    const top = await run('--help');
    expect(top.code).toBe(0);
    for (const name of Object.keys(COMMANDS)) expect(top.stdout).toContain(`  ${name} `);
    const names = Object.keys(COMMANDS);
    const helps = await limited(names.map((name) => () => run(name, '--help')));
    names.forEach((name, i) => {
      expect(helps[i]!.code, name).toBe(0);
      expect(helps[i]!.stdout).toMatch(new RegExp(`^usage: agent-sessions ${name}`));
    });
    expect((await run('help', 'state')).stdout).toMatch(/^usage: agent-sessions state <id>/);
  });
});

describe('bad arguments', () => {
  it('get a one-line error naming the argument and exit code 2', async () => {
    await limited([
      () => expectUsageError(['frobnicate'], /unknown command "frobnicate"/),
      () => expectUsageError(['start'], /missing <id>/),
      () => expectUsageError(['start', 's', '--bogus'], /unknown option --bogus/),
      () => expectUsageError(['start', 's', '--model', 'gpt'], /invalid --model "gpt"/),
      () => expectUsageError(['start', 's', '--tools', 'echo,,sleep'], /invalid --tools/),
      () => expectUsageError(['start', 's', '--script', '[{"nope":1}]'], /invalid --script/),
      () => expectUsageError(['start', 's', 'extra'], /unexpected argument "extra"/),
      () => expectUsageError(['followup', 's'], /missing <text>/),
      () => expectUsageError(['inject', 's', 'hi', '--source', 'plugin'], /plugin needs a name/),
      () =>
        expectUsageError(
          ['steer', 's', 'hi', '--id', 'has space'],
          /invalid message: message\.id: printable ASCII/,
        ),
      () => expectUsageError(['followup', 's', 'hi', '--source'], /option --source needs a value/),
      () => expectUsageError(['cancel'], /missing <id>/),
      () => expectUsageError(['dispose', 's', 't'], /unexpected argument "t"/),
      () =>
        expectUsageError(
          ['watch', 's', '--after', '-5'],
          /option --after needs a value \(write --after=VALUE/,
        ),
      () => expectUsageError(['watch', 's', '--after=-5'], /invalid --after "-5"/),
      () => expectUsageError(['state', 's', '--json=yes'], /option --json takes no value/),
      () => expectUsageError(['inject', 's', 'hi', '--source', 'a b'], /invalid --source "a b"/),
      () => expectUsageError(['events', 's', '--after', 'abc'], /invalid --after "abc"/),
      () => expectUsageError(['history', 'import', 's'], /unknown history action "import"/),
      () => expectUsageError(['replay'], /missing <files…>/),
      () => expectUsageError(['replay', path.join(tmp, 'missing.json')], /no such file/),
      () => expectUsageError(['dev', 'extra'], /unexpected argument "extra"/),
      () => expectUsageError(['ask', 's', 'hi', '--lane', 'inject'], /invalid --lane "inject"/),
      () => expectUsageError(['list', '--status', 'sleepy'], /invalid --status "sleepy"/),
      () => expectUsageError(['list', '--idle-for', '5 minutes'], /invalid --idle-for "5 minutes"/),
      () => expectUsageError(['ask', 's', 'hi', '--timeout', '0'], /invalid --timeout "0"/),
      () => expectUsageError(['ui', '--token', 'short'], /--token: at least 16 characters/),
      () => expectUsageError(['budget', 's', 'extend'], /extend needs a new limit/),
      () => expectUsageError(['budget', 's', 'raise'], /unknown budget decision "raise"/),
      () => expectUsageError(['start', 's', '--budget', 'dollars=5'], /invalid --budget "dollars=5"/),
      () => expectUsageError(['start', 's', '--context', 'tokens=5'], /invalid --context "tokens=5"/),
      () =>
        expectUsageError(['start', 's', '--context', 'compactAt=0.5'], /--context: maxTokens=N is required/),
      () =>
        expectUsageError(
          ['ui', '--token', 'same-token-0123456789', '--read-token', 'same-token-0123456789'],
          /--read-token: must differ from the access token/,
        ),
    ]);
  });

  it('a server that does not answer gives a one-line error and exit code 1', async () => {
    const port = await getFreePort();
    const r = await cli(['state', 'x'], { ...cliVars, TEMPORAL_ADDRESS: `127.0.0.1:${port}` });
    expect(r.code).toBe(1);
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(
      new RegExp(`cannot reach Temporal at 127\\.0\\.0\\.1:${port} \\(connection refused\\)`),
    );
  });

  it('a server that accepts but never speaks gRPC (a TLS one, say) gives a one-line error that names the TLS settings', async () => {
    const silent = net.createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = silent.address() as AddressInfo;
      const r = await cli(['state', 'x'], { ...cliVars, TEMPORAL_ADDRESS: `127.0.0.1:${port}` });
      expect(r.code).toBe(1);
      expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(
        new RegExp(
          `cannot connect to Temporal at 127\\.0\\.0\\.1:${port}: it accepts connections but did not complete a Temporal \\(gRPC\\) handshake .*no TLS is configured: if the server expects TLS, set TEMPORAL_TLS_CA_PATH`,
        ),
      );
    } finally {
      silent.close();
    }
  });
});

describe('a session driven by the CLI', () => {
  it('start, inject, followup, steer --ack, events, state, transcript, watch, dispose, history export and replay', async () => {
    const id = newId('cli');
    const script = JSON.stringify([
      {
        text: 'calling tools',
        toolCalls: [
          { name: 'echo', args: { text: 'ping' } },
          {
            name: 'emit_context',
            args: { contexts: [{ content: 'ctx from tool', source: { kind: 'plugin', plugin: 'probe' } }] },
          },
        ],
      },
      { text: 'tools done' },
    ]);
    const started = await run('start', id, '--tools', 'echo,emit_context', '--script', script);
    expect(started).toMatchObject({ code: 0, stderr: '' });
    expect(started.stdout).toBe(`started session ${id} (model scripted; tools echo,emit_context)\n`);
    const again = await run('start', id);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(`agent-sessions start: session ${id} already exists\n`);

    // A live watch (rendered) and a live JSON watch follow everything from here on.
    const watchText = spawnCli(['watch', id], cliVars);
    const watchJson = spawnCli(['watch', id, '--json'], cliVars);

    const injected = await run(
      'inject',
      id,
      'context',
      'from',
      'the',
      'cli',
      '--source',
      'plugin:tester',
      '--id',
      'ctx-1',
    );
    expect(injected).toMatchObject({ code: 0, stdout: 'ctx-1\n' });
    const followed = await run('followup', id, 'hello');
    expect(followed.code).toBe(0);
    const followupId = followed.stdout.trim();
    expect(followupId).toMatch(/^[0-9a-f-]{36}$/);
    const turn1 = await settle(sessions, id, 1);
    expect(summarize(turn1)).toEqual([
      'insert next-step context from the cli',
      'insert next-turn hello',
      'turn/start 1',
      'claim next-step 1',
      'claim next-turn 1',
      'step/start 1.1',
      'user/message context from the cli',
      'user/message hello',
      'assistant/message calling tools +2 calls',
      'tool/call echo call_0_0',
      'tool/call emit_context call_0_1',
      'tool/result call_0_0',
      'tool/result call_0_1',
      'insert next-step ctx from tool',
      'step/end 1.1',
      'claim next-step 1',
      'step/start 1.2',
      'user/message ctx from tool',
      'assistant/message tools done',
      'step/end 1.2',
      'turn/end 1 completed',
    ]);

    const ack = await run('steer', id, 'steer', 'me', '--id', 'steer-1', '--ack');
    expect(ack.code).toBe(0);
    const receipt = JSON.parse(ack.stdout) as { seq: number };
    expect(receipt).toEqual({
      messageId: 'steer-1',
      lane: 'steer',
      duplicate: false,
      seq: expect.any(Number),
    });
    const dup = await run('steer', id, 'steer', 'me', '--id', 'steer-1', '--ack');
    // A duplicate reports the seq of the first insertion.
    expect(JSON.parse(dup.stdout)).toEqual({ ...receipt, duplicate: true });
    const fromStdin = await cli(['followup', id, '-'], cliVars, { input: 'typed on stdin\n' });
    expect(fromStdin.code).toBe(0);
    const all = await settle(sessions, id, 3);

    const events = await run('events', id, '--json');
    expect(events.code).toBe(0);
    const logged = jsonLines(events.stdout);
    expect(logged).toEqual(all);
    assertLogValid(logged);
    const after = await run('events', id, '--json', '--after', String(turn1.at(-1)!.seq));
    expect(jsonLines(after.stdout)).toEqual(all.slice(turn1.length));
    const readable = await run('events', id);
    expect(readable.stdout.trim().split('\n')).toHaveLength(all.length);
    expect(readable.stdout).toMatch(
      /^ {3}0 agent\/inbox\/spliced next-step insert ctx-1 \(plugin:tester\) "context from the cli"$/m,
    );
    expect(readable.stdout).toMatch(/turn\/end 3 completed$/m);

    const state = await run('state', id);
    // The session's visibility row (two lines: header and row), then the state.
    expect(state.stdout.split('\n').slice(2).join('\n')).toBe(
      'status: idle\nturn: 3  step: 1\npending next-turn: (none)\npending next-step: (none)\nrefused signals: 0\ntokens in/out: 0/0\n',
    );
    expect(JSON.parse((await run('state', id, '--json')).stdout)).toEqual(await sessions.state(id));

    const transcript = await run('transcript', id);
    expect(transcript.stdout.trim().split('\n')).toEqual([
      '[user plugin:tester] context from the cli',
      '[user user] hello',
      '[assistant] calling tools (calls echo, emit_context)',
      '[tool echo call_0_0] ping',
      '[tool emit_context call_0_1] emitted 1 context',
      '[user plugin:probe] ctx from tool',
      '[assistant] tools done',
      '[user user] steer me',
      '[assistant] echo: steer me',
      '[user user] typed on stdin',
      '[assistant] echo: typed on stdin',
    ]);
    expect(JSON.parse((await run('transcript', id, '--json')).stdout)).toEqual(await sessions.transcript(id));

    // The live JSON watch has seen exactly the log so far (it started before the first event).
    await until(
      () => watchJson.stdout(),
      (out) => jsonLines(out).length === all.length,
      'watch --json to catch up',
    );
    expect(jsonLines(watchJson.stdout())).toEqual(all);

    const disposed = await run('dispose', id);
    expect(disposed).toMatchObject({ code: 0, stdout: `dispose sent to session ${id}\n` });
    // Both watches end by themselves once the session is disposed.
    expect(await watchJson.exited).toBe(0);
    expect(await watchText.exited).toBe(0);
    expect(jsonLines(watchJson.stdout()).at(-1)?.type).toBe('session/disposed');
    const screen = watchText.stdout();
    expect(screen).toContain('── turn 1 ─');
    expect(screen).toContain('┌─ context · plugin:tester\n│ context from the cli\n└─');
    expect(screen).toMatch(/╭─ you ─+╮\n│ hello +│\n╰─+╯/);
    expect(screen).toContain('⚙ echo {"text":"ping"}');
    expect(screen).toContain('↳ ping');
    expect(screen).toContain('┌─ context · plugin:probe\n│ ctx from tool');
    expect(screen).toContain('◆ tools done');
    expect(screen).toMatch(/╭─ you · steer ─+╮\n│ steer me +│/);
    expect(screen).toContain('── turn 3 · completed ─');
    expect(screen).toContain('── session disposed ─');

    // A disposed session accepts nothing, and says so; its queries keep working.
    for (const args of [
      ['followup', id, 'late'],
      ['steer', id, 'late'],
      ['inject', id, 'late'],
      ['cancel', id],
      ['dispose', id],
    ]) {
      const r = await run(...args);
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.stderr).toMatch(new RegExp(`^agent-sessions ${args[0]}: session ${id} is disposed`));
      expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    }
    expect((await run('state', id)).stdout).toMatch(/^status: disposed$/m);

    // History: export to a file and to stdout; replay it with the current workflow code.
    const file = path.join(tmp, `${id}.json`);
    const exported = await run('history', 'export', id, file);
    expect(exported).toMatchObject({ code: 0, stdout: `wrote the history of session ${id} to ${file}\n` });
    const history = JSON.parse(readFileSync(file, 'utf8')) as { events: unknown[] };
    expect(history.events.length).toBeGreaterThan(10);
    const toStdout = await run('history', 'export', id);
    expect((JSON.parse(toStdout.stdout) as { events: unknown[] }).events).toHaveLength(history.events.length);
    // Replay with the current code: the exported history replays; a history the code cannot reproduce fails with
    // the determinism error, one line per file.
    const tampered = JSON.parse(readFileSync(file, 'utf8')) as {
      events: { activityTaskScheduledEventAttributes?: { activityType: { name: string } } }[];
    };
    tampered.events.find(
      (e) => e.activityTaskScheduledEventAttributes,
    )!.activityTaskScheduledEventAttributes!.activityType.name = 'notOurs';
    const badFile = path.join(tmp, 'tampered.json');
    writeFileSync(badFile, JSON.stringify(tampered));
    const bad = await cli(['replay', file, badFile], cliVars, { timeoutMs: 120_000 });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toBe('');
    expect(bad.stdout.trim().split('\n')).toEqual([
      `ok   ${file}`,
      expect.stringMatching(
        new RegExp(
          `^FAIL ${badFile}: DeterminismViolationError: \\[TMPRL1100\\] Nondeterminism error: .*'notOurs'`,
        ),
      ),
      '1 replayed, 1 failed',
    ]);

    // A file that is not a history is refused before any replay, in one line.
    const bogus = path.join(tmp, 'bogus.json');
    writeFileSync(bogus, '{"events": []}');
    const notHistory = await cli(['replay', bogus], cliVars);
    expect(notHistory.code).toBe(1);
    expect(notHistory.stderr).toBe(
      `agent-sessions replay: ${bogus}: not a replayable history: the first event must be WorkflowExecutionStarted with its run id\n`,
    );
  });

  it('cancel aborts the running turn and discards pending messages; --keep-inbox keeps them', async () => {
    const id = newId('cli-cancel');
    const long = JSON.stringify([
      { text: 'thinking', delayMs: 60_000 },
      { text: 'thinking again', delayMs: 60_000 },
    ]);
    expect((await run('start', id, '--script', long)).code).toBe(0);
    await run('followup', id, 'first');
    await waitUntil(
      () => sessions.state(id),
      (s) => s.status === 'running',
      'turn 1 to run',
    );
    await run('followup', id, 'queued');
    await waitUntil(
      () => sessions.state(id),
      (s) => s.pending.nextTurn.length === 1,
      'the queued followup',
    );
    const cancelled = await run('cancel', id);
    expect(cancelled).toMatchObject({ code: 0, stdout: `cancel sent to session ${id}\n` });
    const turn1 = await settle(sessions, id, 1);
    expect(summarize(turn1).slice(-4)).toEqual([
      'cancel next-turn 1',
      'assistant/message thinking',
      'step/end 1.1',
      'turn/end 1 aborted',
    ]);

    await run('followup', id, 'second');
    await waitUntil(
      () => sessions.state(id),
      (s) => s.status === 'running' && s.turn === 2,
      'turn 2 to run',
    );
    await run('inject', id, 'kept context');
    await waitUntil(
      () => sessions.state(id),
      (s) => s.pending.nextStep.length === 1,
      'the pending context',
    );
    const kept = await run('cancel', id, '--keep-inbox');
    expect(kept.stdout).toBe(`cancel sent to session ${id} (keeping the inbox)\n`);
    await settle(sessions, id, 2);
    expect((await sessions.state(id)).pending.nextStep).toHaveLength(1);
    await run('dispose', id);
  });
});

describe('approve and deny', () => {
  it('decide the tool calls that wait, and name a call that does not wait; state and events show them', async () => {
    const id = newId('cli-approve');
    const script = JSON.stringify([
      {
        toolCalls: [
          { name: 'echo', args: { text: 'one' } },
          { name: 'echo', args: { text: 'two' } },
        ],
      },
      { text: 'decided' },
    ]);
    await expectUsageError(
      ['start', id, '--script', script, '--approval-timeout', '5'],
      /--approval-timeout needs --approvals/,
    );
    expect(
      await run('start', id, '--script', script, '--tools', 'echo', '--approvals', 'echo'),
    ).toMatchObject({
      code: 0,
    });
    await sessions.followup(id, 'go');
    await waitUntil(
      () => sessions.state(id),
      (s) => s.approvals.length === 2,
      'two calls waiting for approval',
    );
    const state = await run('state', id);
    expect(state.stdout).toContain('awaiting approval: call_0_0 echo {"text":"one"} (step 1.1)');
    expect(state.stdout).toContain('awaiting approval: call_0_1 echo {"text":"two"} (step 1.1)');

    expect(await run('deny', id, 'call_0_1', '--reason', 'not that one')).toMatchObject({
      code: 0,
      stdout: `denied call call_0_1 of session ${id}\n`,
    });
    expect(await run('approve', id, 'call_0_0')).toMatchObject({
      code: 0,
      stdout: `approved call call_0_0 of session ${id}\n`,
    });
    expect((await run('approve', id, 'call_0_0')).stdout).toBe(
      `call call_0_0 of session ${id} was already approved\n`,
    );
    const refused = await run('approve', id, 'call_0_1');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('call "call_0_1" was already resolved (deny by caller)');
    expect(refused.stderr.trimEnd().split('\n')).toHaveLength(1);
    await expectUsageError(['deny', id], /missing <callId>/);

    const events = await settle(sessions, id);
    expect(summarize(events).filter((l) => l.startsWith('tool/result'))).toEqual([
      'tool/result call_0_0',
      'tool/result call_0_1 error DENIED',
    ]);
    const lines = (await run('events', id)).stdout;
    expect(lines).toMatch(/tool\/approval-requested call_0_0 echo \{"text":"one"\}/);
    expect(lines).toMatch(/tool\/approval-resolved call_0_1 deny by caller: not that one/);
    expect(lines).toMatch(/tool\/approval-resolved call_0_0 approve by caller/);
    await run('dispose', id);
  });
});

describe('watch --stream', () => {
  it('shows the answer as it is written: delta lines that grow, then the answer event', async () => {
    const id = newId('cli-stream');
    // 24 words over 4 s: the last one comes within the worker's heartbeat throttle, so only the step's last delta
    // (sent when its answer is logged) carries it.
    const answer =
      'alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi chi psi omega';
    await sessions.start(id, { model: { provider: 'scripted', steps: [{ text: answer, streamMs: 4_000 }] } });
    const watchJson = spawnCli(['watch', id, '--stream', '--json'], cliVars);
    const watchText = spawnCli(['watch', id, '--stream'], cliVars);
    // Both watchers follow the session before the answer starts: a watcher that a loaded machine starts late would
    // see only the end of the answer. An inject (it wakes nothing) is the first line each prints.
    await sessions.inject(id, { content: 'context first', source: { kind: 'plugin', plugin: 'test' } });
    for (const [watcher, what] of [
      [watchJson, 'watch --stream --json'],
      [watchText, 'watch --stream'],
    ] as const)
      await until(
        () => watcher.stdout(),
        (out) => out.trim() !== '',
        `the inject in ${what}`,
      );
    await sessions.followup(id, 'go');
    const lines = (out: string) =>
      out
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    await until(
      () => watchJson.stdout(),
      (out) => lines(out).some((l) => l.type === 'assistant/message'),
      'the answer in watch --stream --json',
    );
    await settle(sessions, id);
    await run('dispose', id);
    expect(await watchJson.exited).toBe(0);
    expect(await watchText.exited).toBe(0);
    const all = lines(watchJson.stdout());
    const deltas = all.filter((l) => l.kind === 'delta');
    expect(deltas.length).toBeGreaterThanOrEqual(2);
    for (const d of deltas) expect(answer.startsWith(d.text as string)).toBe(true);
    expect(deltas.map((d) => d.delta).join('')).toBe(answer);
    expect(deltas.at(-1)!.text).toBe(answer);
    expect(all.findIndex((l) => l.kind === 'delta')).toBeLessThan(
      all.findIndex((l) => l.type === 'assistant/message'),
    );
    // Rendered: the answer is written once, inline, as it grows (not again as a block when it is logged).
    expect(watchText.stdout().split(answer)).toHaveLength(2);
    expect(watchText.stdout().split('◆')).toHaveLength(2);
    expect(watchText.stdout()).toContain(`◆ ${answer.split(' ')[0]}`);
  });
});

describe('list', () => {
  it('finds sessions by label as a table and as JSON lines; state shows the same row', async () => {
    const label = `cli-${newId('l').slice(-8)}`;
    const id = newId('cli-list');
    await sessions.start(id, { labels: [label] });
    await sessions.followup(id, 'hello');
    await settle(sessions, id);
    const json = await waitUntil(
      () => run('list', '--label', label, '--json'),
      (r) => r.stdout.includes('"turn":1'),
      'the session in visibility',
    );
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      id,
      status: 'idle',
      turn: 1,
      pending: 0,
      model: 'default',
      labels: [label],
    });
    const table = await run('list', '--label', label);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID\s+STATUS\s+TURN\s+PENDING\s+MODEL\s+TOKENS IN\/OUT\s+LAST ACTIVITY\s+AGE$/);
    expect(lines.slice(1).map((l) => l.split(/\s{2,}/).slice(0, 6))).toEqual([
      [id, 'idle', '1', '0', 'default', '0/0'],
    ]);
    expect((await run('list', '--label', label, '--status', 'running')).stdout).toBe('no sessions match\n');
    const state = await run('state', id);
    const stateLines = state.stdout.split('\n');
    expect(stateLines[0]).toMatch(/^ID\s+STATUS/);
    expect(stateLines[1]!.split(/\s{2,}/).slice(0, 5)).toEqual([id, 'idle', '1', '0', 'default']);
    expect(stateLines[2]).toBe('status: idle');

    // Paging: a second session with the label, one per page; the first page prints the token for the next.
    const second = newId('cli-list');
    await sessions.start(second, { labels: [label] });
    await waitUntil(
      () => run('list', '--label', label, '--json'),
      (r) => r.stdout.includes(second),
      'the second session in visibility',
    );
    const first = await run('list', '--label', label, '--limit', '1', '--json');
    const [row, next] = first.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(row).toMatchObject({ id: second });
    expect(next).toEqual({ nextPageToken: expect.any(String) });
    const page2 = await run(
      'list',
      '--label',
      label,
      '--limit',
      '1',
      '--page-token',
      String(next!.nextPageToken),
    );
    expect(page2.stdout.split('\n')[1]!.split(/\s{2,}/)[0]).toBe(id);
    expect((await run('list', '--limit', '1001')).stderr).toMatch(/invalid --limit 1001: at most 1000/);
    await run('dispose', id);
    await run('dispose', second);
  });

  it('usage sums the tokens of the matching sessions per model, as a table and as JSON', async () => {
    const label = `cli-usage-${newId('l').slice(-8)}`;
    for (const n of [1, 2]) {
      const id = newId('cli-usage');
      const script = JSON.stringify([{ text: 'a', usage: { inputTokens: 100 * n, outputTokens: 10 * n } }]);
      expect((await run('start', id, '--script', script, '--labels', label)).code).toBe(0);
      expect((await run('ask', id, 'count me')).code).toBe(0);
    }
    const json = await waitUntil(
      () => run('usage', '--label', label, '--json'),
      (r) => r.stdout.includes('"inputTokens":300'),
      'both sessions counted',
    );
    expect(JSON.parse(json.stdout)).toEqual({
      sessions: 2,
      inputTokens: 300,
      outputTokens: 30,
      byModel: { scripted: { sessions: 2, inputTokens: 300, outputTokens: 30 } },
    });
    const table = (await run('usage', '--label', label)).stdout.trimEnd().split('\n');
    expect(table.map((l) => l.trim().split(/\s{2,}/))).toEqual([
      ['MODEL', 'SESSIONS', 'INPUT TOKENS', 'OUTPUT TOKENS'],
      ['scripted', '2', '300', '30'],
      ['total', '2', '300', '30'],
    ]);
    expect((await run('usage', '--label', 'no-such-label')).stdout).toBe('no sessions match\n');
  });
});

describe('ask', () => {
  it('prints the answer of the turn its message started (one update, no polling); exit 1 when that turn failed', async () => {
    const id = newId('cli-ask');
    const script = JSON.stringify([{ text: 'forty-two' }, { fail: 'the model broke' }]);
    expect((await run('start', id, '--script', script)).code).toBe(0);
    expect(await run('ask', id, 'what', 'is', 'it?')).toMatchObject({
      code: 0,
      stdout: 'forty-two\n',
      stderr: '',
    });
    const failed = await run('ask', id, 'again', '--json', '--id', 'ask-2');
    expect(failed.code).toBe(1);
    expect(JSON.parse(failed.stdout)).toMatchObject({
      messageId: 'ask-2',
      outcome: { status: 'ended', turn: 2, reason: { kind: 'error', error: { code: 'SCRIPTED_FAILURE' } } },
    });
    expect(failed.stderr).toBe('agent-sessions ask: turn 2 ended: error SCRIPTED_FAILURE: the model broke\n');
    await run('dispose', id);
  });
});

describe('worker', () => {
  it('serves sessions on its task queue until interrupted', async () => {
    const queue = newId('cli-worker-q');
    const vars = { ...cliVars, TASK_QUEUE: queue };
    const live = spawnCli(['worker', '--toolsets', 'testing'], vars);
    try {
      const id = newId('cli-worker');
      expect(
        (
          await cli(
            [
              'start',
              id,
              '--tools',
              'echo',
              '--script',
              '[{"toolCalls":[{"name":"echo","args":{"text":"via worker"}}]}]',
            ],
            vars,
          )
        ).code,
      ).toBe(0);
      expect((await cli(['followup', id, 'hi'], vars)).code).toBe(0);
      const client = new SessionClient({ client: env.client, taskQueue: queue });
      const events = await settle(client, id, 1);
      expect(summarize(events)).toContain('tool/result call_0_0');
      expect(summarize(events).at(-3)).toBe('assistant/message echo: hi');
      expect(live.stderr()).toMatch(
        new RegExp(
          `agent-sessions worker: ${env.address.replace(/\./g, '\\.')} namespace=default task-queue=${queue} toolsets=testing`,
        ),
      );
    } finally {
      live.child.kill('SIGINT');
    }
    expect(await live.exited).toBe(0);
  });
});
