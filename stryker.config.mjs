// @ts-check
/**
 * Mutation testing (`npm run mutate`): StrykerJS plants small bugs in the modules where a bug
 * loses or doubles an event or leaks a secret, and checks that some test fails for each. See
 * docs/maintainers/mutation-testing.md for how to read and extend the results, and
 * docs/maintainers/mutants.md for the bugs Stryker cannot plant (`npm run mutants`).
 *
 * Made for a small shared machine: one test runner at a time, only the tests that cover a mutant,
 * and incremental runs that retest only what changed since the last run of the same module set.
 *
 * One module at a time: `npm run mutate -- --mutate src/platform/signature.ts`.
 */

import process from 'node:process';

/** The modules where a bug loses or doubles an event or leaks a secret. */
const critical = [
  'src/platform/signature.ts',
  'src/utils/crypto.ts',
  'src/receiving/request.ts',
  'src/platform/events/index.ts',
  'src/receiving/pipeline.ts',
  // Every kind of key, and which entities a webhook or a reconcile run handled (a bug merges two
  // keys, or recovers an entity twice or never).
  'src/keys/delivery-key.ts',
  'src/reconcile/*.ts',
  // The one table of what each outcome answers, and the start-up rules (dedupTtlMs >=
  // maxEventAgeMs); the runner of the steps is in pipeline.ts.
  'src/receiving/outcome.ts',
  'src/receiving/receiver-settings.ts',
  'src/receiving/run-handlers.ts',
  // The time bounds every store and inbox call runs under, and the wait for a client to connect.
  'src/utils/bounded-calls.ts',
  'src/utils/deadlines.ts',
  // Every store and what it is made of: its keys' encoding, scripts, table and claims.
  'src/stores/*.ts',
  'src/inbox/*.ts',
  'src/adapters/*.ts',
];

/**
 * A name for the module set given with `--mutate` (or `all`), so each set keeps its own
 * incremental file and report: running one module never forgets the results of another.
 */
function runName(argv) {
  const at = argv.findIndex((arg) => arg === '--mutate' || arg === '-m');
  const value = at === -1 ? undefined : argv[at + 1];
  if (value === undefined) return 'all';
  // Ranges (`file.ts:12:1-14:500`) name their files only, so the name stays a short file name.
  const entries = value.split(',');
  const files = [...new Set(entries.map((entry) => entry.replace(/:\d.*$/, '')))];
  const ranged = entries.some((entry) => /:\d/.test(entry));
  return `${files.join(',')}${ranged ? ',ranges' : ''}`
    .replace(/\.ts\b/g, '')
    .replace(/[^A-Za-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
}

const name = runName(process.argv);

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
const config = {
  testRunner: 'vitest',
  vitest: {
    // The suite without the tests that spawn processes or a browser: a mutant lives only in the
    // test runner's own process, so a child process never sees it.
    configFile: 'vitest.mutation.config.ts',
    // Only the test files that import the mutated module, directly or not.
    related: true,
  },
  mutate: critical,
  // Only the tests that cover a mutant run for it.
  coverageAnalysis: 'perTest',
  // The machine is shared: one test runner, and generous time before a mutant counts as a hang.
  concurrency: 1,
  timeoutMS: 20_000,
  timeoutFactor: 2.5,
  dryRunTimeoutMinutes: 20,
  // A mutant of a module-level constant is only seen by reloading every test file: on this
  // machine that is minutes per mutant. `--ignoreStatic false` tests them too.
  // With `--coverageAnalysis all` (every test for every mutant: for code that runs outside the
  // test that caused it, such as a server's request handler, which per-test coverage can
  // misattribute) Stryker refuses ignoreStatic, so it is off there.
  ignoreStatic: !process.argv.includes('all'),
  incremental: true,
  incrementalFile: `reports/mutation/${name}.incremental.json`,
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: `reports/mutation/${name}.html` },
  jsonReporter: { fileName: `reports/mutation/${name}.json` },
  thresholds: { high: 95, low: 90, break: null },
  // docs/ and bench/ stay: tests read the pages they check, and the files that cite them.
  ignorePatterns: ['reports', '.ci-results', '.bench-tmp', '.work', 'dist'],
};

export default config;
