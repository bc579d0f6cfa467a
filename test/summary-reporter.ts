import type { Reporter, SerializedError, TestModule, TestRunEndReason, TestSuite } from 'vitest/node';

declare module 'vitest' {
  interface TaskMeta {
    /** Set by test/fixtures/system-tools.ts on a suite skipped for want of a system tool. */
    missingSystemTools?: string;
  }
}

/** What one run counted. */
export interface RunSummary {
  passed: number;
  /** Failed tests, plus files and suites that failed without a failed test (load errors, hooks), plus unhandled errors. */
  failed: number;
  skipped: number;
  /** One line per suite skipped for want of a system tool: what and the `apt-get install` that enables it. */
  missingTools: string[];
}

/**
 * Counts a finished run. A file that failed to load, or a suite whose `beforeAll`/`afterAll` failed,
 * counts as one failure of its own unless a test inside it failed already; its tests, which never
 * ran, count as skipped. A run vitest calls failed never reads "0 failed".
 */
export function summarizeRun(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<SerializedError>, reason: TestRunEndReason): RunSummary {
  const summary: RunSummary = { passed: 0, failed: unhandledErrors.length, skipped: 0, missingTools: [] };
  const countSuite = (suite: TestModule | TestSuite): number => {
    let failedBelow = 0;
    for (const child of suite.children) {
      if (child.type === 'test') {
        const state = child.result().state;
        if (state === 'passed') summary.passed++;
        else if (state === 'failed') failedBelow++;
        else summary.skipped++;
      } else {
        failedBelow += countSuite(child);
      }
    }
    if (suite.type === 'suite') {
      const missing = suite.meta().missingSystemTools;
      if (missing) summary.missingTools.push(missing);
    }
    const ownFailure = failedBelow === 0 && (suite.state() === 'failed' || suite.errors().length > 0) ? 1 : 0;
    summary.failed += ownFailure;
    return failedBelow + ownFailure;
  };
  for (const testModule of testModules) countSuite(testModule);
  // Whatever else vitest failed the run for (a typecheck error, a timeout in teardown) still shows.
  if (reason === 'failed' && summary.failed === 0) summary.failed = 1;
  return summary;
}

/**
 * Ends the run with one plain line, `vitest: N passed, N failed[, N skipped]`, that any CI can read
 * without knowing vitest's own summary, preceded by one `skipped: ...` line per suite that skipped
 * itself for want of a system tool. The failed count is zero exactly when the run passed.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<SerializedError>, reason: TestRunEndReason): void {
    const { passed, failed, skipped, missingTools } = summarizeRun(testModules, unhandledErrors, reason);
    const lines = ['', ...missingTools.map((line) => `skipped: ${line}`)];
    lines.push(`vitest: ${passed} passed, ${failed} failed${skipped > 0 ? `, ${skipped} skipped` : ''}`);
    process.stdout.write(`${lines.join('\n')}\n`);
  }
}
