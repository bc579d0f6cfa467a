import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isToolRuntimeError } from '../../../../../src/index.js';
import { commitChanges, type FileChange } from '../../../../../sidecar/categories/computer/files/commit-changes.js';
import { openRoot, realPathOf, walkWorkspace, type OpenRoot, type Walked } from '../../../../../sidecar/categories/computer/files/walk-workspace.js';
import { snapshot } from '../../../../fixtures/apply-patch-harness.js';
import { makeTempDir } from '../tool-harness.js';

// The commit's undo: a change that fails between renames (here a file replaced by another process
// after it was read) puts back what the earlier renames did, so a patch stays all or nothing.
describe('commitChanges', () => {
  let base: Awaited<ReturnType<typeof makeTempDir>>;
  let workspace: string;
  let root: OpenRoot;

  beforeAll(async () => {
    base = await makeTempDir('commit');
    workspace = path.join(base.dir, 'ws');
    mkdirSync(workspace);
  });
  afterAll(async () => {
    await root?.handle.close();
    await base.remove();
  });

  const commit = async (changes: FileChange[], beforeRename?: (relative: string) => void) => {
    root = await openRoot(workspace);
    try {
      return await commitChanges({
        root,
        changes,
        signal: AbortSignal.timeout(10_000),
        walk: (given: string) => walkWorkspace(root, given.split('/'), { shown: given, followLeaf: true }),
        name: async (walked: Walked) => {
          const absolute = path.join(await realPathOf(walked.parent), ...walked.rest);
          return { absolute, relative: path.relative(root.real, absolute) };
        },
        check: () => undefined,
        beforeRename,
      });
    } finally {
      await root.handle.close();
    }
  };

  it('writes, creates folders and deletes, keeping an overwritten file\'s mode', async () => {
    writeFileSync(path.join(workspace, 'keep.sh'), 'old\n', { mode: 0o750 });
    writeFileSync(path.join(workspace, 'gone.txt'), 'x\n');
    const done = await commit([
      { path: 'keep.sh', content: 'new\n' },
      { path: 'a/b/new.txt', content: 'made\n' },
      { path: 'gone.txt', delete: true },
    ]);
    expect(done.map((change) => [change.relative, change.action])).toEqual([['keep.sh', 'overwritten'], ['a/b/new.txt', 'created'], ['gone.txt', 'deleted']]);
    expect(readFileSync(path.join(workspace, 'keep.sh'), 'utf8')).toBe('new\n');
    expect(statSync(path.join(workspace, 'keep.sh')).mode & 0o777).toBe(0o750);
    expect(readFileSync(path.join(workspace, 'a/b/new.txt'), 'utf8')).toBe('made\n');
    expect(existsSync(path.join(workspace, 'gone.txt'))).toBe(false);
    expect(Object.keys(snapshot(workspace)).some((name) => name.includes('.tools-runtime-'))).toBe(false);
  });

  it('undoes the renames already done when a later one fails, and says nothing was left changed', async () => {
    writeFileSync(path.join(workspace, 'first.txt'), 'first before\n');
    writeFileSync(path.join(workspace, 'last.txt'), 'last before\n');
    writeFileSync(path.join(workspace, 'doomed.txt'), 'doomed before\n');
    const before = snapshot(workspace);
    const identity = (name: string) => {
      const info = statSync(path.join(workspace, name));
      return { dev: info.dev, ino: info.ino };
    };
    const error = await commit(
      [
        { path: 'first.txt', content: 'first after\n', expect: identity('first.txt'), previous: Buffer.from('first before\n') },
        { path: 'fresh/new.txt', content: 'new\n', expect: 'absent' },
        { path: 'doomed.txt', delete: true, expect: identity('doomed.txt') },
        { path: 'last.txt', content: 'last after\n', expect: identity('last.txt'), previous: Buffer.from('last before\n') },
      ],
      (relative) => {
        // Another process replaces last.txt after it was read: its rename must not happen.
        if (relative !== 'last.txt') return;
        writeFileSync(path.join(workspace, 'other.tmp'), 'someone else\n');
        renameSync(path.join(workspace, 'other.tmp'), path.join(workspace, 'last.txt'));
      },
    ).catch((caught: unknown) => caught);
    expect(isToolRuntimeError(error, 'tool_failed')).toBe(true);
    expect((error as Error).message).toMatch(/last\.txt was replaced by something else since it was read/);
    const after = snapshot(workspace);
    // Everything is as it was (no temp file, no new folder), but last.txt, which the other process wrote.
    expect({ ...after, 'last.txt': before['last.txt'] }).toEqual(before);
    expect(after['last.txt']).toBe('someone else\n');
  });
});
