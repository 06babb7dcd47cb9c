/**
 * The Go build of Temporal server v1.32.0 and its schema tool (`build`; the first step of `up`): one `go install`
 * from the Go module proxy into a cache outside the clone, so every clone on the machine shares it. Also the module's
 * folder in the module cache, whose schema/ the schema step reads. Not deterministic: runs `go`.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { TEMPORAL_SERVER_VERSION, type Settings } from './plan';
import { ClusterError, elapsed, isExecutable, run, say, tail, which } from './proc';

const MODULE = 'go.temporal.io/server';

function goEnv(s: Settings, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    GOPATH: s.gopath,
    GOCACHE: path.join(s.gopath, 'cache'),
    GOMODCACHE: path.join(s.gopath, 'pkg/mod'),
    ...extra,
  };
}

/** Both binaries are there and the server reports the pinned version. */
export async function binariesReady(s: Settings): Promise<boolean> {
  if (!isExecutable(s.serverBin) || !isExecutable(s.sqlBin)) return false;
  const version = await run(s.serverBin, ['--version']);
  return version.stdout.split('\n').some((line) => line.endsWith(`version ${TEMPORAL_SERVER_VERSION}`));
}

/** The module's folder in the module cache; downloads the module if the cache was cleaned since the build. */
export async function moduleDir(s: Settings): Promise<string> {
  const dir = path.join(s.gopath, 'pkg/mod', `${MODULE}@v${TEMPORAL_SERVER_VERSION}`);
  const marker = path.join(dir, 'config/development-postgres12.yaml');
  if (!existsSync(marker)) {
    const download = await run('go', ['mod', 'download', `${MODULE}@v${TEMPORAL_SERVER_VERSION}`], {
      env: goEnv(s),
      stdout: 'inherit',
      stderr: 'inherit',
    });
    if (download.code !== 0)
      throw new ClusterError(`go mod download ${MODULE}@v${TEMPORAL_SERVER_VERSION} failed`);
  }
  if (!existsSync(marker)) throw new ClusterError(`${marker} is missing`);
  return dir;
}

/** Builds both binaries unless they are cached; prints a line every 30 s while it builds. */
export async function build(s: Settings): Promise<void> {
  if (await binariesReady(s)) {
    say(`Temporal server v${TEMPORAL_SERVER_VERSION}: cached in ${s.bindir}`);
    return;
  }
  if (!which('go'))
    throw new ClusterError(
      `go is not on PATH (Temporal server v${TEMPORAL_SERVER_VERSION} needs Go >= 1.26.8)`,
    );
  mkdirSync(s.bindir, { recursive: true });
  mkdirSync(s.logdir, { recursive: true });
  const log = path.join(s.logdir, 'build.log');
  const start = Date.now();
  const goVersion = (await run('go', ['version'])).stdout.split(' ')[2];
  say(
    `building Temporal server v${TEMPORAL_SERVER_VERSION} and its schema tool with ${goVersion} into ${s.bindir}`,
  );
  say(`  (about 5 minutes on 2 cores when the cache is cold; output in ${log})`);
  // One install for both binaries (same module version): they share the download and the compile of common code.
  const out = openSync(log, 'w');
  const child = spawn(
    'go',
    [
      'install',
      '-ldflags=-s -w',
      `${MODULE}/cmd/server@v${TEMPORAL_SERVER_VERSION}`,
      `${MODULE}/cmd/tools/sql@v${TEMPORAL_SERVER_VERSION}`,
    ],
    { env: goEnv(s, { GOBIN: s.bindir }), stdio: ['ignore', out, out] },
  );
  closeSync(out);
  const progress = setInterval(() => {
    const downloads = readFileSync(log, 'utf8').match(/^go: downloading/gm)?.length ?? 0;
    say(`  still building (${elapsed(start)}, ${downloads} modules downloaded)`);
  }, 30_000);
  const code = await new Promise<number>((resolve) => {
    child.once('error', () => resolve(127));
    child.once('close', (c) => resolve(c ?? 1));
  });
  clearInterval(progress);
  if (code !== 0) {
    process.stderr.write(tail(log, 30));
    throw new ClusterError(`go install failed (the whole output is in ${log})`);
  }
  // The binaries are called `server` and `sql`; give them the names Temporal's docs and images use.
  for (const [target, name] of [
    ['server', s.serverBin],
    ['sql', s.sqlBin],
  ] as const) {
    rmSync(name, { force: true });
    symlinkSync(target, name);
  }
  if (!(await binariesReady(s)))
    throw new ClusterError(
      `the build finished but ${s.serverBin} does not report version ${TEMPORAL_SERVER_VERSION}`,
    );
  say(`built in ${elapsed(start)}`);
}
