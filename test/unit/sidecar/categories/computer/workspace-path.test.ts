import { mkdir, realpath, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isToolRuntimeError } from '../../../../../src/index.js';
import { resolveWorkspacePath } from '../../../../../sidecar/categories/computer/workspace-path.js';
import { makeTempDir } from '../tool-harness.js';

async function refusal(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    if (isToolRuntimeError(error)) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error('expected the path to be refused');
}

describe('resolveWorkspacePath', () => {
  let workspace: Awaited<ReturnType<typeof makeTempDir>>;
  let outside: Awaited<ReturnType<typeof makeTempDir>>;
  let realRoot: string;

  beforeAll(async () => {
    workspace = await makeTempDir('workspace-path');
    outside = await makeTempDir('workspace-path-outside');
    realRoot = await realpath(workspace.dir);
    await mkdir(path.join(workspace.dir, 'src/deep'), { recursive: true });
    await writeFile(path.join(workspace.dir, 'src/deep/file.txt'), 'x');
    await symlink(path.join(workspace.dir, 'src'), path.join(workspace.dir, 'src-link'));
    await symlink(outside.dir, path.join(workspace.dir, 'out-link'));
    await symlink(path.join(outside.dir, 'missing'), path.join(workspace.dir, 'dangling'));
    await symlink('loop-b', path.join(workspace.dir, 'loop-a'));
    await symlink('loop-a', path.join(workspace.dir, 'loop-b'));
  });
  afterAll(async () => {
    await workspace.remove();
    await outside.remove();
  });

  it('allows names that merely start with `..`; only a `..` segment leads out', async () => {
    expect(await resolveWorkspacePath(workspace.dir, '..notes')).toEqual({ absolute: path.join(realRoot, '..notes'), relative: '..notes' });
    expect((await resolveWorkspacePath(workspace.dir, 'src/...x/..y')).relative).toBe('src/...x/..y');
    expect((await refusal(resolveWorkspacePath(workspace.dir, '../x'))).message).toMatch(/leads out of the workspace/);
    expect((await refusal(resolveWorkspacePath(workspace.dir, 'src/../../x'))).message).toMatch(/leads out of the workspace/);
  });

  it('resolves existing paths, paths that do not exist yet, and symlinks inside the workspace', async () => {
    expect(await resolveWorkspacePath(workspace.dir, '.')).toEqual({ absolute: realRoot, relative: '.' });
    expect(await resolveWorkspacePath(workspace.dir, 'src/deep/file.txt')).toEqual({ absolute: path.join(realRoot, 'src/deep/file.txt'), relative: 'src/deep/file.txt' });
    expect((await resolveWorkspacePath(workspace.dir, 'src-link/deep/new/a.txt')).relative).toBe('src/deep/new/a.txt');
    expect((await resolveWorkspacePath(workspace.dir, path.join(realRoot, 'src/x'))).relative).toBe('src/x');
    // Under a file: nothing exists there, the path is kept as given (the tool's own stat fails).
    expect((await resolveWorkspacePath(workspace.dir, 'src/deep/file.txt/below')).relative).toBe('src/deep/file.txt/below');
  });

  it('refuses symlinks that lead out, dangle or loop', async () => {
    expect((await refusal(resolveWorkspacePath(workspace.dir, 'out-link/x'))).message).toMatch(/symbolic link that leads out/);
    expect((await refusal(resolveWorkspacePath(workspace.dir, 'dangling'))).message).toMatch(/target does not exist/);
    expect((await refusal(resolveWorkspacePath(workspace.dir, 'loop-a/x'))).code).toBe('invalid_arguments');
  });

  it('refuses paths over PATH_MAX or with a component over NAME_MAX up front, quoting only a prefix', async () => {
    const long = 'a/'.repeat(200_000);
    const tooLong = await refusal(resolveWorkspacePath(workspace.dir, long));
    expect(tooLong.code).toBe('invalid_arguments');
    expect(tooLong.message).toMatch(/4096/);
    expect(tooLong.message.length).toBeLessThan(500);
    const name = await refusal(resolveWorkspacePath(workspace.dir, `src/${'n'.repeat(256)}/x`));
    expect(name.message).toMatch(/255/);
    // 255 bytes is still a valid name.
    expect((await resolveWorkspacePath(workspace.dir, 'n'.repeat(255))).relative).toBe('n'.repeat(255));
    // A deep path under the limit that does not exist resolves (the walk stops at the first missing part).
    const deep = 'd/'.repeat(1_500) + 'f';
    expect((await resolveWorkspacePath(workspace.dir, deep)).relative).toBe(deep);
  });

  it('honours the call signal: an aborted call stops the walk with `aborted`', async () => {
    const controller = new AbortController();
    controller.abort();
    const stopped = await refusal(resolveWorkspacePath(workspace.dir, 'src/deep/file.txt', { signal: controller.signal }));
    expect(stopped.code).toBe('aborted');
  });
});
