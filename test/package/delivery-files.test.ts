/**
 * How many files of src/ one delivery runs code in (docs/maintainers/architecture.md, "A
 * delivery's path"): scripts/delivery-files.ts sends a PaymentCompleted through Express on
 * memoryStore and reads V8's coverage of that delivery alone. A budget, like the function length:
 * a new module on the hot path is a choice made in this file, not by accident.
 */

import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const MAX_FILES = 15;

describe('one delivery through Express', () => {
  it(`runs code in at most ${MAX_FILES} files of src/`, async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', 'scripts/delivery-files.ts', '--json'],
      { cwd: root },
    );
    const files = JSON.parse(stdout) as string[];
    // The path itself, so an empty coverage cannot pass.
    expect(files).toEqual(
      expect.arrayContaining([
        'src/adapters/express.ts',
        'src/receiving/pipeline.ts',
        'src/platform/signature.ts',
        'src/stores/memory.ts',
      ]),
    );
    expect(files.length, files.join('\n')).toBeLessThanOrEqual(MAX_FILES);
  }, 60_000);
});
