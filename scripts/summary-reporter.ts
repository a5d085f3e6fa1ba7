import type { SerializedError } from 'vitest';
import type { Reporter, TestModule } from 'vitest/node';

/**
 * Prints the plain closing line `N passed, N failed[, N skipped]` that CI reads.
 *
 * "failed" counts failed tests and every failure outside a test: errors of a test module or a
 * suite (a failing `beforeAll`/`afterAll`, a module that does not load) and unhandled errors of
 * the run. A run that failed for any reason never prints "0 failed".
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(
    testModules: ReadonlyArray<TestModule>,
    unhandledErrors: ReadonlyArray<SerializedError> = [],
    reason?: 'passed' | 'interrupted' | 'failed',
  ): void {
    let passed = 0;
    let failed = unhandledErrors.length;
    let skipped = 0;
    for (const module of testModules) {
      let moduleFailed = module.errors().length;
      for (const suite of module.children.allSuites()) moduleFailed += suite.errors().length;
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') passed++;
        else if (state === 'failed') moduleFailed++;
        else skipped++;
      }
      // A module marked failed with nothing above to show for it still counts once.
      if (module.state() === 'failed' && moduleFailed === 0) moduleFailed = 1;
      failed += moduleFailed;
    }
    if (reason === 'failed' && failed === 0) failed = 1;
    process.stdout.write(`\n${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}\n`);
  }
}
