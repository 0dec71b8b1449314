/**
 * src/internal.ts, the parts of the receiver the bench and tests take apart, stays out of the
 * package: no subpath of package.json's `exports` and no build entry leads to it, and no module
 * of the package imports it (so it reaches no bundle and no public .d.ts).
 */

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import pkg from '../../package.json' with { type: 'json' };

const root = join(import.meta.dirname, '..', '..');

/** Every .ts file under `dir`, relative to the repository. */
function sources(dir: string): string[] {
  return readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => join(dir, file));
}

describe('the test-only entry src/internal.ts', () => {
  it('is no subpath of the package and no entry of the build', () => {
    const targets = JSON.stringify(pkg.exports);
    expect(Object.keys(pkg.exports).some((subpath) => subpath.includes('internal'))).toBe(false);
    expect(targets).not.toContain('internal');
    expect(readFileSync(join(root, 'tsup.config.ts'), 'utf8')).not.toContain('internal');
  });

  it('is imported by no module of the package, only by the bench and tests', () => {
    const importers = sources('src').filter((file) =>
      /from '\.{1,2}\/(?:[\w-]+\/)*internal\.js'/.test(readFileSync(join(root, file), 'utf8')),
    );
    expect(importers).toEqual([]);
    const benchImporters = sources('bench').filter((file) =>
      readFileSync(join(root, file), 'utf8').includes("from '../src/internal.js'"),
    );
    expect(benchImporters.sort()).toEqual(['bench/fetch-steps.ts', 'bench/same-work.ts']);
  });
});

describe("the receiver's own envelope parse", () => {
  it('is no export of the package, though it shares a module with the events it exports', async () => {
    const api: Record<string, unknown> = await import('../../src/index.js');
    for (const name of ['parseEnvelope', 'timestampMsOf', 'commonFormMsOf', 'TIMESTAMP_PATTERN']) {
      expect(api, name).not.toHaveProperty(name);
    }
    expect(api).toHaveProperty('envelopeSchema');
    expect(api).toHaveProperty('validateEventData');
  });
});
