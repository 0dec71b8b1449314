import { defineConfig, mergeConfig } from 'vitest/config';
import base from './vitest.config.js';

/**
 * The suite as StrykerJS runs it (stryker.config.mjs): no type checking (types do not change
 * behaviour), no coverage, and none of the tests that spawn processes or a browser, which never
 * see a mutant (it lives only in the test runner's own process).
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
        'test/otel/isolation.test.ts',
        'test/**/*multiprocess*.test.ts',
        'test/**/*-crash.test.ts',
        'test/inbox/pg-boss12.test.ts',
        'test/**/*.browser.test.ts',
      ],
    },
  }),
);
