/**
 * Without `telemetry`, the core never loads OpenTelemetry (docs/telemetry.md; the optional peers load only on their own subpaths): a process that
 * refuses every @opentelemetry/* import still receives, queues and runs deliveries.
 */

import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const fixtures = fileURLToPath(new URL('./fixtures/', import.meta.url));

/** Run the delivery script under the hook; its stdout, or the error it failed with. */
async function deliverWithoutOpenTelemetry(...args: string[]) {
  return run(
    process.execPath,
    ['--import', 'tsx', '--import', './forbid-otel.mjs', './deliver.ts', ...args],
    { cwd: fixtures, timeout: 20_000 },
  ).then(
    ({ stdout }) => ({ ok: true as const, stdout }),
    (error: { stderr?: string }) => ({ ok: false as const, stderr: error.stderr ?? '' }),
  );
}

describe('the core without telemetry', () => {
  it('handles, queues and runs deliveries, and watches them, without loading @opentelemetry/*', async () => {
    const result = await deliverWithoutOpenTelemetry();
    expect(result).toEqual({
      ok: true,
      stdout: `${JSON.stringify(['queued', 'processed', 'completed', 'ok'])}\n`,
    });
  });

  it('is checked by a hook that does refuse schoolhooks/otel', async () => {
    const result = await deliverWithoutOpenTelemetry('otel');
    expect(result.ok).toBe(false);
    expect(result).toMatchObject({
      stderr: expect.stringContaining('OpenTelemetry was loaded: @opentelemetry/api'),
    });
  });
});
