// Lint: TypeScript rules with type information (floating promises are errors), the Temporal
// workflow rules (no Node built-ins or I/O modules in code that runs in the workflow sandbox),
// the layer boundaries of the house (README "Layout"), and no import cycles.
import js from '@eslint/js';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import importX from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

/** Code that runs inside Temporal's deterministic workflow sandbox. */
const WORKFLOW_CODE = [
  'workflows/**/*.ts',
  'contract/**/*.ts',
  'jobs/*/workflow.ts',
  'jobs/*/definition.ts',
  'job-api/define.ts',
  'job-api/define-triggers.ts',
  'jobs/*/messages.ts',
  'test/fixtures/jobs/*/workflow.ts',
  'test/fixtures/jobs/*/definition.ts',
  'scripts/drill/deploy-build-b/workflow.ts',
];

const NODE_BUILTINS = [
  'assert',
  'buffer',
  'child_process',
  'cluster',
  'crypto',
  'dgram',
  'dns',
  'events',
  'fs',
  'http',
  'http2',
  'https',
  'net',
  'os',
  'path',
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

/** Folders and what they may import (value imports; `import type` of activities is allowed in workflows). */
const layer = (target, from, message) => ({ target, from, message });
const ZONES = [
  layer(
    './contract',
    [
      './lib',
      './store',
      './services',
      './server',
      './activities',
      './workflows',
      './jobs',
      './job-api',
      './workers',
      './scripts',
      './client',
      './simulator',
    ],
    'contract/ is the bottom layer: it imports nothing of ours',
  ),
  layer(
    './lib',
    [
      './store',
      './services',
      './server',
      './activities',
      './workflows',
      './jobs',
      './job-api',
      './workers',
      './scripts',
      './client',
      './simulator',
    ],
    'lib/ holds pure helpers: it may import only contract/',
  ),
  layer(
    './store',
    ['./services', './server', './activities', './workflows', './jobs', './job-api', './workers', './scripts', './client', './simulator'],
    'store/ owns the tables: it may import lib/ and contract/',
  ),
  layer(
    './job-api/!(index|workflow).ts',
    ['./store', './services', './server', './workflows', './jobs', './workers', './scripts', './client', './simulator'],
    'job-api/ is the job-definition API: contract/ and lib/ only',
  ),
  layer(
    './services',
    ['./server', './activities', './jobs', './workers', './scripts', './client', './simulator'],
    'services/ are the use cases: store/, lib/, contract/, job-api/ (never HTTP or Temporal activity code)',
  ),
  layer(
    './activities',
    ['./server', './jobs', './workers', './scripts', './client', './simulator'],
    'activities/ are Temporal activity shells over services/ and store/',
  ),
  layer(
    './server/!(main).ts',
    ['./activities', './jobs', './workers', './scripts', './simulator'],
    'server/ is HTTP only: it calls services/',
  ),
  layer('./workers/!(main).ts', ['./server', './scripts', './simulator'], 'workers/ wires activities and workflows, not HTTP'),
  layer(
    './jobs',
    [
      './contract/**',
      './lib/**',
      './store/**',
      './services/**',
      './server/**',
      './activities/**',
      './workflows/**',
      './job-api/!(index|workflow).ts',
      './workers/**',
      './scripts/**',
      './client/**',
      './simulator/**',
      './testing/**',
    ],
    'the shipped job types are written as a team writes its own: only the faces durable-jobs/jobs (job-api/index.ts) and durable-jobs/jobs/workflow (job-api/workflow.ts)',
  ),
  layer(
    './simulator',
    [
      './contract',
      './lib',
      './store',
      './services',
      './server',
      './activities',
      './workflows',
      './jobs',
      './job-api',
      './workers',
      './client',
    ],
    'the simulator stands alone: it imports nothing of the product',
  ),
  layer(
    './scripts/lib',
    ['./store', './services', './server', './activities', './workflows', './jobs', './job-api', './workers', './client'],
    'scripts/lib/ helpers (stack processes) use only lib/ and contract/ of the product',
  ),
];

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', '.data/**', 'bench/**', 'test/fixtures/pre-move/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    plugins: { 'import-x': importX },
    settings: { 'import-x/resolver-next': [createTypeScriptImportResolver({ project: './tsconfig.json' })] },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
      '@typescript-eslint/no-explicit-any': 'off',
      'import-x/no-cycle': 'error',
      'import-x/no-restricted-paths': ['error', { zones: ZONES }],
    },
  },
  {
    files: [
      'contract/**/*.ts',
      'job-api/**/*.ts',
      'jobs/**/*.ts',
      'workflows/**/*.ts',
      'activities/**/*.ts',
      'services/**/*.ts',
      'store/**/*.ts',
      'lib/**/*.ts',
      'server/**/*.ts',
      'workers/**/*.ts',
      'client/**/*.ts',
    ],
    rules: { 'max-lines': ['error', { max: 400, skipBlankLines: true, skipComments: true }] },
  },
  {
    files: ['workflows/**/*.ts', 'jobs/*/workflow.ts'],
    rules: { 'max-lines': ['error', { max: 150, skipBlankLines: true, skipComments: true }] },
  },
  {
    files: WORKFLOW_CODE,
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [
            ...NODE_BUILTINS.flatMap((m) => [m, `node:${m}`]).map((name) => ({
              name,
              message: 'workflow code runs in the Temporal sandbox: no Node built-ins',
            })),
            ...['pg', 'fastify', 'pino', 'prom-client', '@temporalio/activity', '@temporalio/client', '@temporalio/worker'].map((name) => ({
              name,
              message: 'workflow code runs in the Temporal sandbox: no I/O modules',
            })),
          ],
          patterns: [
            {
              group: ['**/activities/*', '**/activities.js', './activities.js'],
              allowTypeImports: true,
              message: 'workflows import activities as types only (proxyActivities)',
            },
            {
              group: ['**/store/*', '**/services/*', '**/server/*', '**/lib/*', '**/workers/*'],
              message: 'workflow code imports only contract/, job-api/define, workflows/ and @temporalio/workflow',
            },
          ],
        },
      ],
    },
  },
  {
    // The operator console runs in the browser, as served (no build step).
    files: ['console/**/*.js'],
    languageOptions: {
      sourceType: 'module',
      globals: Object.fromEntries(
        [
          'window',
          'document',
          'location',
          'sessionStorage',
          'fetch',
          'FormData',
          'URLSearchParams',
          'Node',
          'setInterval',
          'clearInterval',
        ].map((g) => [g, 'readonly']),
      ),
    },
  },
  {
    files: ['scripts/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts', 'vitest.config.ts'],
    rules: { 'no-console': 'off' },
  },
);
