import js from '@eslint/js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import tseslint from 'typescript-eslint';

const { peerDependenciesMeta = {} } = JSON.parse(
  readFileSync(join(import.meta.dirname, 'package.json'), 'utf8'),
);

/**
 * The optional peers, as package.json lists them (OpenTelemetry has a rule of its own, below),
 * each with its subpaths; Hono's servers; Node's HTTP servers.
 */
const frameworks = [
  ...Object.entries(peerDependenciesMeta)
    .filter(([name, meta]) => meta.optional && !name.startsWith('@opentelemetry/'))
    .flatMap(([name]) => [name, `${name}/*`]),
  '@hono/*',
  'node:http',
  'http',
  'node:https',
];

const frameworkFree = frameworks.map((group) => ({
  group: [group],
  message: 'The core is framework-free.',
}));

const openTelemetryFree = [
  {
    group: ['@opentelemetry/*'],
    message: 'Only src/otel imports OpenTelemetry: the core holds the Telemetry interface alone.',
  },
];

export default tseslint.config(
  {
    ignores: [
      'dist',
      'coverage',
      'node_modules',
      'reports',
      'docs-api',
      '.docs-run',
      '.stryker-tmp',
      'src/events/data-validators.generated.ts',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
    },
  },
  {
    files: ['examples/**/*.js', 'scripts/**/*.mjs', 'test/**/*.mjs', 'bench/**/*.mjs'],
    languageOptions: {
      globals: {
        console: 'readonly',
        process: 'readonly',
        URL: 'readonly',
        Request: 'readonly',
        Response: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        TextDecoder: 'readonly',
        crypto: 'readonly',
        ReadableStream: 'readonly',
        TextEncoder: 'readonly',
        fetch: 'readonly',
      },
    },
  },
  {
    // The inspector's page script runs in the browser, as a plain script. Its names are checked
    // by tsc against the DOM's types (tsconfig.inspector.json), so no list of globals here.
    files: ['src/cli/inspector/assets/**/*.js'],
    languageOptions: { sourceType: 'script' },
    rules: { 'no-undef': 'off' },
  },
  {
    // The core stays framework-free: only the Redis and Postgres stores (types), the BullMQ
    // inbox, the testing toolkit and the CLI may reach for servers and clients. Only src/otel may
    // import OpenTelemetry (README: Telemetry).
    files: ['src/**/*.ts'],
    ignores: [
      // Each with the parts it is split into (src/stores/postgres-table.ts, …).
      'src/stores/redis{,-*}.ts',
      'src/inbox/bullmq{,-*}.ts',
      'src/stores/postgres{,-*}.ts',
      'src/testing/**',
      'src/cli/**',
      'src/otel/**',
    ],
    rules: {
      'no-restricted-imports': ['error', { patterns: [...frameworkFree, ...openTelemetryFree] }],
    },
  },
  {
    files: ['src/otel/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: frameworkFree }] },
  },
  {
    files: [
      'src/stores/redis{,-*}.ts',
      'src/testing/**/*.ts',
      'src/cli/**/*.ts',
      'adapters/**/*.ts',
    ],
    rules: { 'no-restricted-imports': ['error', { patterns: openTelemetryFree }] },
  },
  {
    // schoolhooks/bullmq: BullMQ and ioredis, and still no web framework nor OpenTelemetry.
    files: ['src/inbox/bullmq{,-*}.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...frameworks
              .filter((group) => !/^(?:bullmq|ioredis)(?:\/|$)/.test(group))
              .map((group) => ({
                group: [group],
                message: 'schoolhooks/bullmq is framework-free.',
              })),
            ...openTelemetryFree,
          ],
        },
      ],
    },
  },
);
