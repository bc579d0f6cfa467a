// npm start with --native-tools on: the embedded model makes a shell_call and an apply_patch_call,
// the loop runs them through the spawned sidecar, and the answer reports what they did.
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runToExit } from '../../fixtures/run-to-exit.js';
import { testSandboxArgs } from '../../fixtures/test-sandbox.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));

describe('npm start -- --native-tools on', () => {
  it('shows the provider\'s own shell and apply_patch calls without a key', async () => {
    const env = { ...process.env };
    delete env.OPENAI_API_KEY;
    delete env.OPENAI_BASE_URL;
    const { code, stdout, stderr } = await runToExit('npm', ['start', '--silent', '--', '--native-tools', 'on', '--approve', 'never', '--prompt', 'Look around', ...testSandboxArgs()], { cwd: root, env });
    expect(code, stderr).toBe(0);
    expect(stderr).toContain('Running `ls -A`');
    expect(stdout).toMatch(/shell ran 2 commands: `ls -A` \(exit 0\): [^;]+; `wc -l README\.md` \(exit 0\): \d+ README\.md/);
    expect(stdout).toContain('apply_patch updated README.md');
    const bad = await runToExit('npm', ['start', '--silent', '--', '--native-tools', 'sometimes'], { cwd: root, env });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--native-tools: expected auto, on or off, got "sometimes"');
  }, 120_000);
});
