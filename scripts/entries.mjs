/**
 * The package's entries, read from package.json `exports`: the subpaths built from a source of
 * their own (listed here), and the adapters, every other subpath `./<name>` being built from
 * `src/adapters/<name>.ts`. tsup.config.ts, the test hooks that run examples on the sources and the
 * tests that hold each adapter to its suite, type test, example and docs page all read it, so an
 * adapter is added by its files and one entry of package.json.
 * @module
 */

import { readFileSync } from 'node:fs';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));

/** The entries that are not an adapter, by their name in dist/ (`.` is `index`), and their source. */
export const CORE_ENTRIES = {
  index: 'src/index.ts',
  redis: 'src/stores/redis.ts',
  postgres: 'src/postgres.ts',
  otel: 'src/telemetry/otel/index.ts',
  bullmq: 'src/inbox/bullmq.ts',
  api: 'src/api/index.ts',
  reconcile: 'src/reconcile/index.ts',
  watchdog: 'src/watchdog/index.ts',
  links: 'src/links/index.ts',
  testing: 'src/testing/index.ts',
  cli: 'src/cli/index.ts',
};

/** The adapters' names, in the order of package.json `exports`: `./express` is `express`. */
export const ADAPTERS = Object.keys(pkg.exports)
  .map((subpath) => subpath.slice(2))
  .filter((name) => name !== '' && name !== 'package.json' && !(name in CORE_ENTRIES));

/** The source of an entry, by its name in dist/: a core entry's own, else `src/adapters/<name>.ts`. */
export function sourceOf(name) {
  return CORE_ENTRIES[name] ?? `src/adapters/${name}.ts`;
}
