import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pageTitle } from '../../../../sidecar/categories/brain/read-pages.js';
import { isPagePath, scanPages } from '../../../../sidecar/categories/brain/scan-pages.js';
import { makeTempDir } from './tool-harness.js';

describe('scanPages', () => {
  let temp: Awaited<ReturnType<typeof makeTempDir>>;
  beforeAll(async () => {
    temp = await makeTempDir('brain-scan');
    const file = async (id: string, text = '# page\n') => {
      await mkdir(path.dirname(path.join(temp.dir, id)), { recursive: true });
      await writeFile(path.join(temp.dir, id), text);
    };
    await file('a.md');
    await file('deep/er/b.markdown', 'twelve bytes');
    await file('notes.txt');
    await file('.obsidian/workspace.md');
    await file('node_modules/pkg/README.md');
    await file('deep/.hidden.md');
    await symlink(path.join(temp.dir, 'a.md'), path.join(temp.dir, 'link.md'));
  });
  afterAll(async () => {
    await temp.remove();
  });

  it('finds markdown pages at any depth, in path order, with their stamps; skips hidden, node_modules, links and other files', async () => {
    const found = await scanPages({ root: temp.dir, concurrency: 2 });
    expect([...found.keys()]).toEqual(['a.md', 'deep/er/b.markdown']);
    expect(found.get('deep/er/b.markdown')?.size).toBe(12);
    expect([...(await scanPages({ root: temp.dir, under: 'deep' })).keys()]).toEqual(['deep/er/b.markdown']);
    expect(isPagePath('x/.git/y.md')).toBe(false);
    expect(isPagePath('Notes/Plan.MD')).toBe(true);
  });

  it('stops when its signal aborts', async () => {
    await expect(scanPages({ root: temp.dir, signal: AbortSignal.abort(new Error('stop')) })).rejects.toThrow('stop');
  });
});

describe('pageTitle', () => {
  it('takes the front matter title, else the first heading, else the file name', () => {
    expect(pageTitle('a/b.md', '---\ntitle: From front matter\n---\n# Heading\n')).toBe('From front matter');
    expect(pageTitle('a/b.md', 'intro\n# The heading\n## Sub\n')).toBe('The heading');
    expect(pageTitle('a/plain-name.md', 'no heading here')).toBe('plain-name');
  });
});
