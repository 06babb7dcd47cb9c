/**
 * The three hook implementations and the runner, without Temporal: command hooks (no shell, JSON on stdin/stdout,
 * timeout, output cap, non-zero exit, a small environment), HTTP hooks (POST JSON, timeout, size cap, statuses,
 * no redirects), answer validation, and the worker's hooks file.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import {
  commandHook,
  defineHook,
  HookError,
  httpHook,
  runPostToolHook,
  runPreStepHook,
  type HookDefinition,
  type PostToolHookInput,
  type PreStepHookInput,
} from '../../src/activities/hooks';
import { isAlive } from '../../src/cli/devfile';
import { hooksFromConfig } from '../../src/worker/hooks';

const node = process.execPath;
const ctx = () => ({ signal: new AbortController().signal, heartbeat: () => {} });
const preInput: PreStepHookInput = {
  event: 'pre-step',
  hook: 'h',
  sessionId: 's',
  turn: 1,
  step: 1,
  batch: [{ id: 'm1', role: 'user', content: [{ type: 'text', text: 'hello' }], source: { kind: 'user' } }],
};
const postInput: PostToolHookInput = {
  event: 'post-tool',
  hook: 'h',
  sessionId: 's',
  turn: 1,
  step: 1,
  call: { callId: 'c1', name: 'echo', arguments: { text: 'x' } },
  result: { content: [{ type: 'text', text: 'x' }] },
};
/** A command hook running `node -e script`. */
const script = (code: string, extra: Partial<Parameters<typeof commandHook>[0]> = {}) =>
  commandHook({ name: 'h', kind: 'pre-step', argv: [node, '-e', code], ...extra });
const failureOf = async (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );

/**
 * A command hook that records its pid and then sleeps far longer than any test may run (`exec` keeps the pid), so
 * only a kill ends it. `pid()` is undefined until the command has started; whatever is left is killed after the
 * test, so a test that fails does not leave the sleeper behind.
 */
function sleeper(extra: Partial<Parameters<typeof commandHook>[0]> = {}) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hook-pid-'));
  const file = path.join(dir, 'pid');
  const hook = commandHook({
    name: 'h',
    kind: 'pre-step',
    argv: ['/bin/sh', '-c', `echo $$ > "${file}.tmp" && mv "${file}.tmp" "${file}" && exec sleep 3600`],
    ...extra,
  });
  const pid = () => (existsSync(file) ? Number(readFileSync(file, 'utf8')) : undefined);
  onTestFinished(() => {
    const left = pid();
    if (left !== undefined && isAlive(left)) process.kill(left, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  return { hook, pid };
}

describe('command hooks', () => {
  it('get the input as JSON on stdin and answer JSON on stdout (empty stdout = no change)', async () => {
    const echo = script(
      `let s='';process.stdin.on('data',d=>s+=d).on('end',()=>{const i=JSON.parse(s);process.stdout.write(JSON.stringify({decision:'reject',reason:i.batch[0].content[0].text}))})`,
    );
    expect(await echo.call(preInput, ctx())).toEqual({ decision: 'reject', reason: 'hello' });
    expect(await script('').call(preInput, ctx())).toEqual({});
  });

  it('run without a shell: arguments are passed as they are', async () => {
    const hook = commandHook({
      name: 'h',
      kind: 'pre-step',
      argv: [
        node,
        '-e',
        'process.stdout.write(JSON.stringify({reason: process.argv[1]}))',
        '$(touch /tmp/x); `id` && echo',
      ],
    });
    expect(await hook.call(preInput, ctx())).toEqual({ reason: '$(touch /tmp/x); `id` && echo' });
  });

  it('a key the command prints to stderr is masked in the failure', async () => {
    const err = (await failureOf(
      script(`process.stderr.write('auth failed for sk-live-abcdefgh12345678');process.exit(1)`).call(
        preInput,
        ctx(),
      ),
    )) as HookError;
    expect(err.message).toBe('exited with code 1: auth failed for [redacted]');
  });

  it('a non-zero exit fails (retryable) with the end of stderr', async () => {
    const err = await failureOf(
      script(`process.stderr.write('no way');process.exit(3)`).call(preInput, ctx()),
    );
    expect(err).toBeInstanceOf(HookError);
    expect([(err as HookError).message, (err as HookError).retryable]).toEqual([
      'exited with code 3: no way',
      true,
    ]);
  });

  // A hook that is not killed never ends (it sleeps an hour): the test then fails on its timeout, and a hook that
  // failed without killing its process fails the pid check.
  it(
    'is killed after its timeout (retryable) and past its output cap (not retryable)',
    { timeout: 20_000 },
    async () => {
      const slow = sleeper({ timeoutMs: 500 });
      const failure = await failureOf(slow.hook.call(preInput, ctx()));
      expect([(failure as HookError).message, (failure as HookError).retryable]).toEqual([
        'did not finish within 500 ms',
        true,
      ]);
      const pid = slow.pid();
      expect(pid, 'the hook started and wrote its pid before its timeout').toBeDefined();
      expect(isAlive(pid!), `hook process ${pid} is still running`).toBe(false);
      const loud = await failureOf(
        script(`process.stdout.write('x'.repeat(100000))`, { maxOutputBytes: 1000 }).call(preInput, ctx()),
      );
      expect([(loud as HookError).message, (loud as HookError).retryable]).toEqual([
        'wrote more than 1000 bytes to stdout',
        false,
      ]);
    },
  );

  it('a program that does not exist is not retried; an answer that is not JSON is not retried', async () => {
    const missing = await failureOf(
      commandHook({ name: 'h', kind: 'pre-step', argv: ['/nonexistent/hook'] }).call(preInput, ctx()),
    );
    expect([(missing as HookError).message, (missing as HookError).retryable]).toEqual([
      'cannot run /nonexistent/hook: ENOENT',
      false,
    ]);
    const garbage = await failureOf(script(`process.stdout.write('nope')`).call(preInput, ctx()));
    expect([(garbage as HookError).message, (garbage as HookError).retryable]).toEqual([
      'answer is not JSON: nope',
      false,
    ]);
  });

  it('gets a small environment, not the worker’s secrets, unless told to inherit', async () => {
    process.env.AGENT_SESSIONS_TEST_SECRET = 'sk-secret';
    try {
      const code = `process.stdout.write(JSON.stringify({reason: String(process.env.AGENT_SESSIONS_TEST_SECRET) + ' ' + String(process.env.EXTRA)}))`;
      expect(await script(code, { env: { EXTRA: 'given' } }).call(preInput, ctx())).toEqual({
        reason: 'undefined given',
      });
      expect(await script(code, { inheritEnv: true }).call(preInput, ctx())).toEqual({
        reason: 'sk-secret undefined',
      });
    } finally {
      delete process.env.AGENT_SESSIONS_TEST_SECRET;
    }
  });

  it('is killed when the call is cancelled', { timeout: 20_000 }, async () => {
    const abort = new AbortController();
    const slow = sleeper();
    const pending = failureOf(slow.hook.call(preInput, { signal: abort.signal, heartbeat: () => {} }));
    while (slow.pid() === undefined) await new Promise((resolve) => setTimeout(resolve, 10));
    abort.abort(new Error('cancelled by test'));
    expect(((await pending) as Error).message).toBe('cancelled by test');
    expect(isAlive(slow.pid()!), `hook process ${slow.pid()} is still running`).toBe(false);
  });
});

describe('HTTP hooks', () => {
  let server: Server;
  let base: string;
  const bodies: unknown[] = [];
  beforeAll(async () => {
    server = createServer((req, res) => {
      let raw = '';
      req
        .on('data', (d) => (raw += d))
        .on('end', () => {
          bodies.push({ path: req.url, type: req.headers['content-type'], body: JSON.parse(raw) });
          const reply = (status: number, body: string, headers: Record<string, string> = {}) => {
            res.writeHead(status, { 'content-type': 'application/json', ...headers });
            res.end(body);
          };
          if (req.url === '/ok') return reply(200, '{"decision":"enter"}');
          if (req.url === '/empty') return reply(204, '');
          if (req.url === '/down') return reply(503, 'busy');
          if (req.url === '/bad') return reply(400, 'bad input');
          if (req.url === '/big') return reply(200, JSON.stringify({ reason: 'x'.repeat(5000) }));
          if (req.url === '/redirect') return reply(307, '', { location: '/ok' });
          if (req.url === '/echo-auth')
            return reply(
              401,
              `{"error":"bad credentials ${String(req.headers.authorization)}, token ${String(req.headers.authorization).slice(7)}"}`,
            );
          // /slow: never answers in time
        });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  const hook = (path: string, extra = {}) =>
    httpHook({ name: 'h', kind: 'pre-step', url: `${base}${path}`, ...extra });

  it('POST the input as JSON and return the JSON answer (an empty body = no change)', async () => {
    expect(await hook('/ok').call(preInput, ctx())).toEqual({ decision: 'enter' });
    expect(bodies.at(-1)).toEqual({ path: '/ok', type: 'application/json', body: preInput });
    expect(await hook('/empty').call(preInput, ctx())).toEqual({});
  });

  it('5xx and timeouts are retryable; 4xx, oversized answers and redirects are not', async () => {
    const cases: [HookDefinition, string, boolean][] = [
      [hook('/down'), 'answered 503: busy', true],
      [hook('/slow', { timeoutMs: 200 }), 'no answer within 200 ms', true],
      [hook('/bad'), 'answered 400: bad input', false],
      [hook('/big', { maxResponseBytes: 1000 }), 'answer is larger than 1000 bytes', false],
    ];
    for (const [h, message, retryable] of cases) {
      const err = (await failureOf(h.call(preInput, ctx()))) as HookError;
      expect([err.message, err.retryable]).toEqual([message, retryable]);
    }
    const redirect = (await failureOf(hook('/redirect').call(preInput, ctx()))) as HookError;
    expect(redirect.message).toMatch(/^request failed: fetch failed/);
    expect(bodies.filter((b) => (b as { path: string }).path === '/ok')).toHaveLength(1);
  });

  it('an answer echoing the credentials the hook sent is masked before it becomes the failure (history holds it)', async () => {
    const secret = 'hook-secret-7Hq2XvL9pR4m';
    const h = hook('/echo-auth', { headers: { authorization: `Bearer ${secret}` } });
    const err = (await failureOf(h.call(preInput, ctx()))) as HookError;
    expect(err.message).toBe('answered 401: {"error":"bad credentials [redacted], token [redacted]"}');
  });

  it('only http(s) URLs are accepted when the worker registers one', () => {
    expect(() => httpHook({ name: 'h', kind: 'pre-step', url: 'file:///etc/passwd' })).toThrow(
      'url must be http(s)',
    );
  });
});

describe('the runner validates answers', () => {
  const fn = (answer: unknown, kind: 'pre-step' | 'post-tool' = 'pre-step'): HookDefinition => ({
    name: 'h',
    kind,
    describe: 'function',
    call: async () => answer,
  });

  it('normalizes pre-step decisions; added messages name the hook unless they name another producer', async () => {
    expect(await runPreStepHook(fn({}), preInput, ctx())).toEqual({ kind: 'enter', messages: [] });
    expect(await runPreStepHook(fn({ decision: 'reject' }), preInput, ctx())).toEqual({ kind: 'reject' });
    expect(
      await runPreStepHook(
        fn({
          messages: [{ content: 'a' }, { id: 'x1', content: 'b', source: { kind: 'plugin', plugin: 'p' } }],
        }),
        preInput,
        ctx(),
      ),
    ).toEqual({
      kind: 'enter',
      messages: [
        { content: [{ type: 'text', text: 'a' }], source: { kind: 'hook', hook: 'h' } },
        { id: 'x1', content: [{ type: 'text', text: 'b' }], source: { kind: 'plugin', plugin: 'p' } },
      ],
    });
  });

  it('normalizes post-tool decisions; contexts name the hook and the call', async () => {
    expect(
      await runPostToolHook(fn({ additionalContexts: [{ content: 'n' }] }, 'post-tool'), postInput, ctx()),
    ).toEqual({
      kind: 'continue',
      additionalContexts: [
        { content: [{ type: 'text', text: 'n' }], source: { kind: 'hook', hook: 'h', callId: 'c1' } },
      ],
    });
    expect(
      await runPostToolHook(fn({ decision: 'block', feedback: 'no' }, 'post-tool'), postInput, ctx()),
    ).toEqual({
      kind: 'block',
      feedback: 'no',
      additionalContexts: [],
    });
  });

  it('refuses invalid answers as HookInvalidOutput (not retryable), naming the field', async () => {
    const cases: [HookDefinition, 'pre' | 'post', RegExp][] = [
      [fn({ decision: 'maybe' }), 'pre', /answered an invalid decision: decision: /],
      [fn({ messages: [{ content: '' }] }), 'pre', /messages\[0\]\.content: must not be empty/],
      [
        fn({ messages: [{ content: 'x', source: { kind: 'user' } }] }),
        'pre',
        /message\.source: kind 'user' is reserved for direct input/,
      ],
      [fn({ decision: 'block' }, 'post-tool'), 'post', /feedback: required when decision is 'block'/],
      [fn('just text', 'post-tool'), 'post', /answered an invalid decision/],
    ];
    for (const [hook, which, message] of cases) {
      const err = (await failureOf(
        which === 'pre' ? runPreStepHook(hook, preInput, ctx()) : runPostToolHook(hook, postInput, ctx()),
      )) as ApplicationFailure;
      expect(err).toBeInstanceOf(ApplicationFailure);
      expect([err.type, err.nonRetryable]).toEqual(['HookInvalidOutput', true]);
      expect(err.message).toMatch(message);
    }
  });

  it('turns implementation failures into HookFailed naming the hook, retryable unless the hook said not', async () => {
    const thrower = defineHook({
      name: 'boom',
      kind: 'pre-step',
      run: () => {
        throw new Error('kaput');
      },
    });
    const err = (await failureOf(runPreStepHook(thrower, preInput, ctx()))) as ApplicationFailure;
    expect([err.type, err.nonRetryable, err.message]).toEqual([
      'HookFailed',
      false,
      'pre-step hook "boom" (function) failed: kaput',
    ]);
    const wrongKind = (await failureOf(runPostToolHook(thrower, postInput, ctx()))) as ApplicationFailure;
    expect(wrongKind.message).toBe('hook "boom" is a pre-step hook, not a post-tool hook');
  });
});

describe('the worker’s hooks file', () => {
  it('registers HTTP and command hooks it names', () => {
    const hooks = hooksFromConfig({
      hooks: [
        { name: 'guard', kind: 'pre-step', http: { url: 'http://127.0.0.1:8080/guard', timeoutMs: 500 } },
        { name: 'lint', kind: 'post-tool', command: { argv: ['/usr/local/bin/lint-hook', '--json'] } },
      ],
    });
    expect(hooks.map((h) => [h.name, h.kind, h.describe])).toEqual([
      ['guard', 'pre-step', 'http POST http://127.0.0.1:8080/guard'],
      ['lint', 'post-tool', 'command /usr/local/bin/lint-hook'],
    ]);
  });

  it('refuses entries it cannot trust, naming the entry and the field', () => {
    const refusal = (hook: unknown) => {
      try {
        hooksFromConfig({ hooks: [hook] });
        return 'accepted';
      } catch (err) {
        return (err as Error).message;
      }
    };
    expect(refusal({ name: 'x', kind: 'pre-step', http: { url: 'ftp://x' } })).toMatch(
      /^hooks file: hooks\[0\]\.http\.url: must be an http\(s\) URL/,
    );
    expect(refusal({ name: 'x', kind: 'pre-step', command: { argv: [] } })).toMatch(
      /^hooks file: hooks\[0\]\.command\.argv: /,
    );
    expect(refusal({ name: 'x y', kind: 'pre-step', command: { argv: ['a'] } })).toMatch(
      /^hooks file: hooks\[0\]\.name: /,
    );
    expect(refusal({ name: 'x', kind: 'pre-step', command: { argv: ['a'], shell: true } })).toMatch(
      /^hooks file: hooks\[0\]\.command.*shell/,
    );
    expect(refusal({ name: 'x', kind: 'later', command: { argv: ['a'] } })).toMatch(
      /^hooks file: hooks\[0\]\.kind: /,
    );
    expect(refusal({ name: 'x', kind: 'pre-step' })).toBe(
      'hooks file: hooks[0]: needs exactly one of http or command',
    );
    expect(
      refusal({ name: 'x', kind: 'pre-step', http: { url: 'http://a' }, command: { argv: ['a'] } }),
    ).toBe('hooks file: hooks[0]: needs exactly one of http or command');
  });
});
