// `npm start -- --console`: one turn on the embedded model whose calls wait for the page's decision,
// decided over the console's HTTP API; after the turn the console keeps serving until Ctrl-C.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { controlTokenPath } from '../../../controller/control-plane/grpc/control-token.js';
import { until } from '../../fixtures/control-plane-client.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'npm-start-console-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface State {
  turns: Array<{ status: string; events: Array<{ event: { type: string; decidedBy?: string } }> }>;
  approvals: Array<{ approvalId: string; toolName: string }>;
  todos: Record<string, unknown>;
}

describe('npm start -- --console', () => {
  it('serves the turn live, takes approvals from the console, then serves until Ctrl-C and exits 0', async () => {
    const env = { ...process.env };
    delete env.OPENAI_API_KEY;
    delete env.OPENAI_BASE_URL;
    // node with tsx's loader, not the tsx CLI: that CLI relays a signal and SIGKILLs (exit 130) a child
    // that does not acknowledge it within 30 ms, which a loaded machine's child sometimes does not.
    const child = spawn(process.execPath, ['--import', 'tsx', `${root}controller/main.ts`, '--console', '127.0.0.1:0', '--approve', 'all', '--data-dir', join(dir, 'data')], {
      cwd: root,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const exited = once(child, 'exit');
    try {
      // The console's address, printed once with the token it generated in the fragment.
      const link = /console at (http:\S+)/.exec(await until(async () => stderr, (text) => /console at http/.test(text), 'the console line', 60_000))![1]!;
      const [url, token] = link.split('#token=') as [string, string];
      expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
      const address = new URL(url).host;
      const tokenFile = controlTokenPath({ dataDir: join(dir, 'data'), kind: 'console', address });
      expect(readFileSync(tokenFile, 'utf8')).toBe(`${token}\n`);
      expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
      const authorization = `Bearer ${token}`;
      expect((await fetch(`${url}api/state`)).status).toBe(401);
      const state = async () => (await (await fetch(`${url}api/state`, { headers: { authorization } })).json()) as State;
      // Every call that is not read-only (the todo list's writes) waits for the page: approve each.
      let approved = 0;
      const finished = await until(
        async () => {
          const current = await state();
          for (const approval of current.approvals) {
            const response = await fetch(`${url}api/approvals/${encodeURIComponent(approval.approvalId)}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization }, body: '{"approved":true}' });
            if (response.ok) approved += 1;
          }
          return current;
        },
        (current) => current.turns[0]?.status === 'completed',
        'the turn to complete',
        90_000,
      );
      expect(approved).toBeGreaterThanOrEqual(1);
      const decided = finished.turns[0]!.events.filter((item) => item.event.type === 'approval-decided');
      expect(decided.length).toBe(approved);
      expect(decided.every((item) => item.event.decidedBy === 'console')).toBe(true);
      expect(Object.keys(finished.todos)).toEqual(['cli-agent']);
      await until(async () => stderr, (text) => text.includes('keeps serving'), 'the keeps-serving line', 30_000);
      expect(stdout).toContain('You asked:');
      // Still serving after the turn: the page can be read until Ctrl-C.
      expect((await fetch(`${url}api/state`, { headers: { authorization } })).status).toBe(200);
      // Only the first line carried the token; the later one shows the bare address.
      expect(stderr.split(token).length - 1).toBe(1);
      expect(stderr).toContain(`keeps serving at ${url} `);
      process.kill(-child.pid!, 'SIGINT');
      const [code] = (await exited) as [number | null];
      expect(code, stderr).toBe(0);
      expect(existsSync(tokenFile)).toBe(false);
      // The turn had ended: Ctrl-C stops the console, there is no turn to abort.
      expect(stderr).toContain('interrupted: stopping');
      expect(stderr).not.toContain('aborting the turn');
      await expect(fetch(`${url}api/state`)).rejects.toThrow();
    } finally {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }, 180_000);
});
