/**
 * The layout of src/ shows the architecture (docs/maintainers/architecture.md): the package's
 * entries and a few shared files at its root, every other module in the folder of its part, and
 * each folder saying what it holds, in an index.ts's module comment or a README.md.
 */

import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const src = join(import.meta.dirname, '..', '..', 'src');
const MAX_ROOT_FILES = 6;

describe('the layout of src/', () => {
  it(`keeps no more than ${MAX_ROOT_FILES} files at its root`, () => {
    const files = readdirSync(src, { withFileTypes: true }).filter((entry) => entry.isFile());
    expect(files.length, files.map((entry) => entry.name).join(', ')).toBeLessThanOrEqual(
      MAX_ROOT_FILES,
    );
  });

  it('gives every folder a word on what it holds', () => {
    const silent = readdirSync(src, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name)
      .filter((folder) => {
        const readme = join(src, folder, 'README.md');
        if (existsSync(readme)) return readFileSync(readme, 'utf8').trim().split('\n').length < 3;
        const index = join(src, folder, 'index.ts');
        return (
          !existsSync(index) ||
          !/^(?:#!.*\n)?\/\*\*[\s\S]*?@module/.test(readFileSync(index, 'utf8'))
        );
      });
    expect(silent).toEqual([]);
  });
});
