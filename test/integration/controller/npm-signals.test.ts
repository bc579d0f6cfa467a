// A process manager (or `kill`) that signals `npm run controller` signals npm, and npm passes the
// signal to its child. npm runs a script through `sh -c`: without `exec` the child was that shell,
// which died of the SIGTERM while the controller, never signalled, kept running, and npm exited
// 143. The scripts exec node, so the signal reaches the controller, which drains and exits 0.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { until } from '../../fixtures/control-plane-client.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'npm-signals-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const reachable = (address: string) =>
  new Promise<boolean>((resolve) => {
    const [host, port] = [address.slice(0, address.lastIndexOf(':')), Number(address.slice(address.lastIndexOf(':') + 1))];
    const socket = connect({ host, port }, () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });

describe('npm run controller under a signal', () => {
  it('SIGTERM to npm reaches serve: it drains, exits 0, and npm exits 0', async () => {
    const agents = join(dir, 'agents.json');
    writeFileSync(agents, JSON.stringify({ 'agent-a': { address: '127.0.0.1:1' } }));
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const name of ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'DATABASE_URL']) delete env[name];
    const npm = spawn('npm', ['run', '--silent', 'controller', '--', 'serve', '--listen', '127.0.0.1:0', '--data-dir', join(dir, 'data'), '--agents', agents, '--embedded'], {
      cwd: root,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    npm.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    npm.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const exited = once(npm, 'exit');
    try {
      await until(async () => stdout, (text) => text.includes('"listening"'), 'the listening line', 90_000);
      const address = (JSON.parse(stdout.split('\n').find((line) => line.includes('"listening"'))!) as { address: string }).address;
      npm.kill('SIGTERM'); // npm only, as a process manager would
      const [code, signal] = (await exited) as [number | null, string | null];
      expect({ code, signal }, stderr).toEqual({ code: 0, signal: null });
      expect(stderr).toContain('SIGTERM: stopping');
      expect(stderr).toContain('controller stopped');
      expect(await reachable(address)).toBe(false);
    } finally {
      try {
        process.kill(-npm.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }, 150_000);
});
