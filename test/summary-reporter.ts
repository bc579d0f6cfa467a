import type { Reporter, TestModule } from 'vitest/node';

/**
 * Ends the run with one plain line, `vitest: N passed, N failed[, N skipped]`, that any CI can
 * read without knowing vitest's own summary. A test file that failed to load counts as failed.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>): void {
    let passed = 0;
    let failed = unhandledErrors.length;
    let skipped = 0;
    for (const testModule of testModules) {
      let tests = 0;
      for (const test of testModule.children.allTests()) {
        tests++;
        const state = test.result().state;
        if (state === 'passed') passed++;
        else if (state === 'failed') failed++;
        else skipped++;
      }
      if (tests === 0 && testModule.state() === 'failed') failed++;
    }
    process.stdout.write(`\nvitest: ${passed} passed, ${failed} failed${skipped > 0 ? `, ${skipped} skipped` : ''}\n`);
  }
}
