import { cpSync } from 'node:fs';
import { defineConfig } from 'tsup';

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    express: 'adapters/express.ts',
    hono: 'adapters/hono.ts',
    node: 'adapters/node.ts',
    fetch: 'adapters/fetch.ts',
    redis: 'src/stores/redis.ts',
    postgres: 'src/postgres.ts',
    otel: 'src/otel/index.ts',
    bullmq: 'src/inbox/bullmq.ts',
    api: 'src/api/index.ts',
    links: 'src/links/index.ts',
    testing: 'src/testing/index.ts',
    cli: 'src/cli/index.ts',
  },
  format: ['esm', 'cjs'],
  dts: true,
  // One copy of the core shared by every subpath, in both formats, so error classes and
  // schemas keep their identity across `schoolhooks` and `schoolhooks/*`.
  splitting: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
  // The inspector finds its page next to its bundle with import.meta.url, in the CJS build too.
  shims: true,
  external: [
    'express',
    'hono',
    'ioredis',
    'bullmq',
    'pg',
    'pg-boss',
    '@hono/node-server',
    '@opentelemetry/api',
  ],
  // The inspector's page (`listen --ui`) ships as plain files next to the bundles, read at runtime.
  async onSuccess() {
    cpSync('src/cli/inspector/assets', 'dist/inspector', { recursive: true });
  },
});
