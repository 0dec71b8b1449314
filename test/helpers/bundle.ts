/**
 * Child-process scripts for the crash tests, bundled once with esbuild: a test that kills and
 * restarts a receiver dozens of times cannot afford tsx compiling the sources at every start
 * (about 1.5 s of CPU each on a 2-core machine; a bundle starts in about 0.2 s).
 * @module
 */

import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

/** A bundled script, and how to remove it. */
export interface BundledScript {
  /** The `.mjs` file to run with `node`. */
  readonly file: string;
  remove(): Promise<void>;
}

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Bundles `entry` (TypeScript, with the project's sources it imports) into one ES module. The
 * packages it imports (pg, ioredis) stay imports: the bundle is written under the project's
 * `node_modules/.cache`, so Node finds them where `npm ci` put them.
 */
export async function bundleScript(entry: string): Promise<BundledScript> {
  const cache = join(ROOT, 'node_modules', '.cache');
  await mkdir(cache, { recursive: true });
  const dir = await mkdtemp(join(cache, 'schoolhooks-test-script-'));
  const file = join(dir, 'script.mjs');
  await build({
    entryPoints: [entry],
    outfile: file,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    logLevel: 'error',
  });
  return { file, remove: () => rm(dir, { recursive: true, force: true }) };
}
