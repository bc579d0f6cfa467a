import { linkSync, mkdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isToolRuntimeError } from '../../../../../src/index.js';
import { createWorkspaceFiles, type WorkspaceFiles } from '../../../../../sidecar/categories/computer/files/workspace-files.js';
import { makeTempDir } from '../tool-harness.js';

// The safe I/O's own rules, beside the tools': hidden paths are known by device and inode too, so a
// command that renames a hidden folder or hard-links a hidden file does not reveal it; symlinks that
// stay inside are followed, `..` in them included.
describe('createWorkspaceFiles', () => {
  let base: Awaited<ReturnType<typeof makeTempDir>>;
  let workspace: string;
  let files: WorkspaceFiles;
  const signal = () => AbortSignal.timeout(10_000);
  const read = (given: string) => files.read(given, { access: 'read', maxBytes: 1024, signal: signal() });

  beforeAll(async () => {
    base = await makeTempDir('workspace-files');
    workspace = path.join(base.dir, 'ws');
    mkdirSync(path.join(workspace, 'conf'), { recursive: true });
    mkdirSync(path.join(workspace, 'real', 'deep'), { recursive: true });
    writeFileSync(path.join(workspace, 'conf', 'secret.env'), 'TOKEN=1\n');
    writeFileSync(path.join(workspace, 'key.pem'), 'PRIVATE\n');
    writeFileSync(path.join(workspace, 'real', 'deep', 'a.txt'), 'inside\n');
    writeFileSync(path.join(workspace, 'big.txt'), 'x'.repeat(2048));
    symlinkSync('real/deep/../deep', path.join(workspace, 'docs'));
    files = createWorkspaceFiles({
      workspace,
      policy: { mode: 'workspace-write', network: { mode: 'off' }, workspace, hide: [path.join(workspace, 'conf'), path.join(workspace, 'key.pem')], readable: [] },
    });
  });
  afterAll(async () => base.remove());

  it('refuses a hidden folder under its own name and after a rename', async () => {
    await expect(read('conf/secret.env')).rejects.toThrow(/hidden by the sidecar's sandbox/);
    renameSync(path.join(workspace, 'conf'), path.join(workspace, 'conf2'));
    const error = await read('conf2/secret.env').catch((caught: unknown) => caught);
    expect(isToolRuntimeError(error, 'sandbox_denied')).toBe(true);
    expect((error as Error).message).toMatch(/under another name/);
  });

  it('refuses a hidden file through a hard link', async () => {
    linkSync(path.join(workspace, 'key.pem'), path.join(workspace, 'innocent.txt'));
    const error = await read('innocent.txt').catch((caught: unknown) => caught);
    expect(isToolRuntimeError(error, 'sandbox_denied')).toBe(true);
  });

  it('follows a symlink that stays inside, with .. in its target', async () => {
    const file = await read('docs/a.txt');
    expect(file.bytes.toString()).toBe('inside\n');
    expect(file.relative).toBe('real/deep/a.txt');
  });

  it('refuses a file over the cap by its size, without reading it', async () => {
    await expect(read('big.txt')).rejects.toThrow(/big\.txt is 2048 bytes, over the 1024-byte cap/);
  });

  it('refuses the workspace folder itself and a missing file, or says it is missing when asked', async () => {
    await expect(read('.')).rejects.toThrow(/workspace folder/);
    await expect(read('nope.txt')).rejects.toThrow(/nope\.txt does not exist/);
    const missing = await files.read('new/deeper/x.txt', { access: 'write', maxBytes: 10, signal: signal(), missingOk: true });
    expect([missing.exists, missing.relative]).toEqual([false, 'new/deeper/x.txt']);
  });
});
