// The hand-written mutants (scripts/mutants.json, run by `npm run mutants`, not in CI) stay
// runnable: each `find` text is in its file exactly once, each named test file exists, and
// docs/maintainers/mutants.md is generated from the list. A file changed under a mutant fails
// here, at once, rather than at the next slow run before a release.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

it('every hand-written mutant still applies, and its page is generated from the list', async () => {
  const run = promisify(execFile);
  const { stdout } = await run(process.execPath, ['scripts/mutants.mjs', '--check'], {
    cwd: new URL('..', import.meta.url),
  }).catch((error: { stdout: string; stderr: string }) => {
    throw new Error(`npm run mutants -- --check failed:\n${error.stderr}${error.stdout}`);
  });
  expect(stdout).toMatch(/^\d+ mutants: every find text once, docs in sync\.$/m);
});
