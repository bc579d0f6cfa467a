// `npx tools-runtime-sidecar`, `npx tools-runtime-controller serve` and `npm run dev:sidecar`: a
// SIGTERM to npm (what a process manager or `kill` sends) must stop the server too. npm passes it to
// the shell it runs the command in, and Debian's dash dies of it without passing it on: the server
// was left running under PID 1.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { descendantsOf, stillRunning, waitFor } from '../../fixtures/process-tree.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'bins-npm-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A project with the built bins linked as an installed package's would be (npx finds them there). */
let made: string | undefined;
function projectWithBins(): string {
  if (made) return made;
  const project = join(dir, 'project');
  made = project;
  mkdirSync(join(project, 'node_modules', '.bin'), { recursive: true });
  writeFileSync(join(project, 'package.json'), '{"name":"reader-project","private":true}\n');
  symlinkSync(join(root, 'dist/sidecar/main.js'), join(project, 'node_modules/.bin/tools-runtime-sidecar'));
  symlinkSync(join(root, 'dist/controller/control-plane-main.js'), join(project, 'node_modules/.bin/tools-runtime-controller'));
  return project;
}

async function startAndTerminate(command: string, args: string[], cwd: string, ready: RegExp) {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'DATABASE_URL']) delete env[name];
  const npm = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  npm.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  npm.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const exited = once(npm, 'exit');
  try {
    const listening = await waitFor(() => (ready.test(output) ? true : undefined), 60_000);
    expect(listening, output).toBe(true);
    const tree = descendantsOf(npm.pid!);
    expect(tree.some((entry) => /node/.test(entry.command))).toBe(true);
    // SIGTERM to npm alone, as a process manager that knows only the pid it started sends it.
    process.kill(npm.pid!, 'SIGTERM');
    await exited;
    const left = await waitFor(() => (stillRunning(tree).length === 0 ? [] : undefined), 20_000);
    expect(left, `still running: ${stillRunning(tree).map((entry) => entry.command).join('; ')}\n${output}`).toEqual([]);
  } finally {
    try {
      process.kill(-npm.pid!, 'SIGKILL');
    } catch {
      // the group is gone
    }
  }
}

describe('the bins stop with npm', () => {
  it('npx tools-runtime-sidecar', async () => {
    const project = projectWithBins();
    mkdirSync(join(dir, 'ws1'));
    await startAndTerminate('npx', ['--no-install', 'tools-runtime-sidecar', '--workspace', join(dir, 'ws1'), '--state-dir', join(dir, 'st1'), '--sandbox', 'off'], project, /"event":"listening"/);
  }, 90_000);

  it('npx tools-runtime-controller serve', async () => {
    const project = projectWithBins();
    const agents = join(dir, 'agents.json');
    writeFileSync(agents, JSON.stringify({ 'agent-a': { address: '127.0.0.1:1' } }));
    await startAndTerminate('npx', ['--no-install', 'tools-runtime-controller', 'serve', '--listen', '127.0.0.1:0', '--data-dir', join(dir, 'data'), '--agents', agents, '--embedded'], project, /"event":"listening"/);
  }, 90_000);

  it('npm run dev:sidecar', async () => {
    mkdirSync(join(dir, 'ws2'));
    await startAndTerminate('npm', ['run', '--silent', 'dev:sidecar', '--', '--workspace', join(dir, 'ws2'), '--state-dir', join(dir, 'st2'), '--sandbox', 'off'], root, /"event":"listening"/);
  }, 90_000);
});

describe('controller --help', () => {
  it('prints the commands together on stdout, then the flag every command takes, and exits 0', async () => {
    const { runToExit } = await import('../../fixtures/run-to-exit.js');
    const { code, stdout } = await runToExit(process.execPath, [join(root, 'dist/controller/control-plane-main.js'), '--help'], { cwd: root });
    expect(code).toBe(0);
    const lines = stdout.split('\n');
    const commands = lines.findIndex((line) => line === 'Commands:');
    expect(lines.slice(commands + 1, commands + 6).every((line) => /^ {2}(workflow|serve|approvals|servers) /.test(line))).toBe(true);
    expect(lines[commands + 6]).toBe('');
    expect(lines[commands + 7]).toMatch(/^Any command also takes --metrics-listen/);
  }, 30_000);
});
