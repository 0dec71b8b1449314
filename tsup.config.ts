import { cpSync } from 'node:fs';
import { defineConfig } from 'tsup';
import pkg from './package.json' with { type: 'json' };
import { ADAPTERS, CORE_ENTRIES, sourceOf } from './scripts/entries.mjs';

export default defineConfig({
  // Every subpath of package.json: its own source, or for an adapter `src/adapters/<name>.ts`.
  entry: { ...CORE_ENTRIES, ...Object.fromEntries(ADAPTERS.map((name) => [name, sourceOf(name)])) },
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
