// Lint rules. The sandbox line (STYLE.md 1): workflow code may not import Node built-ins, the Temporal client,
// worker or activity packages, or our I/O folders; a bundling test enforces the same at run time. No import cycles
// (STYLE.md 18): `import-x/no-cycle` and `local/no-type-cycle` (which counts type-only imports too) between modules,
// and the layer rules below between folders (worker and testing never import each other's way round; the CLI
// reaches the worker only through its public entry).
import js from '@eslint/js';
import importX, { createNodeResolver } from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';
import local from './eslint-rules/no-type-cycle.mjs';

const nodeBuiltins = [
  'assert',
  'buffer',
  'child_process',
  'cluster',
  'crypto',
  'dgram',
  'dns',
  'events',
  'fs',
  'fs/promises',
  'http',
  'http2',
  'https',
  'net',
  'os',
  'path',
  'perf_hooks',
  'process',
  'readline',
  'stream',
  'timers',
  'tls',
  'url',
  'util',
  'v8',
  'vm',
  'worker_threads',
  'zlib',
];

/** An import of one of our folders `names` from anywhere below src/ (`../worker`, `../../client/watch`, …). */
const ourFolders = (names) => `^(\\.\\./)+(${names.join('|')})(/|$)`;

/**
 * The layers between folders (STYLE.md "Import rules"), lowest first: domain; contract; activities; worker; client;
 * testing, mcp and cli on top. A folder imports only lower ones, and the worker and the client only through their
 * public entries (`index.ts`; the worker's light `config.ts`); workflow code only as types, the worker passes its
 * path. Together with import-x/no-cycle this keeps folders from importing each other both ways.
 */
const layers = [
  {
    files: ['src/activities/**/*.ts'],
    banned: ['worker', 'client', 'cli', 'testing'],
    message: 'activities import only domain, contract, the devserver helpers and themselves',
  },
  {
    files: ['src/worker/**/*.ts'],
    banned: ['client', 'cli', 'testing'],
    message: 'the worker sits below the client, the CLI and the testing kit',
  },
  {
    files: ['src/client/**/*.ts'],
    banned: ['activities', 'worker', 'cli', 'testing', 'devserver'],
    message: 'the client imports only domain and contract',
  },
  {
    files: ['src/devserver/**/*.ts'],
    // The contract only: the dev server registers the session search attributes (wire names) it defines.
    banned: ['domain', 'activities', 'worker', 'client', 'cli', 'testing'],
    message: 'the dev server helpers stand alone (but may read the wire names of src/contract)',
  },
  {
    files: ['src/cli/**/*.ts'],
    banned: ['activities'],
    message: 'the CLI reaches the worker through its entry',
  },
  { files: ['src/testing/**/*.ts'], banned: ['cli'], message: 'the testing kit does not use the CLI' },
  {
    files: ['src/access/**/*.ts'],
    banned: ['activities', 'worker', 'cli', 'testing', 'devserver', 'viewer', 'mcp'],
    message: 'scoped access sits on the client: the viewer, the MCP server and the CLI use it',
  },
  {
    files: ['src/viewer/**/*.ts'],
    banned: ['activities', 'worker', 'cli', 'testing', 'devserver'],
    message: 'the viewer serves the client: it imports only domain, contract and the client',
  },
  {
    files: ['src/mcp/**/*.ts'],
    banned: ['activities', 'worker', 'cli', 'testing', 'devserver'],
    message: 'the MCP server drives sessions through the client (and reads domain and contract)',
  },
].map(({ files, banned, message }) => ({
  files,
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: [
          { regex: ourFolders(banned), message },
          {
            regex: ourFolders(['workflows']),
            message: 'workflow code is bundled from its path, imported as types only',
            allowTypeImports: true,
          },
          {
            regex: '^(\\.\\./)+(worker/(?!config$)|client/).+',
            message: 'use the public entry: ../worker (or the light ../worker/config), ../client',
          },
        ],
      },
    ],
  },
}));

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      '.venv/**',
      '.venv-py-test/**',
      '.data/**',
      '.cache/**',
      // type-checked by their own projects in `npm run test:consumers`
      'scripts/consumers/**',
      'coverage/**',
      'bench-results/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.mts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
      '@typescript-eslint/no-explicit-any': 'warn',
    },
  },
  {
    files: ['**/*.ts', '**/*.mts'],
    plugins: { 'import-x': importX },
    settings: {
      'import-x/extensions': ['.ts', '.mts', '.js', '.mjs', '.cjs'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts', '.mts'] },
      // Our imports are extensionless relative paths to .ts files (tests and bench run them through vitest / tsc).
      'import-x/resolver-next': [
        createNodeResolver({ extensions: ['.ts', '.mts', '.js', '.mjs', '.cjs', '.json', '.node'] }),
      ],
    },
    // import-x/no-cycle skips type-only imports (it has no option to count them): local/no-type-cycle below does.
    rules: { 'import-x/no-cycle': ['error', { ignoreExternal: true }] },
  },
  {
    // No cycle in src, type-only imports included (issue 34): a type cycle still ties two modules into one room.
    files: ['src/**/*.ts'],
    plugins: { local },
    rules: { 'local/no-type-cycle': 'error' },
  },
  {
    files: ['src/workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            ...nodeBuiltins
              .flatMap((m) => [m, `node:${m}`])
              .map((name) => ({ name, message: 'workflow code is sandboxed: no Node built-ins' })),
            { name: '@temporalio/client', message: 'workflow code uses @temporalio/workflow only' },
            { name: '@temporalio/worker', message: 'workflow code uses @temporalio/workflow only' },
            { name: '@temporalio/activity', message: 'workflow code uses @temporalio/workflow only' },
          ],
          patterns: [
            {
              group: ['../activities', '../activities/*', '!../activities/types'],
              message: 'import activities as types only',
              allowTypeImports: true,
            },
            {
              group: [
                '../worker',
                '../worker/*',
                '../client',
                '../client/*',
                '../cli',
                '../cli/*',
                '../devserver',
                '../devserver/*',
                '../testing',
                '../testing/*',
              ],
              message: 'workflow code may import only domain and contract',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['src/domain/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['@temporalio/*', 'node:*', '../*', '!./*'],
              message: 'the domain is pure: it imports only zod and itself',
            },
          ],
        },
      ],
    },
  },
  {
    // The domain's subfolders (src/domain/driver/, …) import the domain's top level as `../x`, nothing above it.
    files: ['src/domain/*/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['@temporalio/*', 'node:*', '../../*'],
              message: 'the domain is pure: it imports only zod and itself',
            },
          ],
        },
      ],
    },
  },
  ...layers,
  {
    files: ['bin/**/*.js'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: {
        require: 'readonly',
        process: 'readonly',
        console: 'readonly',
        module: 'writable',
        __dirname: 'readonly',
      },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // The bench's peer (bench/peer): plain ES modules on Node with dependencies of their own (bench/peer/node_modules,
    // installed by the bench), outside the TypeScript project.
    files: ['bench/peer/**/*.mjs'],
    languageOptions: {
      sourceType: 'module',
      globals: {
        process: 'readonly',
        console: 'readonly',
        performance: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        URL: 'readonly',
      },
    },
  },
  {
    // The viewer's page (src/viewer/page): ES modules in the browser, Preact + htm through the page's import map.
    files: ['src/viewer/page/**/*.js'],
    languageOptions: {
      sourceType: 'module',
      globals: {
        window: 'readonly',
        document: 'readonly',
        location: 'readonly',
        fetch: 'readonly',
        EventSource: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
      },
    },
  },
);
