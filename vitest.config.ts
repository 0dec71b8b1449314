import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // CI also writes the results as JSON, for .ci/run's one-line summary.
    reporters: process.env.CI === 'true' ? ['default', 'json'] : ['default'],
    outputFile: { json: '.ci-results/vitest.json' },
    // A receiver without a logger writes its failures to the console; tests provoke thousands.
    onConsoleLog: (log) => !log.startsWith('schoolhooks: '),
    // Most files wait on Redis, Postgres, child processes or timers rather than the CPU: vitest's
    // default (cores - 1) runs one file at a time on a 2-core CI machine, 902 s of tests there
    // against 459 s with three at once (every file passing both ways).
    maxWorkers: Math.max(availableParallelism(), 3),
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // An adapter's test file holds its type test too (test/package/adapters.test.ts), so adding an
    // adapter adds one test file: it runs, and its types are checked.
    typecheck: { enabled: true, include: ['test/**/*.test-d.ts', 'test/adapters/*.test.ts'] },
    // CI reports the coverage of the core and the adapters (STYLE.md); locally it is opt-in.
    coverage: {
      enabled: process.env.CI === 'true',
      provider: 'v8',
      // TypeScript only: the inspector's page assets (HTML, CSS, browser JS) are not the core.
      include: ['src/**/*.ts', 'src/adapters/**/*.ts'],
      reporter: ['text-summary'],
    },
  },
});
