import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const frameworks = [
  'express',
  'hono',
  'hono/*',
  '@hono/*',
  'ioredis',
  'bullmq',
  'bullmq/*',
  'node:http',
  'http',
  'node:https',
];

export default tseslint.config(
  { ignores: ['dist', 'coverage', 'node_modules'] },
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
        crypto: 'readonly',
        ReadableStream: 'readonly',
        TextEncoder: 'readonly',
      },
    },
  },
  {
    // The core stays framework-free: only the Redis store (types), the BullMQ inbox, the testing
    // toolkit and the CLI may reach for servers and clients.
    files: ['src/**/*.ts'],
    ignores: ['src/stores/redis.ts', 'src/inbox/bullmq.ts', 'src/testing/**', 'src/cli/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: frameworks.map((group) => ({
            group: [group],
            message: 'The core is framework-free.',
          })),
        },
      ],
    },
  },
  {
    // schoolhooks/bullmq: BullMQ and ioredis, and still no web framework.
    files: ['src/inbox/bullmq.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: frameworks
            .filter((group) => !group.startsWith('bullmq') && group !== 'ioredis')
            .map((group) => ({ group: [group], message: 'schoolhooks/bullmq is framework-free.' })),
        },
      ],
    },
  },
);
