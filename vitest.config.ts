import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    typecheck: { enabled: true, include: ['test/**/*.test-d.ts'] },
    coverage: { provider: 'v8', include: ['src/**', 'adapters/**'], reporter: ['text-summary'] },
  },
});
