// The error messages a newcomer meets first, from the real commands: one line that says what is
// wrong and how to fix it, and the documented exit status.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runToExit } from '../../fixtures/run-to-exit.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'newcomer-errors-'));
let occupied: Server;
let busyPort: number;
beforeAll(async () => {
  occupied = createServer();
  await new Promise<void>((resolve) => occupied.listen(0, '127.0.0.1', resolve));
  busyPort = (occupied.address() as { port: number }).port;
});
afterAll(async () => {
  await new Promise((resolve) => occupied.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

const env = (): NodeJS.ProcessEnv => {
  const copy = { ...process.env };
  for (const name of ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'DATABASE_URL']) delete copy[name];
  return copy;
};
const run = (entry: string, args: string[]) => runToExit(process.execPath, ['--import', 'tsx', `${root}${entry}`, ...args], { cwd: root, env: env(), timeoutMs: 60_000 });
const start = (args: string[]) => run('controller/main.ts', args);
const controller = (args: string[]) => run('controller/control-plane-main.ts', args);
const sidecar = (args: string[]) => run('sidecar/main.ts', args);

describe('npm start usage errors', () => {
  it('an unknown flag: one line without Node\'s advice about "--", then where the options are; exit 2', async () => {
    const result = await start(['--promt', 'hi']);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('error: unknown option --promt\n(npm start -- --help lists the options)\n');
  });

  it('a --workspace that does not exist is bad usage (exit 2), found before a sidecar starts', async () => {
    const result = await start(['--workspace', join(dir, 'nope')]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^error: --workspace .*nope is not an existing folder/);
  });

  it('--sidecar without a port is refused instead of dialling 443', async () => {
    const result = await start(['--sidecar', '127.0.0.1']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^error: --sidecar takes HOST:PORT.*not "127\.0\.0\.1" \(the port is missing/);
    expect(result.stderr).not.toContain('Resolution note');
  });
});

describe('listen addresses', () => {
  it('the sidecar refuses --listen without a port (exit 2) and names a port in use (exit 1)', async () => {
    const bare = await sidecar(['--workspace', dir, '--listen', '127.0.0.1']);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toMatch(/--listen takes HOST:PORT, \[IPv6\]:PORT or unix:\/path.*the port is missing/);
    const busy = await sidecar(['--workspace', dir, '--state-dir', join(dir, 'state'), '--listen', `127.0.0.1:${busyPort}`]);
    expect(busy.code).toBe(1);
    expect(busy.stderr).toContain(`tools-runtime sidecar: port ${busyPort} is in use (127.0.0.1:${busyPort})`);
    expect(busy.stderr).not.toMatch(/^tools-runtime sidecar: No address added/m);
  });

  it('serve names a port in use too, and refuses --listen without a port', async () => {
    const agents = join(dir, 'agents.json');
    (await import('node:fs')).writeFileSync(agents, JSON.stringify({ a: { address: '127.0.0.1:1' } }));
    const bare = await controller(['serve', '--agents', agents, '--data-dir', join(dir, 'data'), '--listen', 'localhost']);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toMatch(/^error: --listen takes HOST:PORT.*\n\(npm run controller -- serve --help lists the options\)\n$/);
    const busy = await controller(['serve', '--agents', agents, '--data-dir', join(dir, 'data'), '--listen', `127.0.0.1:${busyPort}`, '--embedded']);
    expect(busy.code).toBe(1);
    expect(busy.stderr).toContain(`error: port ${busyPort} is in use`);
  });
});

describe('workflow show', () => {
  it('an unknown run points at the CLI command, not the model\'s tool', async () => {
    const result = await controller(['workflow', 'show', 'nope', '--data-dir', join(dir, 'data')]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('`npm run controller -- workflow list` shows the runs');
    expect(result.stderr).not.toContain('workflow_list');
  });
});
