// Lint rules. The sandbox line (STYLE.md 1): workflow code may not import Node built-ins, the Temporal client,
// worker or activity packages, or our I/O folders; a bundling test enforces the same at run time.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

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

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      '.venv/**',
      '.venv-py-test/**',
      '.data/**',
      '.cache/**',
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
);
