/**
 * This checkout's `receiver.handle()` against another build's, both in one process: the closest
 * comparison of two builds this host gives (over HTTP, `npm run bench` with `BENCH_BASELINE`, a
 * single round ranges over ±20 %; here ±5 %). Each build's `src/` is bundled as the package is
 * (no tsx transform in the measured code), and `bench/builds-ab-run.ts` alternates rounds of the
 * same signed bodies between the two, pinned to one core when taskset exists. It prints the
 * median over the rounds of this build's CPU per delivery divided by the baseline's: below 1.0,
 * this build is cheaper.
 *
 * `npx tsx bench/builds-ab.ts <baseline checkout> [small|large] [--redis] [--reader]`
 * - the baseline checkout: a git worktree of the build before, say
 *   (`git worktree add --detach ../before HEAD~1`); it needs `src/index.ts` exporting
 *   `createReceiver` and `memoryStore`, and `src/stores/redis.ts` exporting `redisStore`; its
 *   packages come from this checkout's node_modules;
 * - `--redis`: on redisStore (`REDIS_URL`, default redis://127.0.0.1:6379), else memoryStore;
 * - `--reader`: the body given as a reader, as every adapter gives it, else as bytes;
 * - `AB_OPTIONS` (JSON): receiver options for both builds, e.g. `{"recordEntities":false}`;
 *   `AB_OPTIONS_B`: for this build only, over those (two settings of one build: give this
 *   checkout as the baseline);
 * - `AB_ROUNDS` (default 20) and `AB_DELIVERIES` per build per round (default 20 000 small,
 *   8 000 large; a tenth of that on Redis, whose deliveries wait for it one after the other).
 * @module
 */

import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';
import { bundleScript, type BundledScript } from '../test/helpers/bundle.js';
import { pinned } from './measure.js';
import type { ABSettings } from './builds-ab-run.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const [baseline] = args.filter(
  (arg) => !arg.startsWith('--') && arg !== 'small' && arg !== 'large',
);
if (baseline === undefined) {
  throw new Error(
    'usage: npx tsx bench/builds-ab.ts <baseline checkout> [small|large] [--redis] [--reader]',
  );
}
const kind = args.includes('large') ? 'large' : 'small';
const store = args.includes('--redis') ? 'redis' : 'memory';
const defaultDeliveries = (kind === 'small' ? 20_000 : 8_000) / (store === 'redis' ? 10 : 1);
const settings: ABSettings = {
  kind,
  store,
  deliveries: Number(process.env['AB_DELIVERIES'] ?? defaultDeliveries),
  rounds: Number(process.env['AB_ROUNDS'] ?? 20),
  options: JSON.parse(process.env['AB_OPTIONS'] ?? '{}') as Record<string, unknown>,
  optionsB: JSON.parse(process.env['AB_OPTIONS_B'] ?? '{}') as Record<string, unknown>,
  reader: args.includes('--reader'),
};

// Under node_modules, so the bundles find this checkout's packages.
const out = join(root, 'node_modules', '.cache', 'schoolhooks-bench', 'builds-ab');
mkdirSync(out, { recursive: true });

/** `checkout`'s receiver and stores, bundled as one module (its entry written to `<name>-entry.ts`). */
function bundleBuild(checkout: string, name: string): Promise<BundledScript> {
  const src = join(resolve(checkout), 'src');
  const entry = join(out, `${name}-entry.ts`);
  writeFileSync(
    entry,
    `export { createReceiver, memoryStore } from ${JSON.stringify(join(src, 'index.ts'))};\n` +
      `export { redisStore } from ${JSON.stringify(join(src, 'stores', 'redis.ts'))};\n`,
  );
  return bundleScript(entry);
}

const bundles = await Promise.all([
  bundleBuild(baseline, 'baseline'),
  bundleBuild(root, 'current'),
  bundleScript(join(root, 'bench', 'builds-ab-run.ts')),
]);
const [before, current, runner] = bundles.map(({ file }) => file);
const node = [runner!, before!, current!, JSON.stringify(settings)];
const [command, argv] = pinned(0, process.execPath, node);
// From the root: bench/bodies.ts finds fixtures/ under the working directory once bundled.
const run = spawnSync(command, argv, { cwd: root, stdio: 'inherit' });
await Promise.all(bundles.map((bundle) => bundle.remove()));
process.exitCode = run.status ?? 1;
