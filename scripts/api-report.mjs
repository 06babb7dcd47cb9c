#!/usr/bin/env node
/* global process, console */
// The public API, reviewed (issue 34): one API Extractor report per entry of package.json "exports", checked in
// under api/. `npm run api` rewrites the reports; `npm run api:check` (part of `npm run check`) fails when an entry's
// surface differs from its report, printing the difference, so a change to what users can import shows up in
// review. It reads declarations compiled from src/ by tsconfig.api.json into .cache/api/dts (not dist/), so it
// works on a fresh clone before any build. Not part of the package.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import apiExtractor from '@microsoft/api-extractor';

const { CompilerState, Extractor, ExtractorConfig } = apiExtractor;
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const check = process.argv.includes('--check');
const reports = path.join(root, 'api');
const work = path.join(root, '.cache/api');
const dts = path.join(work, 'dts');

/** Each entry of package.json "exports" with types: its subpath, its compiled declarations, its report's name. */
function entries() {
  const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
  return Object.entries(pkg.exports)
    .filter(([, target]) => typeof target === 'object' && target.types)
    .map(([subpath, target]) => ({
      subpath,
      types: path.join(dts, path.relative('dist', target.types)),
      reportName: subpath === '.' ? pkg.name : `${pkg.name}-${subpath.slice(2).replaceAll('/', '-')}`,
    }));
}

/**
 * API Extractor's findings (undocumented members, types referenced but not exported…) stay out of the report: some
 * name the declaration's file and line, which would change the report whenever code moves. The declarations of
 * referenced but unexported types are in the report all the same (`includeForgottenExports`).
 */
const silent = { logLevel: 'none', addToApiReportFile: false };

function configFor(entry) {
  return {
    projectFolder: root,
    mainEntryPointFilePath: entry.types,
    compiler: {
      overrideTsconfig: {
        compilerOptions: {
          target: 'ES2022',
          lib: ['ES2022'],
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          skipLibCheck: true,
          esModuleInterop: true,
          types: ['node'],
        },
        include: [path.join(dts, '**/*.d.ts')],
      },
    },
    apiReport: {
      enabled: true,
      reportFileName: entry.reportName,
      // API Extractor writes its report here; this script normalizes it into api/ (or compares it with api/).
      reportFolder: path.join(work, 'raw'),
      reportTempFolder: path.join(work, 'temp'),
      includeForgottenExports: true,
    },
    newlineKind: 'lf',
    docModel: { enabled: false },
    dtsRollup: { enabled: false },
    tsdocMetadata: { enabled: false },
    messages: {
      compilerMessageReporting: { default: { logLevel: 'warning' } },
      extractorMessageReporting: { default: silent },
      tsdocMessageReporting: { default: silent },
    },
  };
}

/**
 * The report with the members of each zod enum's type (`z.ZodEnum<{ b: "b"; a: "a" }>`) sorted — tsc prints them in
 * the order it first met the literals anywhere in the program, so an unrelated edit can reorder them; their order
 * means nothing — and without API Extractor's `(undocumented)` marks, so that writing a doc comment is not a change
 * of the surface.
 */
function normalize(text) {
  const lines = text
    .replaceAll(/^(\s*\/\/ @\w+) \(undocumented\)$/gm, '$1')
    .split('\n')
    .filter((line) => !/^\s*\/\/ \(undocumented\)$/.test(line));
  const enumMember = /^\s+("[^"]*"|[\w$]+): "([^"]*)";$/;
  const isEnumMember = (line) => {
    const m = enumMember.exec(line);
    return m !== null && m[1].replace(/^"|"$/g, '') === m[2];
  };
  const out = [];
  for (let i = 0; i < lines.length;) {
    if (!isEnumMember(lines[i])) {
      out.push(lines[i++]);
      continue;
    }
    const run = [];
    while (i < lines.length && isEnumMember(lines[i])) run.push(lines[i++]);
    out.push(...run.sort());
  }
  return out.join('\n');
}

// A full emit every time, into an empty folder: tsc prints an inferred type from what it has checked, which an
// incremental build would not redo.
rmSync(dts, { recursive: true, force: true });
try {
  execFileSync(
    process.execPath,
    [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.api.json'],
    {
      cwd: root,
      stdio: 'inherit',
    },
  );
} catch {
  console.error('api: the declarations of src/ did not compile (tsconfig.api.json; errors above)');
  process.exit(1);
}
for (const dir of [reports, path.join(work, 'raw'), path.join(work, 'temp')])
  mkdirSync(dir, { recursive: true });

const configs = entries().map((entry) => ({
  entry,
  config: ExtractorConfig.prepare({
    configObject: configFor(entry),
    configObjectFullPath: undefined,
    packageJsonFullPath: path.join(root, 'package.json'),
  }),
}));
// One TypeScript program for every entry (one per entry would take three times as long).
const compilerState = CompilerState.create(configs[0].config, {
  additionalEntryPoints: configs.map(({ config }) => config.mainEntryPointFilePath),
});
let changed = 0;
for (const { entry, config } of configs) {
  const result = Extractor.invoke(config, {
    compilerState,
    localBuild: true,
    messageCallback: (message) => {
      // Its preamble and its notes on the report it wrote (this script reports on api/ itself).
      if (
        message.logLevel === 'info' ||
        message.logLevel === 'verbose' ||
        (message.messageId.startsWith('console-api-report') && message.logLevel !== 'error')
      )
        message.handled = true;
    },
  });
  if (result.errorCount > 0) {
    console.error(`api: ${entry.subpath}: API Extractor failed (${result.errorCount} errors)`);
    process.exitCode = 1;
    continue;
  }
  const fresh = normalize(readFileSync(config.reportFilePath, 'utf8'));
  const report = path.join(reports, path.basename(config.reportFilePath));
  const name = path.relative(root, report);
  const recorded = existsSync(report) ? readFileSync(report, 'utf8') : undefined;
  if (recorded === fresh) {
    console.log(`api: ${name} unchanged`);
    continue;
  }
  changed++;
  if (!check) {
    writeFileSync(report, fresh);
    console.log(`api: ${name} ${recorded === undefined ? 'written' : 'updated'}`);
    continue;
  }
  const current = path.join(work, path.basename(report));
  writeFileSync(current, fresh);
  console.error(`api: ${entry.subpath}: the public API differs from ${name}:`);
  try {
    execFileSync(
      'git',
      [
        'diff',
        '--no-index',
        '--no-color',
        '--',
        recorded === undefined ? '/dev/null' : name,
        path.relative(root, current),
      ],
      {
        cwd: root,
        stdio: ['ignore', 'inherit', 'inherit'],
      },
    );
  } catch {
    // git diff --no-index exits 1 when the files differ, which they do.
  }
}
if (check && changed > 0) {
  console.error('api: the public API changed: run `npm run api` and commit the report(s) with the change');
  process.exitCode = 1;
}
