/**
 * Resolution order of the Temporal binaries (src/devserver/binaries.ts): env variable, tools venv (a checkout's
 * .venv, or the per-user cache of an installed package: src/devserver/home.ts), PATH, then the SDK download (only when
 * allowed). Uses fake executables in a temporary folder; no server is started.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  describeResolution,
  findProjectRoot,
  resolveTemporalCli,
  resolveTestServer,
} from '../../src/devserver/binaries';
import { toolsVenv } from '../../src/devserver/home';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'agent-sessions-binaries-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function fakeExecutable(file: string, mode = 0o755): string {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, '#!/bin/sh\nexit 0\n');
  chmodSync(file, mode);
  return file;
}

const project = path.join(tmp, 'project');
const venvCli = fakeExecutable(path.join(project, '.venv/bin/temporal'));
const venvTestServer = fakeExecutable(path.join(project, '.venv/bin/temporal-test-server'));
const pathDir = path.join(tmp, 'usr-bin');
const pathCli = fakeExecutable(path.join(pathDir, 'temporal'));
const pathTestServer = fakeExecutable(path.join(pathDir, 'temporal-test-server'));
const envCli = fakeExecutable(path.join(tmp, 'custom/temporal-cli'));
const notExecutable = fakeExecutable(path.join(tmp, 'custom/plain-file'), 0o644);
const emptyDir = path.join(tmp, 'empty');
mkdirSync(emptyDir);
const PATH = [path.join(tmp, 'missing-dir'), pathDir].join(path.delimiter);

describe('resolveTemporalCli / resolveTestServer', () => {
  it('takes the env variable first', () => {
    const resolved = resolveTemporalCli({ env: { TEMPORAL_CLI_PATH: envCli, PATH }, projectRoot: project });
    expect(resolved).toEqual({ type: 'existing-path', path: envCli, binary: 'temporal', source: 'env' });
    expect(describeResolution(resolved)).toBe(`Temporal CLI from TEMPORAL_CLI_PATH: ${envCli}`);
  });

  it('rejects an env variable that names a missing or non-executable file, naming the variable', () => {
    expect(() =>
      resolveTemporalCli({ env: { TEMPORAL_CLI_PATH: path.join(tmp, 'nope'), PATH }, projectRoot: project }),
    ).toThrow(/TEMPORAL_CLI_PATH/);
    expect(() =>
      resolveTestServer({ env: { TEMPORAL_TEST_SERVER_PATH: notExecutable, PATH }, projectRoot: project }),
    ).toThrow(/TEMPORAL_TEST_SERVER_PATH is set to .*plain-file, which is not an executable file/);
  });

  it('takes the project venv next, before PATH', () => {
    expect(resolveTemporalCli({ env: { PATH }, projectRoot: project })).toMatchObject({
      path: venvCli,
      source: 'venv',
    });
    const testServer = resolveTestServer({
      env: { PATH, TEMPORAL_TEST_SERVER_PATH: '  ' },
      projectRoot: project,
    });
    expect(testServer).toMatchObject({ path: venvTestServer, source: 'venv' });
    expect(describeResolution(testServer)).toBe(
      `Temporal test server from the project venv: ${venvTestServer}`,
    );
  });

  it('takes PATH when there is no venv binary', () => {
    expect(resolveTemporalCli({ env: { PATH }, projectRoot: emptyDir })).toMatchObject({
      path: pathCli,
      source: 'path',
    });
    expect(resolveTestServer({ env: { PATH }, projectRoot: null })).toMatchObject({
      path: pathTestServer,
      source: 'path',
    });
  });

  it('lets the SDK download only when allowed, and otherwise says how to get the binary', () => {
    const nowhere = { env: { PATH: emptyDir }, projectRoot: emptyDir };
    const download = resolveTemporalCli(nowhere);
    expect(download).toEqual({ type: 'cached-download', binary: 'temporal', source: 'download' });
    expect(describeResolution(download)).toMatch(/will download/);
    expect(() => resolveTemporalCli({ ...nowhere, allowDownload: false })).toThrow(
      /npm run setup.*TEMPORAL_CLI_PATH/,
    );
    expect(() => resolveTestServer({ ...nowhere, allowDownload: false })).toThrow(
      /npm run setup.*TEMPORAL_TEST_SERVER_PATH/,
    );
  });
});

describe('findProjectRoot', () => {
  it('walks up to the package named agent-sessions', () => {
    const root = path.resolve(__dirname, '../..');
    expect(findProjectRoot(path.join(root, 'src/devserver'))).toBe(root);
    expect(findProjectRoot(path.join(root, 'dist/devserver'))).toBe(root);
  });

  it('skips packages with another name and returns undefined at the top', () => {
    const other = path.join(tmp, 'other');
    mkdirSync(path.join(other, 'sub'), { recursive: true });
    writeFileSync(path.join(other, 'package.json'), JSON.stringify({ name: 'something-else' }));
    expect(findProjectRoot(path.join(other, 'sub'))).toBeUndefined();
  });
});

describe('toolsVenv: where setup installs (docs/decisions/2026-12-06-packages.md)', () => {
  it('is the checkout’s .venv, and a per-user cache for a package installed in node_modules', () => {
    expect(toolsVenv('/src/agent-sessions', {})).toBe('/src/agent-sessions/.venv');
    const installed = '/srv/app/node_modules/agent-sessions';
    expect(toolsVenv(installed, { AGENT_SESSIONS_HOME: '/data/as' })).toBe('/data/as/venv');
    expect(toolsVenv(installed, { XDG_CACHE_HOME: '/cache' })).toBe('/cache/agent-sessions/venv');
    expect(toolsVenv(installed, {})).toBe(path.join(os.homedir(), '.cache/agent-sessions/venv'));
    expect(toolsVenv(undefined, { AGENT_SESSIONS_HOME: '/data/as' })).toBe('/data/as/venv');
  });

  it('finds an installed package’s binaries in the cache, and says how to install them there', () => {
    const installed = path.join(tmp, 'app/node_modules/agent-sessions');
    mkdirSync(installed, { recursive: true });
    const home = path.join(tmp, 'as-home');
    const cached = fakeExecutable(path.join(home, 'venv/bin/temporal'));
    const env = { PATH: emptyDir, AGENT_SESSIONS_HOME: home };
    expect(resolveTemporalCli({ env, projectRoot: installed })).toMatchObject({
      path: cached,
      source: 'venv',
    });
    expect(() => resolveTestServer({ env, projectRoot: installed, allowDownload: false })).toThrow(
      `run \`npx agent-sessions setup\` (\`npm run setup\` in a checkout; installs it into ${home}/venv)`,
    );
  });
});
