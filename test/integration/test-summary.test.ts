// The closing line of `npm test` is what CI and people read: it must count a file that fails to
// load and a suite whose hook fails, and say "0 failed" only when the run exits 0.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const fixtures = 'test/fixtures/summary';

async function runVitest(options: { files: string; ci?: boolean }): Promise<{ code: number | null; stdout: string }> {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('VITEST') && key !== 'CI') env[key] = value;
  env.SUMMARY_FIXTURES = options.files;
  if (options.ci) env.CI = 'true';
  const child = spawn(process.execPath, [`${root}node_modules/vitest/vitest.mjs`, 'run', '--config', `${fixtures}/vitest.config.ts`], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.resume();
  const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
  const code = await new Promise<number | null>((resolve) => child.once('exit', (exitCode) => resolve(exitCode)));
  clearTimeout(timer);
  return { code, stdout };
}

const closingLine = (stdout: string) => stdout.trim().split('\n').pop();

describe('the vitest closing line', () => {
  it('counts a file that fails to load and a suite whose beforeAll throws, and the run exits 1', async () => {
    const run = await runVitest({ files: `${fixtures}/*.fixture-test.ts` });
    expect(closingLine(run.stdout)).toBe('vitest: 2 passed, 2 failed, 2 skipped');
    expect(run.stdout).toContain(
      'skipped: the fixture tool suite: missing no-such-tool; enable with: apt-get install no-such-package',
    );
    expect(run.code).toBe(1);
  }, 120_000);

  it('says 0 failed when the run exits 0, naming the suite skipped for a missing tool', async () => {
    const run = await runVitest({ files: `${fixtures}/{passes,missing-tool}.fixture-test.ts` });
    expect(closingLine(run.stdout)).toBe('vitest: 2 passed, 0 failed, 1 skipped');
    expect(run.stdout).toMatch(/^skipped: the fixture tool suite: missing no-such-tool/m);
    expect(run.code).toBe(0);
  }, 120_000);

  it('fails a suite whose system tool is missing under CI=true', async () => {
    const run = await runVitest({ files: `${fixtures}/{passes,missing-tool}.fixture-test.ts`, ci: true });
    expect(closingLine(run.stdout)).toBe('vitest: 2 passed, 1 failed');
    expect(run.code).toBe(1);
  }, 120_000);
});
