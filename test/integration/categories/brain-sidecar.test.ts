// Brain through a real sidecar child started with --brain over a generated knowledge base, driven
// over the raw Turn stream in workflow task turns: the first call during the background build, a
// later one once built, pages changed under the running sidecar, and a restart that reuses the
// index kept in the state folder.
import { rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ToolSidecarServiceClient } from '../../../src/gen/toolruntime/v1/sidecar.js';
import { generateBrainCorpus } from '../../fixtures/brain-corpus.js';
import { openTaskTurn as openTurn } from '../../fixtures/task-turn.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';
import { makeTempDir } from '../../unit/sidecar/categories/tool-harness.js';
import { localTokenOptions } from '../sidecar/turn-driver.js';

async function eventually(probe: () => Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > until) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('Brain through a real sidecar', () => {
  let temp: Awaited<ReturnType<typeof makeTempDir>>;
  let brainDir: string;
  let sidecar: StartedSidecar | undefined;
  let client: ToolSidecarServiceClient | undefined;
  const args = () => ['--workspace', temp.dir, '--state-dir', path.join(temp.dir, 'state'), '--brain', brainDir, '--log-level', 'debug'];

  beforeAll(async () => {
    temp = await makeTempDir('brain-int');
    brainDir = path.join(temp.dir, 'vault');
    // Large enough that its build cannot be over by the time the first call arrives.
    await generateBrainCorpus({ dir: brainDir, pages: 5_000, folders: 20, pageBytes: 1_500 });
  }, 120_000);
  afterAll(async () => {
    client?.close();
    await sidecar?.stop();
    await temp.remove();
  });

  it('answers a first call during the build with the progress, then waits within a longer deadline and answers', async () => {
    sidecar = await startSidecar({ args: args() });
    client = new ToolSidecarServiceClient(sidecar.address, grpc.credentials.createInsecure(), localTokenOptions(sidecar.address));
    const turn = await openTurn(client);
    // 400 ms leaves no real time to wait: the answer is what the build has done so far.
    const early = await turn.call('recall', { query: 'marker42' }, 400);
    expect(early.error).toBe('');
    expect(early.text).toMatch(/^The knowledge base is still being indexed: [\d,]+ pages/);
    expect(early.details.indexing).toBe(true);
    const later = await turn.call('recall', { query: 'marker42' }, 60_000);
    expect(later.text.split('\n')[0]).toMatch(/^1\. .* \(id: area-2\/page-42\.md\)$/);
    const page = await turn.call('get_page', { id: 'area-2/page-42.md' }, 10_000);
    expect(page.text).toContain('marker42');
    await turn.end();
    const logs = sidecar.stderr();
    expect(logs).toContain('"msg":"brain index: building"');
    expect(logs).toMatch(/"msg":"brain index built".*"pages":5000/);
  }, 120_000);

  it('reflects a page added, changed, renamed and deleted under the running sidecar, no call waiting on a scan', async () => {
    const turn = await openTurn(client!);
    // A short deadline: a call that had to wait for a scan would come back as "still indexing" or time out.
    const idsFor = async (query: string) => {
      const outcome = await turn.call('recall', { query }, 2_000);
      expect(outcome.error).toBe('');
      expect(outcome.details.indexing).toBeUndefined();
      return (outcome.details.ids as string[]).sort();
    };
    await writeFile(path.join(brainDir, 'area-0', 'fresh.md'), '# Fresh\n\nquokka sightings\n');
    await eventually(async () => (await idsFor('quokka')).includes('area-0/fresh.md'), 'an added page');
    await writeFile(path.join(brainDir, 'area-1', 'page-1.md'), '# Changed\n\nquokka again\n');
    await eventually(async () => (await idsFor('quokka')).includes('area-1/page-1.md'), 'a changed page');
    expect(await idsFor('marker1')).not.toContain('area-1/page-1.md');
    await rename(path.join(brainDir, 'area-0', 'fresh.md'), path.join(brainDir, 'area-3', 'moved.md'));
    await eventually(async () => JSON.stringify(await idsFor('sightings')) === '["area-3/moved.md"]', 'a renamed page');
    await rm(path.join(brainDir, 'area-1', 'page-1.md'));
    await eventually(async () => JSON.stringify(await idsFor('quokka')) === '["area-3/moved.md"]', 'a deleted page');
    await turn.end();
  }, 120_000);

  it('reuses the index after a restart: the first call is answered at once', async () => {
    client!.close();
    expect(await sidecar!.stop()).toBe(0);
    await writeFile(path.join(brainDir, 'area-4', 'while-down.md'), '# While down\n\nwombat burrows\n');
    sidecar = await startSidecar({ args: args() });
    client = new ToolSidecarServiceClient(sidecar.address, grpc.credentials.createInsecure(), localTokenOptions(sidecar.address));
    const turn = await openTurn(client);
    const first = await turn.call('recall', { query: 'marker42' }, 400);
    expect(first.details.indexing).toBeUndefined();
    expect(first.text.split('\n')[0]).toMatch(/\(id: area-2\/page-42\.md\)$/);
    // The catch-up scan indexes only the page written while the sidecar was down.
    await eventually(async () => ((await turn.call('recall', { query: 'wombat' }, 2_000)).details.ids as string[]).includes('area-4/while-down.md'), 'the page added while down');
    await turn.end();
    expect(sidecar.stderr()).toContain('"msg":"brain index reused; checking for changes in the background"');
    // The rescan's summary is logged when the scan ends, which may be after the page it wrote was
    // already found by a call: wait for the line (bounded) rather than race it.
    await eventually(async () => /"msg":"brain index rescanned"/.test(sidecar!.stderr()), 'the rescan\'s log line');
    expect(sidecar.stderr()).toMatch(/"msg":"brain index rescanned".*"pagesFound":5001,"pagesWritten":1,/);
  }, 120_000);
});
