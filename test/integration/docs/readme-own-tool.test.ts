// README's "Your own tool, end to end", as a reader of a checkout runs it: the page's greet.ts, served
// TypeScript as is by the dev: scripts, called by the embedded model from the page's own command.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { runToExit } from '../../fixtures/run-to-exit.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
// Inside the checkout (its gitignored .tmp/), where `tools-runtime` resolves to this package.
mkdirSync(join(root, '.tmp'), { recursive: true });
const dir = mkdtempSync(join(root, '.tmp', 'readme-tool-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("README's own tool", () => {
  it('npm run dev:start -- --tools ./greet.ts --prompt "call greet with name=Ada" runs the page\'s tool', async () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const greet = /```ts\n\/\/ greet\.ts\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(greet).toBeDefined();
    writeFileSync(join(dir, 'greet.ts'), greet!);
    const command = 'npm run dev:start -- --tools ./greet.ts --prompt "call greet with name=Ada"';
    expect(readme).toContain(command);
    expect(readme).toContain('npm run dev:sidecar -- --workspace ~/agent --tools ./greet.ts');
    const env = { ...process.env };
    delete env.OPENAI_API_KEY;
    delete env.OPENAI_BASE_URL;
    // From the folder greet.ts is in: npm runs the script at the package root, paths mean INIT_CWD.
    const result = await runToExit('npm', ['run', '--silent', 'dev:start', '--', '--tools', './greet.ts', '--prompt', 'call greet with name=Ada', '--data-dir', join(dir, 'data')], { cwd: dir, env, timeoutMs: 120_000 });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('I called greet with {"name":"Ada"}. It returned:\nHello, Ada.');
  }, 150_000);
});
