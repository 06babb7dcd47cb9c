#!/usr/bin/env node
/* global process, console */
// Packages by use (issue 35; docs/decisions/2026-12-06-packages.md). Builds the installable packages from dist/
// (run `npm run build` first) into .cache/packages/<folder>/, packs each into .cache/packages/<name>-<version>.tgz,
// and checks them with publint and arethetypeswrong:
// - @agent-sessions/client: the client, its errors and the wire types, for a service that only talks to sessions:
//   exactly the files dist/client/index.js reaches, with @temporalio/client (and the parts of it we import) and zod.
// - agent-sessions: the worker, the CLI and dev server, the testing kit, the providers. node-llama-cpp is an
//   optional peer (install it for the local model); no install script (`agent-sessions setup` or the first
//   `agent-sessions dev` fetches the Temporal binaries and the weights).
// Every bare import of a package's files must be a dependency it declares (or a Node built-in), and every relative
// link of its markdown must point at a file (one the package does not ship is named in plain text): checked here.
// Usage: node scripts/packages.mjs [--no-lint]   (--no-lint skips publint and arethetypeswrong)
import { execFileSync } from 'node:child_process';
import { builtinModules } from 'node:module';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = path.join(root, '.cache/packages');
const lint = !process.argv.includes('--no-lint');
const rootPkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));

/** The packages. `entries` are dist-relative module paths (no extension); `files` are copied as they are. */
const PACKAGES = [
  {
    folder: 'client',
    name: '@agent-sessions/client',
    description:
      'Talk to agent-sessions sessions from a service: SessionClient, its errors and the wire types.',
    entries: { '.': 'client/index' },
    files: [],
    readme: 'scripts/packages/client.README.md',
    /** Imported by the client but installed with @temporalio/client: declared so the imports are honest. */
    dependencies: [
      '@temporalio/client',
      '@temporalio/common',
      '@temporalio/proto',
      '@temporalio/workflow',
      'zod',
    ],
  },
  {
    folder: 'agent-sessions',
    name: 'agent-sessions',
    description: rootPkg.description,
    entries: Object.fromEntries(
      Object.entries(rootPkg.exports)
        .filter(([, target]) => typeof target === 'object')
        .map(([subpath, target]) => [
          subpath,
          target.default.replace(/^\.\/dist\//, '').replace(/\.js$/, ''),
        ]),
    ),
    all: true,
    files: ['bin', 'scripts/setup.sh', 'docs', 'CHANGELOG.md'],
    readme: 'README.md',
    dependencies: Object.keys(rootPkg.dependencies).filter((d) => d !== 'node-llama-cpp'),
    peerDependencies: { 'node-llama-cpp': `^${rootPkg.dependencies['node-llama-cpp']}` },
    bin: rootPkg.bin,
  },
];

const NODE_BUILTINS = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);

/** The package a bare specifier belongs to (`@scope/name/sub` -> `@scope/name`). */
const packageOf = (spec) =>
  spec
    .split('/')
    .slice(0, spec.startsWith('@') ? 2 : 1)
    .join('/');

/** Files under dist/ that `start` reaches through relative imports, and the bare specifiers they import. */
function closure(starts, ext, pattern) {
  const seen = new Set();
  const bare = new Map();
  const visit = (file) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const match of readFileSync(file, 'utf8').matchAll(pattern)) {
      const spec = match[1] ?? match[2];
      if (!spec.startsWith('.')) {
        if (!NODE_BUILTINS.has(spec)) bare.set(spec, [...(bare.get(spec) ?? []), path.relative(root, file)]);
        continue;
      }
      const base = path.resolve(path.dirname(file), spec).replace(/\.js$/, '');
      const found = [`${base}${ext}`, path.join(base, `index${ext}`)].find(
        (f) => existsSync(f) && statSync(f).isFile(),
      );
      if (!found) throw new Error(`${path.relative(root, file)} imports ${spec}, which is not in dist/`);
      visit(found);
    }
  };
  for (const start of starts) visit(start);
  return { files: [...seen], bare };
}

const JS_IMPORTS = /\brequire\(["']([^"']+)["']\)|\bimport\(["']([^"']+)["']\)/g;
const DTS_IMPORTS = /\bfrom ["']([^"']+)["']|\bimport\(["']([^"']+)["']\)/g;

/** Every file under a folder (relative to root). */
function walk(folder) {
  return readdirSync(path.join(root, folder), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(root, path.join(e.parentPath, e.name)));
}

/**
 * Relative markdown links of `file` (shipped in the package folder `dir`): a link to a file of the repository that
 * the package does not ship becomes plain text naming it (`text (path in the agent-sessions repository)`); a link
 * to nothing at all is returned as broken.
 */
function fixLinks(dir, file) {
  const shipped = path.join(dir, file);
  const broken = [];
  const text = readFileSync(shipped, 'utf8').replace(
    /\[([^\]]+)\]\(([^)\s#]+)(#[^)]*)?\)/g,
    (link, label, target) => {
      if (/^[a-z]+:/i.test(target) || existsSync(path.join(path.dirname(shipped), target))) return link;
      const inRepo = path.join(root, path.dirname(file), target);
      if (!existsSync(inRepo)) {
        broken.push(`${file} -> ${target}`);
        return link;
      }
      return `${label} (\`${path.relative(root, inRepo)}\` in the agent-sessions repository)`;
    },
  );
  writeFileSync(shipped, text);
  return broken;
}

function build(spec) {
  const dir = path.join(out, spec.folder);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const dist = path.join(root, 'dist');
  if (!existsSync(path.join(dist, 'index.js')))
    throw new Error('dist/ is missing: run `npm run build` first');

  // JavaScript: the closure of the entries (or all of dist/ for the full package), and the types they reach.
  const jsStarts = spec.all
    ? walk('dist')
        .filter((f) => f.endsWith('.js'))
        .map((f) => path.join(root, f))
    : Object.values(spec.entries).map((e) => path.join(dist, `${e}.js`));
  const js = closure(jsStarts, '.js', JS_IMPORTS);
  const dts = closure(
    Object.values(spec.entries).map((e) => path.join(dist, `${e}.d.ts`)),
    '.d.ts',
    DTS_IMPORTS,
  );
  const shipped = spec.all
    ? walk('dist').filter((f) => !f.endsWith('.map'))
    : [...js.files, ...dts.files].map((f) => path.relative(root, f));
  for (const file of shipped) cpSync(path.join(root, file), path.join(dir, file));
  for (const file of spec.files) cpSync(path.join(root, file), path.join(dir, file), { recursive: true });
  cpSync(path.join(root, spec.readme), path.join(dir, 'README.md'));
  cpSync(path.join(root, 'LICENSE'), path.join(dir, 'LICENSE'));

  // Every bare import is declared: a dependency, or (node-llama-cpp) the optional peer.
  const declared = new Set([...spec.dependencies, ...Object.keys(spec.peerDependencies ?? {})]);
  const problems = [];
  for (const [what, found] of [
    ['imports', js.bare],
    ['type imports', dts.bare],
  ]) {
    for (const [bare, from] of found) {
      if (!declared.has(packageOf(bare)))
        problems.push(`${from[0]} ${what} ${bare}, which ${spec.name} does not declare`);
    }
  }
  for (const file of [
    'README.md',
    ...(spec.files.includes('docs') ? walk('docs').filter((f) => f.endsWith('.md')) : []),
  ])
    problems.push(...fixLinks(dir, file).map((l) => `broken link ${l}`));
  if (problems.length) throw new Error(`${spec.name}:\n  ${problems.join('\n  ')}`);

  const exportsMap = Object.fromEntries([
    ...Object.entries(spec.entries).map(([subpath, e]) => [
      subpath,
      { types: `./dist/${e}.d.ts`, default: `./dist/${e}.js` },
    ]),
    ['./package.json', './package.json'],
  ]);
  const subpaths = Object.entries(spec.entries).filter(([subpath]) => subpath !== '.');
  const manifest = {
    name: spec.name,
    version: rootPkg.version,
    description: spec.description,
    license: rootPkg.license,
    type: 'commonjs',
    engines: rootPkg.engines,
    main: `./dist/${spec.entries['.']}.js`,
    types: `./dist/${spec.entries['.']}.d.ts`,
    exports: exportsMap,
    // TypeScript's legacy `moduleResolution: node` ignores "exports": these map the subpaths for it.
    ...(subpaths.length
      ? {
          typesVersions: {
            '*': Object.fromEntries(subpaths.map(([subpath, e]) => [subpath.slice(2), [`dist/${e}.d.ts`]])),
          },
        }
      : {}),
    ...(spec.bin ? { bin: spec.bin } : {}),
    files: ['dist', ...spec.files, 'README.md', 'LICENSE'],
    dependencies: Object.fromEntries(spec.dependencies.map((d) => [d, rootPkg.dependencies[d]])),
    ...(spec.peerDependencies
      ? {
          peerDependencies: spec.peerDependencies,
          peerDependenciesMeta: Object.fromEntries(
            Object.keys(spec.peerDependencies).map((d) => [d, { optional: true }]),
          ),
        }
      : {}),
  };
  writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  const packed = JSON.parse(
    execFileSync('npm', ['pack', '--json', '--pack-destination', out], { cwd: dir, encoding: 'utf8' }),
  )[0];
  return {
    name: spec.name,
    dir,
    tarball: path.join(out, packed.filename),
    files: packed.entryCount,
    bytes: packed.size,
    unpacked: packed.unpackedSize,
  };
}

function check(pkg) {
  const bin = (name) => path.join(root, 'node_modules/.bin', name);
  execFileSync(bin('publint'), ['--strict', pkg.dir], { stdio: 'inherit' });
  // attw's node10 check covers TypeScript's legacy resolution; the packages are CommonJS that ESM imports by name.
  execFileSync(bin('attw'), [pkg.tarball, '--format', 'ascii'], { stdio: 'inherit' });
}

mkdirSync(out, { recursive: true });
for (const f of readdirSync(out)) if (f.endsWith('.tgz')) rmSync(path.join(out, f));
const built = PACKAGES.map(build);
if (lint) built.forEach(check);
console.log(
  JSON.stringify(
    built.map(({ name, tarball, files, bytes, unpacked }) => ({
      name,
      tarball: path.relative(root, tarball),
      files,
      bytes,
      unpacked,
    })),
    null,
    2,
  ),
);
