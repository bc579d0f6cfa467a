import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyPatchCorpus, corpusHidden, corpusOutsideFile } from '../../fixtures/apply-patch-corpus.js';
import { expectedAfter, filesOf, layOut, patchText, snapshot } from '../../fixtures/apply-patch-harness.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';
import { createClient, openTurn, textOf, type TurnDriver } from './turn-driver.js';

// The apply_patch corpus over real gRPC: a real sidecar child (default sandbox policy:
// workspace-write, `secrets` hidden), one Turn, each patch sent as the model's arguments to
// `apply_patch`. The workspace is compared byte for byte after each; a refused patch leaves it,
// and the folder outside, exactly as they were.
let dir: string;
let workspace: string;
let outside: string;
let sidecar: StartedSidecar;
let turn: TurnDriver;
let calls = 0;

describe('apply_patch corpus over gRPC', () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'apply-patch-grpc-'));
    workspace = join(dir, 'workspace');
    outside = join(dir, 'outside');
    mkdirSync(workspace);
    mkdirSync(outside);
    sidecar = await startSidecar({
      // workspace-write even where bubblewrap is missing: apply_patch needs no sandbox of its own, and
      // its git-metadata rule is workspace-write's (under `off` nothing guards .git from commands either).
      args: ['--workspace', workspace, '--state-dir', join(dir, 'state'), '--sandbox', 'workspace-write', ...corpusHidden.flatMap((name) => ['--hide', join(workspace, name)]), '--log-level', 'error'],
    });
    turn = await openTurn(createClient(sidecar.address), 'agent-patch');
  }, 60_000);

  afterAll(async () => {
    await turn?.end().catch(() => {});
    await sidecar?.stop();
    rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  it('offers apply_patch as a destructive function tool taking { patch: string }', () => {
    const tool = turn.toolSet.tools.find((candidate) => candidate.name === 'apply_patch');
    expect(tool?.destructive).toBe(true);
    expect(JSON.parse(tool!.parametersJson)).toMatchObject({ type: 'object', properties: { patch: { type: 'string' } }, required: ['patch'] });
  });

  for (const entry of applyPatchCorpus) {
    it(`${entry.refuse ? 'refuses' : 'applies'}: ${entry.name} (${entry.source})`, async () => {
      layOut(entry, workspace, outside);
      const before = snapshot(workspace);
      const outsideBefore = snapshot(outside);
      const result = await turn.call(`p${++calls}`, 'apply_patch', { patch: patchText(entry, outside) });
      if (entry.refuse) {
        expect(result.error?.code, textOf(result)).toBe(entry.refuse.code);
        expect(textOf(result)).toMatch(entry.refuse.message);
        expect(snapshot(workspace)).toEqual(before);
      } else {
        expect(result.error, textOf(result)).toBeUndefined();
        expect(filesOf(snapshot(workspace))).toEqual(expectedAfter(before, entry));
        if (entry.says) expect(textOf(result)).toMatch(entry.says);
      }
      expect(snapshot(outside)).toEqual(outsideBefore);
      expect(readFileSync(join(outside, corpusOutsideFile.name), 'utf8')).toBe(corpusOutsideFile.content);
    });
  }
});
