import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: [
      'server/test/**/*.test.ts',
      'client/test/**/*.test.ts',
      'bff/test/**/*.test.ts',
      'web/test/**/*.test.ts',
      'bench/test/**/*.test.ts',
    ],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    pool: 'forks',
    reporters: ['default', './scripts/summary-reporter.ts'],
  },
});
