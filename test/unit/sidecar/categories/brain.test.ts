import { cp, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { WorkerAgentTool } from '../../../../src/index.js';
import { BrainIndex, type BrainIndexOptions } from '../../../../sidecar/categories/brain/brain-index.js';
import { toFtsQuery } from '../../../../sidecar/categories/brain/fts-query.js';
import { brainWaitMs, createBrainTools } from '../../../../sidecar/categories/brain.js';
import { callTool, makeTempDir, testConfig, testContext, toolNamed } from './tool-harness.js';

const fixture = fileURLToPath(new URL('../../../fixtures/categories/brain', import.meta.url));
const read = { signal: AbortSignal.timeout(60_000), waitMs: 0 };

/** Polls `probe` (which must not wait) until it returns true; bounded. */
async function eventually(probe: () => Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > until) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Calls a tool as the sidecar would, with `remainingMs` before its deadline. */
async function callWithDeadline(tool: WorkerAgentTool, params: unknown, remainingMs: number) {
  const deadlineAt = Date.now() + remainingMs;
  const result = await tool.execute(tool.schema!.parse(params), {
    signal: AbortSignal.timeout(remainingMs + 5_000),
    callId: 'c',
    emit: async () => {},
    remainingMs: () => deadlineAt - Date.now(),
  });
  return { result, text: result.content.map((part) => (part.type === 'text' ? part.text : '')).join('') };
}

describe('toFtsQuery', () => {
  it('quotes every word and drops FTS5 syntax', () => {
    expect(toFtsQuery('sidecar AND "grpc" NEAR(x* -y) col:z')).toBe('"sidecar" OR "and" OR "grpc" OR "near" OR "x" OR "y" OR "col" OR "z"');
    expect(() => toFtsQuery('*** ""')).toThrow(/no word/);
  });
});

describe('brainWaitMs', () => {
  it('leaves a margin before the deadline, and waits boundedly without one', () => {
    expect(brainWaitMs({ remainingMs: () => 10_000 })).toBe(9_000);
    expect(brainWaitMs({ remainingMs: () => 100 })).toBe(0);
    expect(brainWaitMs({ remainingMs: () => 600_000 })).toBe(598_000);
    expect(brainWaitMs({})).toBe(30_000);
  });
});

describe('Brain over real SQLite FTS5, kept by its worker thread', () => {
  let temp: Awaited<ReturnType<typeof makeTempDir>>;
  const started: BrainIndex[] = [];
  beforeAll(async () => {
    temp = await makeTempDir('brain');
  });
  afterEach(async () => {
    await Promise.all(started.splice(0).map((index) => index.close()));
  });
  afterAll(async () => {
    await temp.remove();
  });

  let folders = 0;
  /** A fresh copy of the fixture pages and a state folder of its own. */
  const freshBrain = async () => {
    const dir = path.join(temp.dir, `case-${++folders}`);
    await cp(fixture, path.join(dir, 'brain'), { recursive: true });
    return { brainDir: path.join(dir, 'brain'), databasePath: path.join(dir, 'state/brain/index.sqlite') };
  };
  const start = (options: BrainIndexOptions) => {
    const index = BrainIndex.start({ reconcileIntervalMs: 3_600_000, debounceMs: 20, ...options });
    started.push(index);
    return index;
  };
  const tools = (index: BrainIndex | undefined, brainDir: string) =>
    createBrainTools(testContext(testConfig({ workspace: temp.dir, stateDir: temp.dir, brainDir }), { kind: 'workflow_task', brainEnabled: true }), () => index);
  const ids = async (index: BrainIndex, query: string) => {
    const answer = await index.search(query, 10, read);
    expect(answer.ready).toBe(true);
    return answer.ready ? answer.value.map((hit) => hit.id).sort() : [];
  };

  it('is absent unless the turn enables Brain and an index exists', async () => {
    const { brainDir, databasePath } = await freshBrain();
    const index = start({ brainDir, databasePath });
    const config = testConfig({ workspace: '/tmp', stateDir: '/tmp', brainDir });
    expect(createBrainTools(testContext(config, { brainEnabled: false }), () => index)).toEqual([]);
    expect(createBrainTools(testContext(config, { brainEnabled: true }), () => undefined)).toEqual([]);
    expect(tools(index, brainDir).map((t) => [t.name, t.executionMode, t.isReadOnly])).toEqual([
      ['recall', 'parallel', true],
      ['get_page', 'parallel', true],
    ]);
  });

  it('answers a first call that comes before the build with the progress, and a later one once built', async () => {
    const { brainDir, databasePath } = await freshBrain();
    const index = start({ brainDir, databasePath });
    const recall = toolNamed(tools(index, brainDir), 'recall');
    // 100 ms before the deadline leaves no time to wait: the answer is the build's progress.
    const early = await callWithDeadline(recall, { query: 'sidecar' }, 100);
    expect(early.text).toMatch(/^The knowledge base is still being indexed: \d+ pages/);
    expect(early.result.details).toMatchObject({ indexing: true, count: 0 });
    const early2 = await callWithDeadline(toolNamed(tools(index, brainDir), 'get_page'), { id: 'nowhere.md' }, 100);
    expect(early2.text).toContain('still being indexed');
    // A call with time to spare waits for the build within its deadline and answers.
    const later = await callWithDeadline(recall, { query: 'sidecar child processes' }, 30_000);
    expect(later.text.split('\n')[0]).toBe('1. The tool sidecar (id: projects/sidecar.md)');
    expect(later.text).toContain('[sidecar]');
    expect((later.result.details as { ids: string[] }).ids).toEqual(['projects/sidecar.md', 'deployment.md']);
    expect(index.status).toMatchObject({ phase: 'ready', pagesIndexed: 3, pagesFound: 3, buildPagesWritten: 3 });
  });

  it('reads a page by its relative path, and refuses unknown ids and hostile queries safely', async () => {
    const { brainDir, databasePath } = await freshBrain();
    const index = start({ brainDir, databasePath });
    const [recall, getPage] = tools(index, brainDir);
    const page = await callTool(getPage!, { id: 'people/ada.md' });
    expect(page.text).toContain('# Ada Lovelace (id: people/ada.md)');
    expect(page.text).toContain('analytical engine');
    await expect(callTool(getPage!, { id: '../etc/passwd' })).rejects.toThrow(/no Brain page has the id/);
    const hostile = await callTool(recall!, { query: 'NEAR( "ada' });
    expect(hostile.text).toContain('people/ada.md');
  });

  it('reflects a page added, changed, renamed and deleted while it runs, from the watcher, with no call waiting', async () => {
    const { brainDir, databasePath } = await freshBrain();
    // The periodic rescan is an hour away: only the watcher can bring these changes in.
    const index = start({ brainDir, databasePath });
    await index.search('ada', 5, { signal: AbortSignal.timeout(30_000), waitMs: 30_000 });
    // Every probe below passes waitMs 0: a call that had to wait would get `ready: false` and fail.
    await writeFile(path.join(brainDir, 'new.md'), '# Jacquard loom\n\nPunched cards.\n');
    await eventually(async () => (await ids(index, 'jacquard')).includes('new.md'), 'an added page');
    await writeFile(path.join(brainDir, 'people/ada.md'), '# Ada Lovelace\n\nShe also wrote about the loom of Jacquard.\n');
    await eventually(async () => (await ids(index, 'jacquard')).includes('people/ada.md'), 'a changed page');
    expect(await ids(index, 'analytical')).toEqual([]);
    await rename(path.join(brainDir, 'new.md'), path.join(brainDir, 'projects/loom.md'));
    await eventually(async () => JSON.stringify(await ids(index, 'punched')) === '["projects/loom.md"]', 'a renamed page');
    await rm(path.join(brainDir, 'deployment.md'));
    await eventually(async () => (await ids(index, 'migrations')).length === 0, 'a deleted page');
    // A folder that appears with pages in it, then goes away with them.
    await mkdir(path.join(brainDir, 'later/deeper'), { recursive: true });
    await writeFile(path.join(brainDir, 'later/deeper/note.md'), '# Note\n\nZephyr winds.\n');
    await eventually(async () => JSON.stringify(await ids(index, 'zephyr')) === '["later/deeper/note.md"]', 'a page in a new folder');
    await rm(path.join(brainDir, 'later'), { recursive: true });
    await eventually(async () => (await ids(index, 'zephyr')).length === 0, 'a removed folder');
    expect(index.status.pagesIndexed).toBe(3);
    const page = await index.getPage('projects/loom.md', read);
    expect(page.ready && page.value.title).toBe('Jacquard loom');
  });

  it('reuses the index after a restart, answering at once and re-indexing only what changed', async () => {
    const { brainDir, databasePath } = await freshBrain();
    const first = start({ brainDir, databasePath });
    await first.search('ada', 5, { signal: AbortSignal.timeout(30_000), waitMs: 30_000 });
    expect(first.status.buildPagesWritten).toBe(3);
    await first.close();
    await writeFile(path.join(brainDir, 'people/ada.md'), '# Ada Lovelace\n\nNotes on the difference engine.\n');
    const second = start({ brainDir, databasePath });
    // No build to wait for: the first call after the restart is answered from the kept index.
    let answer = await second.search('sidecar', 5, { signal: AbortSignal.timeout(30_000), waitMs: 30_000 });
    expect(answer.ready && answer.value.map((hit) => hit.id)).toContain('projects/sidecar.md');
    await eventually(async () => second.status.lastReconcile !== undefined, 'the catch-up scan');
    expect(second.status.lastReconcile?.pagesWritten).toBe(1);
    expect(second.status.buildMs).toBeUndefined();
    answer = await second.search('difference', 5, read);
    expect(answer.ready && answer.value.map((hit) => hit.id)).toEqual(['people/ada.md']);
  });

  it('drops an index of an older layout and builds anew', async () => {
    const { brainDir, databasePath } = await freshBrain();
    await mkdir(path.dirname(databasePath), { recursive: true });
    const old = new Database(databasePath);
    old.exec(`CREATE TABLE pages (id TEXT PRIMARY KEY, mtime_ms REAL NOT NULL, size INTEGER NOT NULL);
      CREATE VIRTUAL TABLE pages_fts USING fts5(id UNINDEXED, title, content);
      INSERT INTO pages_fts (id, title, content) VALUES ('stale.md', 'Stale', 'obsolete words');`);
    old.close();
    const index = start({ brainDir, databasePath });
    expect(await (async () => {
      await index.search('ada', 5, { signal: AbortSignal.timeout(30_000), waitMs: 30_000 });
      return ids(index, 'obsolete');
    })()).toEqual([]);
    expect(index.status.pagesIndexed).toBe(3);
  });

  it('applies the caps on pages, page size and total bytes, and says so in recall', async () => {
    const { brainDir, databasePath } = await freshBrain();
    await writeFile(path.join(brainDir, 'big.md'), `# Big\n\n${'alpha '.repeat(100)}omega\n`);
    await writeFile(path.join(brainDir, 'zz-extra.md'), '# Extra\n\nalpha\n');
    // Five pages in path order: big.md, deployment.md, people/ada.md, projects/sidecar.md, zz-extra.md.
    const index = start({ brainDir, databasePath, limits: { maxPages: 4, maxPageBytes: 200 } });
    const [recall, getPage] = tools(index, brainDir);
    const answer = await callTool(recall!, { query: 'alpha' });
    expect(answer.text).toContain('1. Big (id: big.md)');
    expect(answer.text).not.toContain('zz-extra.md');
    expect(answer.text).toContain('Note: 1 page is not indexed: the Brain holds at most 4 pages.');
    expect(answer.text).toContain('Note: 1 page is indexed by its first 200 bytes only.');
    expect(index.status).toMatchObject({ pagesIndexed: 4, pagesFound: 5, skippedByPageCap: 1, truncatedPages: 1 });
    // The page's tail past the cap is not searchable, and get_page says the page was cut.
    expect(await ids(index, 'omega')).toEqual([]);
    const big = await callTool(getPage!, { id: 'big.md' });
    expect(big.text).toContain('[The page has 613 bytes; only its first 200 are in the Brain.]');

    const bytes = await freshBrain();
    const capped = start({ ...bytes, limits: { maxTotalBytes: 350 } });
    const total = await callTool(toolNamed(tools(capped, bytes.brainDir), 'recall'), { query: 'sidecar' });
    // In path order: deployment.md (119 bytes) and people/ada.md (97) fit; projects/sidecar.md (174) does not.
    expect(capped.status).toMatchObject({ pagesIndexed: 2, skippedByTotalCap: 1, bytesIndexed: 216 });
    expect(total.text).toContain('deployment.md');
    expect(total.text).not.toContain('projects/sidecar.md');
    expect(total.text).toContain('Note: 1 page is not indexed: the Brain holds at most 350 bytes of text.');
  });
});
