// npm runs a package's scripts from the package root: paths a user gives from a subfolder must
// still mean that subfolder (INIT_CWD). Real npm, real child processes, a real workflow run.
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runToExit } from '../../fixtures/run-to-exit.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
mkdirSync(join(root, '.tmp'), { recursive: true });
// Inside the package (npm finds package.json upwards), outside git (.tmp/ is ignored).
const sub = mkdtempSync(join(root, '.tmp', 'subfolder-'));
let sidecar: StartedSidecar;
beforeAll(async () => {
  mkdirSync(join(sub, 'workspace'));
  sidecar = await startSidecar({ entry: 'test/fixtures/workflow-fixture-sidecar.ts', args: ['--listen', '127.0.0.1:0', '--workspace', join(sub, 'workspace'), '--state-dir', join(sub, 'state')] });
}, 60_000);
afterAll(async () => {
  await sidecar?.stop();
  rmSync(sub, { recursive: true, force: true });
});

function npm(args: string[]) {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'DATABASE_URL', 'INIT_CWD']) delete env[name];
  return runToExit('npm', ['run', '--silent', ...args], { cwd: sub, env, timeoutMs: 120_000 });
}

describe('npm run from a subfolder', () => {
  it('reads the workflow file and keeps --data-dir in the folder npm was run in', async () => {
    const schema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] };
    writeFileSync(join(sub, 'flow.json'), JSON.stringify({ name: 'from-sub', tasks: [{ id: 'a', prompt: 'first', result_schema: schema }] }));
    const run = await npm(['controller', '--', 'workflow', 'run', 'flow.json', '--data-dir', 'data', '--sidecar', sidecar.address, '--embedded']);
    expect(run.code, run.stderr).toBe(0);
    expect(existsSync(join(sub, 'data'))).toBe(true);
    expect(existsSync(join(root, 'data'))).toBe(false);
    const list = await npm(['controller', '--', 'workflow', 'list', '--data-dir', 'data']);
    expect(list.code, list.stderr).toBe(0);
    expect(JSON.parse(list.stdout.trim())).toMatchObject({ name: 'from-sub', state: 'succeeded' });
  }, 240_000);

  it('reads serve --agents from there too', async () => {
    // An agents file that only this subfolder has, and that serve refuses once it has read it.
    writeFileSync(join(sub, 'agents.json'), JSON.stringify({ 'bad agent!': { address: '127.0.0.1:1' } }));
    const serve = await npm(['controller', '--', 'serve', '--agents', 'agents.json', '--data-dir', 'data']);
    expect(serve.code).not.toBe(0);
    expect(serve.stderr).toMatch(/the agents file agents\.json names agent "bad agent!"/);
  }, 120_000);
});
