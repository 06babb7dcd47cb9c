#!/usr/bin/env node
/* global process, console */
// Consumer tests (issue 35; docs/decisions/2026-12-06-packages.md): the packages as a service team installs them.
// Packs every package (scripts/packages.mjs, with publint and arethetypeswrong), installs the tarballs into fresh
// projects made from scripts/consumers/* under .cache/consumers, and checks that each builds and runs:
// - client-only: a service that only talks to sessions (ESM, TypeScript nodenext, plus a CommonJS require), with
//   @agent-sessions/client alone: its install must stay within 60 MB;
// - worker: a worker with its own tool and its own model provider (CommonJS, TypeScript nodenext);
// - testing-kit: a testing-kit test of its own (ESM, TypeScript bundler resolution, node:test) on the time-skipping
//   server that `npx agent-sessions setup --no-model` installs (into a folder of this run, not the user's cache),
//   and every TypeScript sample of README.md and docs/ type-checked against the installed packages (nodenext).
// The client asks a session that the worker serves, on a dev server the consumer's own setup installed. Prints the
// install size of each project and fails on the first problem.
// Usage: node scripts/consumers.mjs   (after `npm run build`)
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const work = path.join(root, '.cache/consumers');
const home = path.join(work, 'home');
const rootPkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
const version = (name) => rootPkg.dependencies[name] ?? rootPkg.devDependencies[name];
const at = (name) => `${name}@${version(name)}`;
const tsc = path.join(root, 'node_modules/typescript/bin/tsc');
const CLIENT_LIMIT_MB = 60;

const started = Date.now();
const log = (line) => console.log(`consumers: ${line} (${((Date.now() - started) / 1000).toFixed(0)} s)`);
const run = (cmd, args, cwd, env = {}) =>
  execFileSync(cmd, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'inherit', 'inherit'] });

// 1. The packages.
run(process.execPath, [path.join(root, 'scripts/packages.mjs')], root);
const tarball = (prefix) => {
  const dir = path.join(root, '.cache/packages');
  const found = readdirSync(dir).find(
    (f) => f.startsWith(`${prefix}-${rootPkg.version}`) && f.endsWith('.tgz'),
  );
  if (!found) throw new Error(`no ${prefix} tarball in ${dir}`);
  return path.join(dir, found);
};
const clientTgz = tarball('agent-sessions-client');
const mainTgz = tarball('agent-sessions');

// 2. Fresh projects, installed from the tarballs (registry packages come from npm's cache when it has them).
rmSync(work, { recursive: true, force: true });
mkdirSync(home, { recursive: true });
const projects = {
  'client-only': [clientTgz, at('@temporalio/client'), at('@types/node')],
  worker: [mainTgz, at('@temporalio/worker'), at('zod'), at('@types/node')],
  'testing-kit': [
    mainTgz,
    clientTgz,
    at('zod'),
    at('@types/node'),
    // what the documentation's samples import besides the packages
    at('@temporalio/client'),
    at('@temporalio/worker'),
    at('@temporalio/workflow'),
    at('@modelcontextprotocol/sdk'),
    at('vitest'),
  ],
};
const sizes = {};
for (const [name, deps] of Object.entries(projects)) {
  const dir = path.join(work, name);
  cpSync(path.join(root, 'scripts/consumers', name), dir, { recursive: true });
  run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--save-exact', ...deps], dir);
  const bytes = Number(
    execFileSync('du', ['-sb', path.join(dir, 'node_modules')], { encoding: 'utf8' }).split('\t')[0],
  );
  sizes[name] = Math.round(bytes / 1e5) / 10;
  log(`${name}: installed, node_modules ${sizes[name]} MB`);
}
if (sizes['client-only'] > CLIENT_LIMIT_MB) {
  throw new Error(`the client-only install is ${sizes['client-only']} MB, over ${CLIENT_LIMIT_MB} MB`);
}

// 3. The documentation's TypeScript samples, one file each, type-checked like a user's project would.
const samples = path.join(work, 'testing-kit', 'samples');
mkdirSync(samples);
const docs = [
  'README.md',
  'scripts/packages/client.README.md',
  ...readdirSync(path.join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];
let sampleCount = 0;
for (const doc of docs) {
  const lines = readFileSync(path.join(root, doc), 'utf8').split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(ts|typescript)\s*$/.exec(lines[i]);
    if (!open) continue;
    const body = [];
    let j = i + 1;
    for (; !/^\s*```\s*$/.test(lines[j]); j++) body.push(lines[j].slice(open[1].length));
    writeFileSync(
      path.join(samples, `${doc.replace(/[/.]/g, '_')}_${i + 1}.ts`),
      `${body.join('\n')}\nexport {};\n`,
    );
    sampleCount++;
    i = j;
  }
}
for (const name of Object.keys(projects)) run(process.execPath, [tsc, '-p', '.'], path.join(work, name));
run(process.execPath, [tsc, '-p', 'tsconfig.samples.json'], path.join(work, 'testing-kit'));
log(`built the three projects; ${sampleCount} documentation samples type-check`);

// 4. The consumer's own setup: the Temporal binaries into this run's folder (no model).
const env = { AGENT_SESSIONS_HOME: home };
run('npx', ['--no-install', 'agent-sessions', 'setup', '--no-model'], path.join(work, 'testing-kit'), env);
log('agent-sessions setup done');

// 5. A dev server; the worker; the client-only service against it.
const requireDist = createRequire(path.join(root, 'dist/index.js'));
const { spawnDevServer } = requireDist('./devserver/index.js');
const server = await spawnDevServer({
  inMemory: true,
  executable: {
    type: 'existing-path',
    path: path.join(home, 'venv/bin/temporal'),
    binary: 'temporal',
    source: 'env',
  },
});
const taskQueue = 'consumers';
const serverEnv = { TEMPORAL_ADDRESS: server.address, TASK_QUEUE: taskQueue };
const worker = spawn(process.execPath, ['dist/main.js'], {
  cwd: path.join(work, 'worker'),
  env: { ...process.env, ...serverEnv },
  stdio: ['ignore', 'pipe', 'inherit'],
});
try {
  await new Promise((resolve, reject) => {
    worker.once('exit', (code) => reject(new Error(`the consumer worker exited (${code}) before polling`)));
    worker.stdout.on('data', (chunk) => {
      process.stdout.write(chunk);
      if (String(chunk).includes('polling')) resolve();
    });
  });
  run(process.execPath, ['dist/main.js'], path.join(work, 'client-only'), serverEnv);
  run(process.execPath, ['require.cjs'], path.join(work, 'client-only'));
} finally {
  worker.kill('SIGTERM');
  await new Promise((resolve) => (worker.exitCode !== null ? resolve() : worker.once('exit', resolve)));
  await server.stop();
}

// The two packages carry the client; an error of one is an instance of the other's class.
execFileSync(
  process.execPath,
  [
    '-e',
    "const a = require('agent-sessions'), c = require('@agent-sessions/client');" +
      "if (!(new a.SessionNotFoundError('s') instanceof c.SessionNotFoundError)) throw new Error('instanceof across packages');",
  ],
  { cwd: path.join(work, 'testing-kit'), stdio: 'inherit' },
);

// 6. The testing-kit test, on the time-skipping server from the same setup: it passes, and prints none of the
// noise the kit quiets (docs/testing.md, "Quiet by default").
const testOutput = execFileSync(process.execPath, ['--test', 'dist/agent.test.js'], {
  cwd: path.join(work, 'testing-kit'),
  env: { ...process.env, ...env },
  encoding: 'utf8',
  stdio: ['ignore', 'pipe', 'pipe'],
});
process.stdout.write(testOutput);
for (const noise of [
  'activity_failure_include_heartbeat',
  'could not check the session search attributes',
  'Worker state changed',
]) {
  if (testOutput.includes(noise)) throw new Error(`the testing-kit run printed noise: ${noise}`);
}

console.log(
  JSON.stringify(
    { installMB: sizes, samples: sampleCount, seconds: Math.round((Date.now() - started) / 1000) },
    null,
    2,
  ),
);
