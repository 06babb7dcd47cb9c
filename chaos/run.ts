/**
 * `npm run chaos`: the chaos suite (docs/reliability.md). Runs each scenario against its own dev server on a fresh
 * SQLite file, with real CLI worker processes, all on loopback; prints progress on stderr and one JSON report on
 * stdout; exits 1 when a scenario found a promise broken, 2 on bad arguments.
 *
 *   npm run chaos -- [--short] [--seed N] [--only crash,server,bad-input,concurrency,long-session]
 *
 * The seed (default: random, printed in the report; also CHAOS_SEED) fixes the scripts, payloads, kill moments and
 * pauses. `--short` is the CI profile (a few minutes); the full profile is the one docs/reliability.md reports.
 * CHAOS_WORKER_ROOT names another built checkout whose `bin/agent-sessions.js` and dist/ the workers run (to measure
 * two builds with the same suite); by default the workers run this project's dist/.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { findProjectRoot, resolveTemporalCli } from '../src/devserver';
import { note } from './infra';
import { Rng } from './rng';
import { withScenarioEnv, type ScenarioReport } from './scenario';
import { badInput, type BadInputParams } from './scenarios/badInput';
import { concurrency, type ConcurrencyParams } from './scenarios/concurrency';
import { crashCampaign, type CrashParams } from './scenarios/crash';
import { longSession, type LongSessionParams } from './scenarios/longSession';
import { serverOutages, type ServerParams } from './scenarios/server';

interface Profile {
  crash: CrashParams;
  server: ServerParams;
  badInput: BadInputParams;
  concurrency: ConcurrencyParams;
  longSession: LongSessionParams;
}

const PROFILES: Record<'full' | 'short', Profile> = {
  full: {
    crash: {
      sessions: 20,
      kills: 56,
      workers: 2,
      minTurns: 4,
      delayMs: [300, 2000],
      thinkMs: [500, 3000],
      continueAsNewAfterEvents: 150,
      turnTimeoutMs: 600_000,
    },
    server: {
      sessions: 8,
      restarts: 2,
      workers: 2,
      minTurns: 3,
      downMs: [3_000, 6_000],
      delayMs: [300, 1500],
      thinkMs: [300, 2000],
      continueAsNewAfterEvents: 150,
      turnTimeoutMs: 600_000,
    },
    badInput: { sessions: 8, payloads: 10_000, validEvery: 10, inFlight: 48 },
    concurrency: { senders: 10, messages: 100, retryShare: 0.15, workers: 2, continueAsNewAfterEvents: 1000 },
    longSession: { turns: 5000, window: 20, workers: 1 },
  },
  short: {
    crash: {
      sessions: 4,
      kills: 4,
      workers: 2,
      minTurns: 3,
      delayMs: [300, 1500],
      thinkMs: [300, 1500],
      continueAsNewAfterEvents: 100,
      turnTimeoutMs: 300_000,
    },
    server: {
      sessions: 2,
      restarts: 2,
      workers: 2,
      minTurns: 1,
      downMs: [1_500, 2_500],
      delayMs: [200, 800],
      thinkMs: [200, 800],
      continueAsNewAfterEvents: 100,
      turnTimeoutMs: 300_000,
    },
    badInput: { sessions: 2, payloads: 600, validEvery: 10, inFlight: 24 },
    concurrency: { senders: 10, messages: 10, retryShare: 0.15, workers: 2, continueAsNewAfterEvents: 200 },
    longSession: { turns: 150, window: 20, continueAsNewAfterEvents: 300, workers: 1 },
  },
};

const SCENARIOS = ['crash', 'server', 'bad-input', 'concurrency', 'long-session'] as const;
type ScenarioName = (typeof SCENARIOS)[number];

function parseArgs(argv: string[]): { profile: 'full' | 'short'; seed: number; only: ScenarioName[] } {
  let profile: 'full' | 'short' = 'full';
  let seed = process.env.CHAOS_SEED ? Number(process.env.CHAOS_SEED) : Math.floor(Math.random() * 2 ** 31);
  let only: ScenarioName[] = [...SCENARIOS];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = () => {
      const v = arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : argv[++i];
      if (v === undefined) throw new Error(`${arg} needs a value`);
      return v;
    };
    if (arg === '--short') profile = 'short';
    else if (arg === '--full') profile = 'full';
    else if (arg.startsWith('--seed')) seed = Number(value());
    else if (arg.startsWith('--only')) {
      only = value()
        .split(',')
        .map((s) => s.trim()) as ScenarioName[];
      const unknown = only.filter((s) => !SCENARIOS.includes(s));
      if (unknown.length)
        throw new Error(`unknown scenario(s) ${unknown.join(', ')} (known: ${SCENARIOS.join(', ')})`);
    } else throw new Error(`unknown argument ${arg}`);
  }
  if (!Number.isInteger(seed) || seed < 0) throw new Error('--seed takes a non-negative integer');
  return { profile, seed, only };
}

// An interrupted run exits through 'exit', where the servers and workers it started are killed.
process.once('SIGINT', () => process.exit(130));
process.once('SIGTERM', () => process.exit(143));

async function main(): Promise<number> {
  let args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`chaos: ${(err as Error).message}\n`);
    return 2;
  }
  const root = process.env.CHAOS_WORKER_ROOT
    ? path.resolve(process.env.CHAOS_WORKER_ROOT)
    : (findProjectRoot(__dirname) ?? process.cwd());
  if (!existsSync(path.join(root, 'dist/cli/main.js'))) {
    process.stderr.write(`chaos: ${root}/dist/ is missing: run \`npm run build\` first\n`);
    return 2;
  }
  const started = Date.now();
  const profile = PROFILES[args.profile];
  const rng = new Rng(args.seed);
  note(`seed ${args.seed}, profile ${args.profile}, scenarios ${args.only.join(', ')}`);
  const reports: ScenarioReport[] = [];
  for (const name of args.only) {
    const scenarioRng = rng.fork(name);
    const run = (body: Parameters<typeof withScenarioEnv>[3]) =>
      withScenarioEnv(name, root, scenarioRng, body);
    switch (name) {
      case 'crash':
        reports.push(await run((env) => crashCampaign(env, profile.crash)));
        break;
      case 'server':
        reports.push(await run((env) => serverOutages(env, profile.server)));
        break;
      case 'bad-input':
        reports.push(await run((env) => badInput(env, profile.badInput)));
        break;
      case 'concurrency':
        reports.push(await run((env) => concurrency(env, profile.concurrency)));
        break;
      case 'long-session':
        reports.push(await run((env) => longSession(env, profile.longSession)));
        break;
    }
  }
  const cli = resolveTemporalCli({ allowDownload: false });
  const report = {
    seed: args.seed,
    profile: args.profile,
    command: `npm run chaos -- ${args.profile === 'short' ? '--short ' : ''}--seed ${args.seed}${args.only.length < SCENARIOS.length ? ` --only ${args.only.join(',')}` : ''}`,
    workerRoot: root,
    startedAt: new Date(started).toISOString(),
    durationMs: Date.now() - started,
    node: process.version,
    temporal:
      cli.type === 'existing-path' ? execFileSync(cli.path, ['--version']).toString().trim() : undefined,
    ok: reports.every((r) => r.broken.length === 0),
    scenarios: reports,
  };
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  return report.ok ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`chaos: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
