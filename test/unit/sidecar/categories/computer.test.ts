import { readFileSync } from 'node:fs';
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isToolRuntimeError, type WorkerAgentTool } from '../../../../src/index.js';
import { createComputerTools } from '../../../../sidecar/categories/computer.js';
import { testSandboxSettings } from '../../../fixtures/test-sandbox.js';
import { callTool, makeTempDir, testConfig, testContext, toolNamed } from './tool-harness.js';

/** True while `pid` runs (a zombie waiting for its reaper counts as gone). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

async function waitUntil(check: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return check();
}

describe('computer tools', () => {
  let workspace: Awaited<ReturnType<typeof makeTempDir>>;
  let outside: Awaited<ReturnType<typeof makeTempDir>>;
  let tools: WorkerAgentTool[];
  // The process-group kills below read host pids ($!), so they run under --sandbox off; the same
  // kills inside the sandbox are test/integration/sandbox/'s.
  let unconfined: WorkerAgentTool[];

  beforeAll(async () => {
    workspace = await makeTempDir('computer-ws');
    outside = await makeTempDir('computer-outside');
    await writeFile(path.join(outside.dir, 'secret.txt'), 'secret\n');
    await symlink(outside.dir, path.join(workspace.dir, 'out-link'));
    await symlink(path.join(outside.dir, 'nothing-yet.txt'), path.join(workspace.dir, 'dangling'));
    await symlink('nothing-here-yet.txt', path.join(workspace.dir, 'dangling-inside'));
    const config = testConfig({ workspace: workspace.dir, stateDir: path.join(workspace.dir, '.state'), commandEnv: { EXTRA_VAR: 'extra' }, commandEnvAllowList: ['PATH'] });
    tools = createComputerTools(testContext(config), { killGraceMs: 300 });
    unconfined = createComputerTools(testContext({ ...config, sandbox: testSandboxSettings(config.stateDir, 'off') }), { killGraceMs: 300 });
  });
  afterAll(async () => {
    await workspace.remove();
    await outside.remove();
  });

  it('offers the file, command and session tools with their modes', () => {
    expect(tools.map((t) => [t.name, t.executionMode, t.isReadOnly, t.isDestructive])).toEqual([
      ['run_command', 'sequential', false, true],
      ['read_file', 'parallel', true, false],
      ['write_file', 'sequential', false, true],
      ['edit_file', 'sequential', false, true],
      ['apply_patch', 'sequential', false, true],
      ['list_files', 'parallel', true, false],
      ['start_command', 'sequential', false, true],
      ['write_session', 'parallel', false, true],
      ['read_session', 'parallel', true, false],
      ['list_sessions', 'parallel', true, false],
      ['kill_session', 'parallel', false, false],
    ]);
  });

  it('runs a command in the workspace, streams output, reports the exit code and only allowed env', async () => {
    const tool = toolNamed(tools, 'run_command');
    process.env.SIDECAR_TEST_SECRET = 'leak';
    const call = await callTool(tool, { command: 'pwd; echo "extra=$EXTRA_VAR secret=${SIDECAR_TEST_SECRET:-none}"; echo oops >&2; exit 3' });
    delete process.env.SIDECAR_TEST_SECRET;
    expect(call.text).toContain('exit code 3');
    expect(call.text).toContain('extra=extra secret=none');
    expect(call.text).toContain(await import('node:fs/promises').then((fs) => fs.realpath(workspace.dir)));
    const streams = call.events.map((e) => (e.payload as { stream: string }).stream);
    expect(call.events.every((e) => e.kind === 'command.output')).toBe(true);
    expect(streams).toContain('stdout');
    expect(streams).toContain('stderr');
    expect(tool.describeActivity({ command: 'exit 3' })).toBe('Running `exit 3`');
    expect(tool.describeCompletedActivity!({ command: 'exit 3' }, call.result)).toMatch(/^Ran `exit 3` \(exit 3, \d+\.\d s\)$/);
  });

  it('keeps head and tail of huge output and states the cut', async () => {
    const call = await callTool(toolNamed(tools, 'run_command'), { command: 'echo FIRST; yes 0123456789 | head -c 3000000; echo; echo LAST' });
    expect(call.text).toContain('FIRST');
    expect(call.text).toContain('LAST');
    expect(call.text).toMatch(/\d+ characters of output cut from the middle/);
    expect(call.text.length).toBeLessThan(110_000);
  });

  it('kills a command that ignores SIGTERM, and its grandchild, on timeout', async () => {
    const pidFile = path.join(workspace.dir, 'grandchild.pid');
    const command = `sh -c 'trap "" TERM; sleep 30' & echo $! > ${pidFile}; trap "" TERM; sleep 30`;
    const call = await callTool(toolNamed(unconfined, 'run_command'), { command, timeout_ms: 300 });
    expect(call.text).toContain('timed out after 300 ms');
    expect((call.result.details as { timedOut: boolean }).timedOut).toBe(true);
    const grandchild = Number((await readFile(pidFile, 'utf8')).trim());
    expect(grandchild).toBeGreaterThan(0);
    expect(await waitUntil(() => !alive(grandchild), 3_000)).toBe(true);
  });

  it('throws aborted and kills the group when the call signal fires', async () => {
    const pidFile = path.join(workspace.dir, 'abort-child.pid');
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 300);
    const error = await callTool(toolNamed(unconfined, 'run_command'), { command: `sleep 30 & echo $! > ${pidFile}; wait` }, controller.signal).catch((e: unknown) => e);
    expect(isToolRuntimeError(error, 'aborted')).toBe(true);
    const child = Number((await readFile(pidFile, 'utf8')).trim());
    expect(await waitUntil(() => !alive(child), 3_000)).toBe(true);
  });

  it('refuses paths that escape the workspace: .., absolute, symlinks out (read and write)', async () => {
    const read = toolNamed(tools, 'read_file');
    const write = toolNamed(tools, 'write_file');
    for (const [tool, params, reason] of [
      [read, { path: '../x.txt' }, /leads out of the workspace/],
      [read, { path: path.join(outside.dir, 'secret.txt') }, /absolute path outside the workspace/],
      [read, { path: 'out-link/secret.txt' }, /symbolic link that leads out/],
      [write, { path: 'out-link/new.txt', content: 'x' }, /symbolic link that leads out/],
      // A dangling link out is refused for leading out (its target is never looked at).
      [write, { path: 'dangling', content: 'x' }, /symbolic link that leads out/],
      [write, { path: 'dangling-inside', content: 'x' }, /symbolic link whose target does not exist/],
      [toolNamed(tools, 'list_files'), { pattern: 'out-link/**' }, /symbolic link that leads out/],
      [toolNamed(tools, 'run_command'), { command: 'ls', cwd: 'out-link' }, /symbolic link that leads out/],
    ] as const) {
      const error = await callTool(tool, params).catch((e: unknown) => e);
      expect(isToolRuntimeError(error, 'invalid_arguments'), String(error)).toBe(true);
      expect((error as Error).message).toMatch(reason);
    }
    await expect(readFile(path.join(outside.dir, 'new.txt'))).rejects.toThrow();
    await expect(readFile(path.join(outside.dir, 'nothing-yet.txt'))).rejects.toThrow();
  });

  it('writes (creating folders), reads with line numbers and ranges, and refuses binary files', async () => {
    const write = await callTool(toolNamed(tools, 'write_file'), { path: 'docs/a/notes.md', content: 'one\ntwo\nthree\n' });
    expect(write.text).toContain('Created docs/a/notes.md');
    const read = toolNamed(tools, 'read_file');
    const whole = await callTool(read, { path: 'docs/a/notes.md' });
    expect(whole.text).toBe('docs/a/notes.md: lines 1-3 of 3\n1\tone\n2\ttwo\n3\tthree');
    expect(read.describeCompletedActivity!({ path: 'docs/a/notes.md' }, whole.result)).toBe('Read docs/a/notes.md (3 lines)');
    const part = await callTool(read, { path: 'docs/a/notes.md', start_line: 2, end_line: 2 });
    expect(part.text).toContain('2\ttwo');
    expect(part.text).not.toContain('three');
    await writeFile(path.join(workspace.dir, 'blob.bin'), Buffer.from([0x89, 0x50, 0x00, 0x01]));
    await expect(callTool(read, { path: 'blob.bin' })).rejects.toThrow(/binary file/);
  });

  it('edits exactly once, refuses zero or several matches, and shows a diff', async () => {
    await writeFile(path.join(workspace.dir, 'code.ts'), 'const a = 1;\nconst b = 1;\nconst c = 2;\n');
    const edit = toolNamed(tools, 'edit_file');
    await expect(callTool(edit, { path: 'code.ts', old_string: 'nope', new_string: 'x' })).rejects.toThrow(/not found/);
    await expect(callTool(edit, { path: 'code.ts', old_string: '= 1', new_string: '= 9' })).rejects.toThrow(/matches 2 times/);
    const once = await callTool(edit, { path: 'code.ts', old_string: 'const c = 2;', new_string: 'const c = 3;' });
    expect(once.text).toContain('- const c = 2;');
    expect(once.text).toContain('+ const c = 3;');
    const all = await callTool(edit, { path: 'code.ts', old_string: '= 1', new_string: '= 9', replace_all: true });
    expect(all.text).toContain('2 replacements');
    expect(await readFile(path.join(workspace.dir, 'code.ts'), 'utf8')).toBe('const a = 9;\nconst b = 9;\nconst c = 3;\n');
  });

  it('lists files by glob, skipping node_modules unless named', async () => {
    await mkdir(path.join(workspace.dir, 'node_modules/pkg'), { recursive: true });
    await writeFile(path.join(workspace.dir, 'node_modules/pkg/index.md'), 'x');
    const list = toolNamed(tools, 'list_files');
    const md = await callTool(list, { pattern: '**/*.md' });
    expect(md.text.split('\n')).toEqual(['docs/a/notes.md']);
    const named = await callTool(list, { pattern: 'node_modules/**/*.md' });
    expect(named.text.split('\n')).toEqual(['node_modules/pkg/index.md']);
    await expect(callTool(list, { pattern: '../**' })).rejects.toThrow(/leads out of the workspace/);
  });
});
