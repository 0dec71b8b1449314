import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const frameworks = [
  'express',
  'hono',
  'hono/*',
  '@hono/*',
  'ioredis',
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
        fetch: 'readonly',
      },
    },
  },
  {
    // The inspector's page script runs in the browser, as a plain script.
    files: ['src/cli/inspector/assets/**/*.js'],
    languageOptions: {
      sourceType: 'script',
      globals: {
        document: 'readonly',
        location: 'readonly',
        navigator: 'readonly',
        fetch: 'readonly',
        EventSource: 'readonly',
        HTMLElement: 'readonly',
        HTMLSelectElement: 'readonly',
        addEventListener: 'readonly',
        getSelection: 'readonly',
        innerHeight: 'readonly',
      },
    },
  },
  {
    // The core stays framework-free: only the Redis store (types), the testing toolkit and the CLI
    // may reach for servers and clients.
    files: ['src/**/*.ts'],
    ignores: ['src/stores/redis.ts', 'src/testing/**', 'src/cli/**'],
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
);
