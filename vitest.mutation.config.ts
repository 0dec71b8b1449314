import { defineConfig, mergeConfig } from 'vitest/config';
import base from './vitest.config.js';

/**
 * The suite as StrykerJS runs it (stryker.config.mjs): no type checking (types do not change
 * behaviour), no coverage, and none of the tests that spawn processes or a browser, which never
 * see a mutant (it lives only in the test runner's own process). The generated validators' test
 * compares the file's text with the generator's, and Stryker's sandbox prefixes every source file
 * with `// @ts-nocheck`; no module Stryker mutates is in src/platform/events/.
 */
export default mergeConfig(
  base,
  defineConfig({
    test: {
      typecheck: { enabled: false },
      coverage: { enabled: false },
      reporters: ['default'],
      exclude: [
        'test/cli/**',
        'test/demo.test.ts',
        'test/examples/**',
        'test/events/compile-check.test.ts',
        'test/events/data-validators.test.ts',
        'test/otel/isolation.test.ts',
        'test/**/*multiprocess*.test.ts',
        'test/**/*-crash.test.ts',
        'test/inbox/pg-boss12.test.ts',
        'test/**/*.browser.test.ts',
      ],
    },
  }),
);
