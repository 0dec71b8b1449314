import { cpSync } from 'node:fs';
import { defineConfig } from 'tsup';
import pkg from './package.json' with { type: 'json' };

/** The entries that are not an adapter; every other subpath of package.json is `adapters/<name>.ts`. */
const CORE_ENTRIES: Record<string, string> = {
  index: 'src/index.ts',
  redis: 'src/stores/redis.ts',
  postgres: 'src/postgres.ts',
  otel: 'src/otel/index.ts',
  bullmq: 'src/inbox/bullmq.ts',
  api: 'src/api/index.ts',
  links: 'src/links/index.ts',
  testing: 'src/testing/index.ts',
  cli: 'src/cli/index.ts',
};

const adapterEntries = Object.keys(pkg.exports)
  .map((subpath) => subpath.slice(2))
  .filter((name) => name !== '' && name !== 'package.json' && !(name in CORE_ENTRIES))
  .map((name) => [name, `adapters/${name}.ts`]);

export default defineConfig({
  entry: { ...CORE_ENTRIES, ...Object.fromEntries(adapterEntries) },
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
  // The peers package.json lists, and their subpaths: loaded from the user's node_modules.
  external: Object.keys(pkg.peerDependencies),
  // The inspector's page (`listen --ui`) ships as plain files next to the bundles, read at runtime.
  async onSuccess() {
    cpSync('src/cli/inspector/assets', 'dist/inspector', { recursive: true });
  },
});
