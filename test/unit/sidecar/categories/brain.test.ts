import { cp, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrainIndex } from '../../../../sidecar/categories/brain/brain-index.js';
import { toFtsQuery } from '../../../../sidecar/categories/brain/fts-query.js';
import { createBrainTools } from '../../../../sidecar/categories/brain.js';
import { callTool, makeTempDir, testConfig, testContext, toolNamed } from './tool-harness.js';

const fixture = fileURLToPath(new URL('../../../fixtures/categories/brain', import.meta.url));

describe('toFtsQuery', () => {
  it('quotes every word and drops FTS5 syntax', () => {
    expect(toFtsQuery('sidecar AND "grpc" NEAR(x* -y) col:z')).toBe('"sidecar" OR "and" OR "grpc" OR "near" OR "x" OR "y" OR "col" OR "z"');
    expect(() => toFtsQuery('*** ""')).toThrow(/no word/);
  });
});

describe('Brain tools over real SQLite FTS5', () => {
  let temp: Awaited<ReturnType<typeof makeTempDir>>;
  let brainDir: string;
  let index: BrainIndex;
  let clock = 0;

  beforeAll(async () => {
    temp = await makeTempDir('brain');
    brainDir = path.join(temp.dir, 'brain');
    await cp(fixture, brainDir, { recursive: true });
    index = new BrainIndex({ brainDir, databasePath: path.join(temp.dir, 'state/brain/index.sqlite'), refreshIntervalMs: 1_000, now: () => clock });
  });
  afterAll(async () => {
    index.close();
    await temp.remove();
  });

  const tools = () =>
    createBrainTools(testContext(testConfig({ workspace: temp.dir, stateDir: temp.dir, brainDir }), { kind: 'workflow_task', brainEnabled: true }), () => index);

  it('is absent unless the turn enables Brain and an index exists', () => {
    const config = testConfig({ workspace: '/tmp', stateDir: '/tmp', brainDir: '/tmp' });
    expect(createBrainTools(testContext(config, { brainEnabled: false }), () => index)).toEqual([]);
    expect(createBrainTools(testContext(config, { brainEnabled: true }), () => undefined)).toEqual([]);
    expect(tools().map((t) => [t.name, t.executionMode, t.isReadOnly])).toEqual([
      ['recall', 'parallel', true],
      ['get_page', 'parallel', true],
    ]);
  });

  it('ranks pages with bm25, shows snippets, and reads a page by its relative path', async () => {
    const recall = await callTool(toolNamed(tools(), 'recall'), { query: 'sidecar child processes' });
    expect(recall.text.split('\n')[0]).toBe('1. The tool sidecar (id: projects/sidecar.md)');
    expect(recall.text).toContain('[sidecar]');
    expect((recall.result.details as { ids: string[] }).ids).toEqual(['projects/sidecar.md', 'deployment.md']);
    const page = await callTool(toolNamed(tools(), 'get_page'), { id: 'people/ada.md' });
    expect(page.text).toContain('# Ada Lovelace (id: people/ada.md)');
    expect(page.text).toContain('analytical engine');
    await expect(callTool(toolNamed(tools(), 'get_page'), { id: '../etc/passwd' })).rejects.toThrow(/no Brain page has the id/);
    const hostile = await callTool(toolNamed(tools(), 'recall'), { query: 'NEAR( "ada' });
    expect(hostile.text).toContain('people/ada.md');
  });

  it('picks up added, changed and deleted pages after the throttle interval', async () => {
    await writeFile(path.join(brainDir, 'people/ada.md'), '# Ada Lovelace\n\nShe also wrote about the loom of Jacquard.\n');
    await writeFile(path.join(brainDir, 'new.md'), '# Jacquard loom\n\nPunched cards.\n');
    await rm(path.join(brainDir, 'deployment.md'));
    const recall = toolNamed(tools(), 'recall');
    // Within the throttle window the index still answers from the last scan.
    expect((await callTool(recall, { query: 'jacquard' })).text).toBe('No page matches "jacquard".');
    clock += 1_000;
    const after = await callTool(recall, { query: 'jacquard' });
    expect((after.result.details as { ids: string[] }).ids.sort()).toEqual(['new.md', 'people/ada.md']);
    const gone = await callTool(recall, { query: 'migrations' });
    expect(gone.text).toBe('No page matches "migrations".');
  });
});
