/**
 * The fixtures the smoke suite sends, read from `fixtures/` (Node, Bun and Deno all have node:fs;
 * the workerd driver reads them here and posts them to the worker).
 * @module
 */

import { readdirSync, readFileSync } from 'node:fs';

const root = new URL('../../fixtures/', import.meta.url);

/** @returns {import('./smoke.mjs').Fixtures} */
export function loadFixtures() {
  const valid = readdirSync(root)
    .filter((file) => file.endsWith('.json'))
    .sort()
    .map((file) => ({ name: file.slice(0, -'.json'.length), envelope: read(file) }));
  /** @type {{ file: string, outcome: string }[]} */
  const manifest = JSON.parse(readFileSync(new URL('invalid/manifest.json', root), 'utf8'));
  const invalidPayload = manifest
    .filter(({ outcome }) => outcome === 'invalid_payload')
    .map(({ file }) => ({ name: `invalid/${file}`, envelope: read(`invalid/${file}`) }));
  if (valid.length === 0 || invalidPayload.length === 0) {
    throw new Error(`no fixtures found in ${root.pathname}`);
  }
  return { valid, invalidPayload };
}

/** An envelope's event and data; the suite stamps each delivery with a fresh time and key. */
function read(/** @type {string} */ file) {
  const { event, data } = JSON.parse(readFileSync(new URL(file, root), 'utf8'));
  return { event, data };
}
