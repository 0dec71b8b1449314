import { defineConfig } from 'tsup';

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    express: 'adapters/express.ts',
    hono: 'adapters/hono.ts',
    node: 'adapters/node.ts',
    fetch: 'adapters/fetch.ts',
    redis: 'src/stores/redis.ts',
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
  external: ['express', 'hono', 'ioredis', 'bullmq', '@hono/node-server'],
});
