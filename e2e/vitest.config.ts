import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/** The end-to-end suite: real product, real Chromium. Run after the unit and integration tests. */
export default defineConfig({
  root: fileURLToPath(new URL('..', import.meta.url)),
  test: {
    include: ['e2e/**/*.e2e.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 90_000,
    // Every expect.poll waits on the product for up to 15 s unless it says otherwise (vitest's
    // default, 1 s, flakes on a loaded machine); a poll stops as soon as its condition holds.
    expect: { poll: { timeout: 15_000 } },
    pool: 'forks',
    // Two files at a time, each with its own product (random ports, its own data dirs) and its own
    // browser: much of a file's time is spent waiting on the page, and the waits above are generous.
    // One at a time took 521 s, two 440 s (CI's 2 cores; the whole CI run must stay under 30 min).
    maxWorkers: 2,
    reporters: ['default', './scripts/summary-reporter.ts'],
  },
});
