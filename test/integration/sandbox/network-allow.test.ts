import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';
import { requireSystemTools } from '../../fixtures/system-tools.js';
import { createClient, openTurn, textOf, type TurnDriver } from '../sidecar/turn-driver.js';

// --network allow: commands reach listed hosts through the sidecar's proxy (a Unix socket bound
// into the sandbox, bridged by socat), and nothing else: not an unlisted host, not a listed name
// that resolves to a private address. The listed host is the test's own server, listed by address.
const suite = requireSystemTools({
  suite: 'sandbox network allow',
  tools: [
    { name: 'bwrap', executable: '/usr/bin/bwrap' },
    { name: 'socat', executable: '/usr/bin/socat' },
    { name: 'curl', executable: '/usr/bin/curl' },
  ],
  aptPackages: ['bubblewrap', 'socat', 'curl'],
});

let dir: string;
let server: Server;
let port: number;
let requests = 0;
let sidecar: StartedSidecar;
let turn: TurnDriver;
let calls = 0;

const run = async (command: string) => textOf(await turn.call(`c${++calls}`, 'run_command', { command, timeout_ms: 30_000 }));

describe('sandbox --network allow:', suite, () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sandbox-network-'));
    server = createServer((request, response) => {
      requests++;
      response.end(`LISTED HOST SAYS HI to ${request.method} ${request.url}\n`);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
    sidecar = await startSidecar({ args: ['--workspace', dir, '--state-dir', join(dir, '.state'), '--sandbox', 'workspace-write', '--network', `allow:127.0.0.1:${port},localhost:${port},*.invalid`] });
    turn = await openTurn(createClient(sidecar.address), 'agent-net');
  }, 60_000);
  afterAll(async () => {
    await turn?.end().catch(() => {});
    await sidecar?.stop();
    await new Promise((resolve) => server?.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  it('fetches from a listed host through the proxy, over plain HTTP and a CONNECT tunnel', async () => {
    const text = await run(`echo "proxy=$HTTP_PROXY"; curl -sS --max-time 10 http://127.0.0.1:${port}/plain; curl -sS --max-time 10 -p http://127.0.0.1:${port}/tunnel`);
    expect(text).toContain('proxy=http://127.0.0.1:3128');
    expect(text).toContain('LISTED HOST SAYS HI to GET /plain');
    expect(text).toContain('LISTED HOST SAYS HI to GET /tunnel');
  });

  it('refuses an unlisted host and a listed name that resolves to a private address; nothing goes around the proxy', async () => {
    const before = requests;
    const text = await run(
      [
        'curl -sS --max-time 10 http://unlisted.example.com/',
        `curl -sS --max-time 10 -p http://unlisted.example.com:${port}/`,
        `curl -sS --max-time 10 http://localhost:${port}/`,
        `curl -sS --max-time 10 --noproxy '*' http://127.0.0.1:${port}/ && echo WENT-AROUND`,
        'true',
      ].join('; '),
    );
    expect(text).toContain('unlisted.example.com is not listed');
    expect(text).toMatch(/localhost resolves to (127\.0\.0\.1|::1), a private/);
    expect(text).not.toContain('WENT-AROUND');
    expect(text).not.toContain('LISTED HOST SAYS HI');
    expect(requests).toBe(before);
  });
});
