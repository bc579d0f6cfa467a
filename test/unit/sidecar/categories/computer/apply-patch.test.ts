import { mkdirSync, readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isToolRuntimeError, type WorkerAgentTool } from '../../../../../src/index.js';
import { createComputerTools } from '../../../../../sidecar/categories/computer.js';
import { applyHunks, seekLines } from '../../../../../sidecar/categories/computer/apply-patch/apply-hunks.js';
import { parsePatch, type PatchHunk, type PatchOperation } from '../../../../../sidecar/categories/computer/apply-patch/parse-patch.js';
import { applyPatchCorpus, corpusHidden, corpusOutsideFile } from '../../../../fixtures/apply-patch-corpus.js';
import { expectedAfter, filesOf, layOut, patchText, snapshot } from '../../../../fixtures/apply-patch-harness.js';
import { testSandboxSettings } from '../../../../fixtures/test-sandbox.js';
import { callTool, makeTempDir, testConfig, testContext, toolNamed } from '../tool-harness.js';

describe('apply_patch over the corpus (in process)', () => {
  let base: Awaited<ReturnType<typeof makeTempDir>>;
  let workspace: string;
  let outside: string;
  let tool: WorkerAgentTool;

  beforeAll(async () => {
    base = await makeTempDir('apply-patch');
    workspace = path.join(base.dir, 'workspace');
    outside = path.join(base.dir, 'outside');
    mkdirSync(workspace);
    mkdirSync(outside);
    const stateDir = path.join(base.dir, 'state');
    const sandbox = { ...testSandboxSettings(stateDir, 'workspace-write'), hide: [stateDir, ...corpusHidden.map((name) => path.join(workspace, name))] };
    tool = toolNamed(createComputerTools(testContext(testConfig({ workspace, stateDir, sandbox }))), 'apply_patch');
  });
  afterAll(async () => base.remove());

  for (const entry of applyPatchCorpus) {
    it(`${entry.refuse ? 'refuses' : 'applies'}: ${entry.name} (${entry.source})`, async () => {
      layOut(entry, workspace, outside);
      const before = snapshot(workspace);
      const outsideBefore = snapshot(outside);
      const outcome = await callTool(tool, { patch: patchText(entry, outside) }).catch((error: unknown) => error);
      if (entry.refuse) {
        expect(isToolRuntimeError(outcome, entry.refuse.code as never), String(outcome)).toBe(true);
        expect((outcome as Error).message).toMatch(entry.refuse.message);
        expect(snapshot(workspace)).toEqual(before);
      } else {
        expect(outcome, String(outcome)).not.toBeInstanceOf(Error);
        expect(filesOf(snapshot(workspace))).toEqual(expectedAfter(before, entry));
        if (entry.says) expect((outcome as { text: string }).text).toMatch(entry.says);
      }
      expect(snapshot(outside)).toEqual(outsideBefore);
      expect(readFileSync(path.join(outside, corpusOutsideFile.name), 'utf8')).toBe(corpusOutsideFile.content);
    });
  }

  it('names the files in its activity and says what it did', async () => {
    expect(tool.describeActivity({ patch: '*** Begin Patch\n*** Add File: a.txt\n+x\n*** Delete File: b.txt\n*** End Patch' })).toBe('Patching a.txt, b.txt');
    expect(tool.isDestructive).toBe(true);
    expect(tool.executionMode).toBe('sequential');
    expect(realpathSync(workspace)).toBeTruthy();
  });

  it('refuses every write under a read-only sandbox, and changes nothing', async () => {
    const readOnly = toolNamed(createComputerTools(testContext(testConfig({ workspace, stateDir: path.join(base.dir, 'state'), sandbox: { ...testSandboxSettings(path.join(base.dir, 'state'), 'read-only') } }))), 'apply_patch');
    layOut({ name: 'ro', source: 'ours', files: { 'a.txt': 'a\n' }, patch: '' }, workspace, outside);
    const before = snapshot(workspace);
    const error = await callTool(readOnly, { patch: '*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n*** End Patch' }).catch((e: unknown) => e);
    expect(isToolRuntimeError(error, 'sandbox_denied')).toBe(true);
    expect((error as Error).message).toMatch(/read-only/);
    expect(snapshot(workspace)).toEqual(before);
  });
});

/** The hunks of a parsed Update File. */
function hunksOf(operation: PatchOperation | undefined): PatchHunk[] {
  if (operation?.kind !== 'update') throw new Error('not an update');
  return operation.hunks;
}

describe('the V4A parser and hunk applier', () => {
  it('parses every operation with its hunks, anchors and end-of-file marks', () => {
    const operations = parsePatch(['*** Begin Patch', '*** Add File: a', '+1', '*** Update File: b', '*** Move to: c', '@@ class X', '@@ def y', ' k', '-o', '+n', '*** End of File', '*** Delete File: d', '*** End Patch'].join('\n'));
    expect(operations).toEqual([
      { kind: 'add', path: 'a', lines: ['1'] },
      { kind: 'update', path: 'b', moveTo: 'c', hunks: [{ anchors: ['class X', 'def y'], oldLines: ['k', 'o'], newLines: ['k', 'n'], contextOf: [0, undefined], added: 1, removed: 1, endOfFile: true, patchLine: 6 }] },
      { kind: 'delete', path: 'd' },
    ]);
  });

  it('matches exactly first, then ignoring trailing whitespace, then all surrounding whitespace', () => {
    expect(seekLines(['a ', 'a'], ['a'], 0, false)).toEqual({ index: 1, level: 'exact' });
    expect(seekLines(['  a ', 'a  '], ['a'], 0, false)).toEqual({ index: 1, level: 'trailing-whitespace' });
    expect(seekLines(['x', '  a '], ['a'], 0, false)).toEqual({ index: 1, level: 'whitespace' });
    expect(seekLines(['a', 'b', 'a'], ['a'], 0, true)).toEqual({ index: 2, level: 'exact' });
    expect(seekLines(['a'], ['a', 'b'], 0, false)).toBeUndefined();
  });

  it('names the file, the hunk, its first lines and where it looked when a hunk does not match', () => {
    const [update] = parsePatch('*** Begin Patch\n*** Update File: src/app.ts\n@@ function main()\n const a = 1;\n-const b = 2;\n+const b = 3;\n*** End Patch');
    const error = (() => {
      try {
        applyHunks('src/app.ts', 'function main() {\n  const a = 1;\n  const b = 22;\n}\n', hunksOf(update));
      } catch (caught) {
        return caught as Error;
      }
      return undefined;
    })();
    expect(error?.message).toMatch(/hunk 1 of src\/app\.ts \(patch line 3\) does not match the file, so nothing was changed/);
    expect(error?.message).toMatch(/after line 1 \("function main\(\)"\):\n    const a = 1;\n    const b = 2;/);
    expect(error?.message).toMatch(/closest lines in the file are at line 2:\n\s+2\|   const a = 1;/);
  });

  it('applies a 50-hunk patch to a 10,000-line file exactly', () => {
    const lines = Array.from({ length: 10_000 }, (_, index) => `line ${index} ${'x'.repeat(index % 17)}`);
    const body: string[] = [];
    for (let hunk = 0; hunk < 50; hunk++) {
      const at = hunk * 200 + 100;
      body.push('@@', ` ${lines[at - 1]}`, `-${lines[at]}`, `+changed ${at}`, ` ${lines[at + 1]}`);
    }
    const [update] = parsePatch(['*** Begin Patch', '*** Update File: big.txt', ...body, '*** End Patch'].join('\n'));
    const result = applyHunks('big.txt', `${lines.join('\n')}\n`, hunksOf(update));
    const expected = lines.map((line, index) => (index % 200 === 100 ? `changed ${index}` : line));
    expect(result.text).toBe(`${expected.join('\n')}\n`);
    expect([result.added, result.removed]).toEqual([50, 50]);
  });
});
