import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);

describe('npm run demo (the first repository command of the README)', () => {
  it('delivers every fixture, loses the invalid payload directly, and keeps and replays it with an inbox', async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'examples/demo.ts'], {
      timeout: 60_000,
    });
    expect(stdout).toContain('PaymentCompleted               attempt 5  422 invalid_payload');
    expect(stdout).toMatch(
      /15 delivered, 1 failed \(the invalid payload\); 14 processed, 0 processed twice/,
    );
    expect(stdout).toContain('202 queued');
    expect(stdout).toMatch(
      /dead letter {2}PaymentCompleted .*\n {4}invalid_payload: .*totalAmount/,
    );
    expect(stdout).toContain('replayed 1 dead letter after the fix: 2 of 2 payments processed');
  }, 60_000);
});
