import { availableParallelism } from 'node:os';
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
    // Vitest's default is one worker fewer than the cores: a single worker on a 2-core machine
    // (CI's), where much of a file's time is spent waiting on the services, stores and child
    // processes it starts. At least two run at once.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    reporters: ['default', './scripts/summary-reporter.ts'],
  },
});
