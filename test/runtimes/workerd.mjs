/**
 * Runs the smoke suite inside workerd (Cloudflare's runtime, through Miniflare 3): bundles
 * `worker-entry.mjs` the way a Workers build would (browser/worker conditions, no Node built-ins,
 * no `nodejs_compat`), posts the fixtures to it with `dispatchFetch`, and prints its report.
 * @module
 */

import { build } from 'esbuild';
import { Miniflare } from 'miniflare';
import { loadFixtures } from './fixtures.mjs';
import { REPORT_PREFIX } from './smoke.mjs';

const bundle = await build({
  entryPoints: [new URL('worker-entry.mjs', import.meta.url).pathname],
  bundle: true,
  write: false,
  format: 'esm',
  // What wrangler uses: a Worker resolves packages as a browser-like platform would.
  platform: 'browser',
  conditions: ['workerd', 'worker', 'browser'],
  target: 'es2022',
  metafile: true,
  logLevel: 'silent',
});
const [output] = bundle.outputFiles;
if (output === undefined) throw new Error('esbuild produced no worker bundle');
// A Node built-in left for workerd to resolve would fail without nodejs_compat: there must be none.
const imports = Object.values(bundle.metafile.outputs).flatMap((out) => out.imports);
if (imports.length > 0) {
  throw new Error(`the worker bundle imports ${imports.map((i) => i.path).join(', ')}`);
}

const mf = new Miniflare({
  modules: true,
  script: output.text,
  compatibilityDate: '2024-09-23',
});
try {
  const response = await mf.dispatchFetch('http://smoke.local/', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(loadFixtures()),
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`the worker answered ${response.status}: ${text}`);
  const report = JSON.parse(text);
  report.runtime = `${report.runtime} (Miniflare, bundle ${(output.contents.byteLength / 1024).toFixed(0)} KiB)`;
  console.log(REPORT_PREFIX + JSON.stringify(report));
} finally {
  await mf.dispose();
}
