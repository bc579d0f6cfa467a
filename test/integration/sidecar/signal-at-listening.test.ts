// A spawner may signal the sidecar the moment it reads the listening line (a controller that is
// told to stop while its sidecar starts; the startup bench). The sidecar installs its SIGTERM
// handler and lifeline before it prints that line, so even then it drains and exits 0, rather
// than dying by the signal's default action.
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SIDECAR_NODE_FLAGS } from '../../../controller/sidecar-client/spawn-sidecar.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
let scratch: string;

beforeAll(() => {
  execFileSync(process.execPath, [join(root, '.ci/build.mjs'), '--if-stale'], { cwd: root, stdio: 'pipe', timeout: 180_000 });
  scratch = mkdtempSync(join(tmpdir(), 'signal-at-listening-'));
}, 200_000);
afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** Starts the built sidecar and calls `end` synchronously in the stdout callback that brings the listening line. */
async function endAtListening(end: (child: ReturnType<typeof spawn>) => void, extraArgs: string[] = []) {
  const child = spawn(
    process.execPath,
    [...SIDECAR_NODE_FLAGS, join(root, 'dist/sidecar/main.js'), '--workspace', scratch, '--state-dir', join(scratch, 'state'), '--log-level', 'info', ...extraArgs],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  let ended = false;
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    if (!ended && chunk.includes('"listening"')) {
      ended = true;
      end(child);
    }
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
  clearTimeout(timer);
  return { code, signal, stderr, ended };
}

describe('a sidecar signalled as soon as it says it listens', () => {
  it('drains and exits 0 on SIGTERM sent from the listening line, every time', async () => {
    for (let round = 0; round < 3; round++) {
      const { code, signal, stderr, ended } = await endAtListening((child) => child.kill('SIGTERM'));
      expect(ended).toBe(true);
      expect({ code, signal }, stderr).toEqual({ code: 0, signal: null });
      expect(stderr).toContain('"msg":"draining"');
    }
  }, 120_000);

  it('drains and exits 0 when its lifeline closes at the listening line, without waiting for the tool catalogs to load', async () => {
    const { code, signal, stderr } = await endAtListening((child) => child.stdin!.destroy(), ['--exit-on-stdin-eof']);
    expect({ code, signal }, stderr).toEqual({ code: 0, signal: null });
    expect(stderr).toContain('stdin reached EOF');
    expect(stderr).not.toContain('loading the tool catalogs failed');
  }, 60_000);
});
