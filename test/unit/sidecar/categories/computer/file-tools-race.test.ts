import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WorkerAgentTool } from '../../../../../src/index.js';
import { createComputerTools } from '../../../../../sidecar/categories/computer.js';
import { requireSystemTools } from '../../../../fixtures/system-tools.js';
import { testSandboxSettings } from '../../../../fixtures/test-sandbox.js';
import { callTool, makeTempDir, testConfig, testContext, toolNamed } from '../tool-harness.js';

// Issue 32's race, as an attacker runs it: a command swaps a file and a symlink (and a folder and
// a symlink) with renameat2(RENAME_EXCHANGE) in a tight loop while the file tools are called
// thousands of times. On the name-checking tools this read a hidden file 3,768 times in 20,077
// calls and wrote outside on the 9th try; through the descriptor walk it must never happen.
const suite = requireSystemTools({ suite: 'file tools race', tools: [{ name: 'gcc', executable: '/usr/bin/gcc' }], aptPackages: ['gcc'] });
const source = fileURLToPath(new URL('../../../../fixtures/c/swap-forever.c', import.meta.url));
const READS = 2_000;
const WRITES = 600;

describe('file tools against a swapping attacker', suite, () => {
  let base: Awaited<ReturnType<typeof makeTempDir>>;
  let workspace: string;
  let outside: string;
  let stateDir: string;
  let tools: WorkerAgentTool[];
  let swapper: string;
  const swappers: ChildProcess[] = [];

  /** Starts swapping `a` and `b` (names inside the workspace) until the test ends. */
  const swap = (a: string, b: string) => {
    const child = spawn(swapper, [path.join(workspace, a), path.join(workspace, b)], { stdio: 'ignore' });
    swappers.push(child);
  };

  beforeAll(async () => {
    base = await makeTempDir('file-race');
    workspace = path.join(base.dir, 'workspace');
    outside = path.join(base.dir, 'outside');
    stateDir = path.join(workspace, '.state');
    for (const folder of [workspace, outside, stateDir, path.join(outside, 'dir')]) mkdirSync(folder, { recursive: true });
    swapper = path.join(base.dir, 'swap-forever');
    const built = spawnSync('gcc', ['-O2', '-o', swapper, source], { encoding: 'utf8' });
    if (built.status !== 0) throw new Error(`gcc failed: ${built.stderr}`);
    writeFileSync(path.join(outside, 'secret.txt'), 'SECRET-OUTSIDE\n');
    writeFileSync(path.join(stateDir, 'token'), 'SECRET-TOKEN\n');
    // read race 1: public file <-> link out of the workspace
    writeFileSync(path.join(workspace, 'x'), 'PUBLIC\n');
    symlinkSync(path.join(outside, 'secret.txt'), path.join(workspace, 'y'));
    // read race 2: public file <-> link to the hidden state folder's token (inside the workspace)
    writeFileSync(path.join(workspace, 'x2'), 'PUBLIC\n');
    symlinkSync('.state/token', path.join(workspace, 'y2'));
    // write race: a folder <-> a link to a folder outside
    mkdirSync(path.join(workspace, 'd'));
    symlinkSync(path.join(outside, 'dir'), path.join(workspace, 'e'));
    // write race 2: a file <-> a link to a file outside
    writeFileSync(path.join(workspace, 'w'), 'PUBLIC\n');
    symlinkSync(path.join(outside, 'secret.txt'), path.join(workspace, 'v'));
    const config = testConfig({ workspace, stateDir, sandbox: testSandboxSettings(stateDir, 'workspace-write') });
    tools = createComputerTools(testContext(config));
  }, 60_000);

  /** Stops every swapper (each takes a core while it runs, so each test starts only its own). */
  const stopSwapping = async () => {
    const running = swappers.splice(0);
    for (const child of running) child.kill('SIGKILL');
    await Promise.all(running.map((child) => (child.exitCode === null && child.signalCode === null ? new Promise((resolve) => child.once('exit', resolve)) : undefined)));
  };

  afterAll(async () => {
    await stopSwapping();
    await base.remove();
  });

  it(`never returns a hidden or outside file in ${READS * 2} reads`, async () => {
    swap('x', 'y');
    swap('x2', 'y2');
    const read = toolNamed(tools, 'read_file');
    const outcomes = new Map<string, number>();
    let leaks = 0;
    for (let index = 0; index < READS; index++) {
      for (const name of ['x', 'x2']) {
        const text = await callTool(read, { path: name }).then(
          (call) => call.text,
          (error: Error) => `error: ${error.message.replace(/"[^"]*"/g, '"…"')}`,
        );
        if (text.includes('SECRET')) leaks++;
        const kind = text.startsWith('error') ? text.slice(0, 60) : 'read the public file';
        outcomes.set(kind, (outcomes.get(kind) ?? 0) + 1);
      }
    }
    await stopSwapping();
    expect(leaks).toBe(0);
    // The race was live: some calls found the link in place (and were refused), some the file.
    expect(outcomes.get('read the public file') ?? 0).toBeGreaterThan(0);
    expect([...outcomes.keys()].some((kind) => kind.startsWith('error'))).toBe(true);
  }, 300_000);

  it(`never writes outside in ${WRITES * 2} writes`, async () => {
    swap('d', 'e');
    swap('w', 'v');
    const write = toolNamed(tools, 'write_file');
    let written = 0;
    for (let index = 0; index < WRITES; index++) {
      await callTool(write, { path: `d/new-${index % 7}.txt`, content: 'PWNED\n' }).then(() => written++, () => undefined);
      await callTool(write, { path: 'w', content: 'PWNED\n' }).then(() => written++, () => undefined);
    }
    await stopSwapping();
    expect(readdirSync(path.join(outside, 'dir'))).toEqual([]);
    expect(readFileSync(path.join(outside, 'secret.txt'), 'utf8')).toBe('SECRET-OUTSIDE\n');
    expect(readFileSync(path.join(stateDir, 'token'), 'utf8')).toBe('SECRET-TOKEN\n');
    expect(written).toBeGreaterThan(0);
    expect(existsSync(path.join(outside, 'new-0.txt'))).toBe(false);
  }, 300_000);
});
