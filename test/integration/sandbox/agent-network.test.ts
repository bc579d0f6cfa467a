import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { descendantsOf, stillRunning, waitFor, type ProcessEntry } from '../../fixtures/process-tree.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';
import { requireSystemTools } from '../../fixtures/system-tools.js';
import { createClient, openTurn, textOf, type TurnDriver } from '../sidecar/turn-driver.js';

// One network namespace per agent, over real gRPC against the real sidecar under real bubblewrap
// (--sandbox workspace-write): a server started in a session is reached by the same agent's
// run_command under --network off, and by nothing else (another agent, the host); the namespace's
// holder goes with the agent's last session and with a SIGKILLed sidecar; under allow: the proxy
// works from inside it. Joining a namespace takes root (nsenter), so the suite needs it.
const suite = requireSystemTools({
  suite: 'per-agent network namespaces',
  tools: [
    { name: 'bwrap', executable: '/usr/bin/bwrap' },
    { name: 'nsenter', executable: '/usr/bin/nsenter' },
    { name: 'python3', executable: '/usr/bin/python3' },
    { name: 'socat', executable: '/usr/bin/socat' },
    { name: 'root (joining a network namespace needs CAP_SYS_ADMIN)', command: ['sh', '-c', 'test "$(id -u)" = 0'] },
  ],
  aptPackages: ['bubblewrap', 'util-linux', 'python3', 'socat'],
});

const HOLDER = 'tools-runtime-agent-network';
let dir: string;
let calls = 0;
const id = () => `c${++calls}`;

const start = (workspace: string, network: string, logLevel = 'error') =>
  startSidecar({ args: ['--workspace', workspace, '--state-dir', join(workspace, '.state'), '--sandbox', 'workspace-write', '--network', network, '--log-level', logLevel], timeoutMs: 60_000 });

/** The sidecar's network holders (outer bwrap processes), found under its process tree. */
function holdersOf(sidecar: StartedSidecar): ProcessEntry[] {
  const all = descendantsOf(sidecar.child.pid!).filter((entry) => entry.command.includes(HOLDER) && /^\S*bwrap /.test(entry.command));
  // bwrap's own init inside the holder's PID namespace has the same command line: not counted.
  return all.filter((entry) => !all.some((parent) => parent.pid === entry.parent));
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Whether the host (this test, outside every sandbox) can connect to 127.0.0.1:port. */
function hostReaches(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** A python3 fetch of `url` that prints the body or the error, exit 0 either way. */
const fetchScript = (url: string) => `python3 -c "import urllib.request
try: print('GOT', urllib.request.urlopen('${url}', timeout=3).read().decode())
except Exception as error: print('FAILED', error)"`;

async function serve(turn: TurnDriver, port: number): Promise<string> {
  const text = textOf(await turn.call(id(), 'start_command', { command: `python3 -u -m http.server ${port} --bind 127.0.0.1`, until: 'Serving HTTP', yield_ms: 20_000 }));
  const session = /session (s\d+) is still running/.exec(text)?.[1];
  if (!session || !text.includes('Serving HTTP')) throw new Error(`the server did not start: ${text}`);
  return session;
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'agent-network-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('one network namespace per agent (--network off)', suite, () => {
  let sidecar: StartedSidecar;
  let workspace: string;
  beforeAll(async () => {
    workspace = mkdtempSync(join(dir, 'off-'));
    writeFileSync(join(workspace, 'page.txt'), 'served in the agent network\n');
    sidecar = await start(workspace, 'off');
  }, 60_000);
  afterAll(async () => {
    await sidecar?.stop('SIGKILL');
  });

  it("reaches a session's server from the agent's run_command and session, not from another agent or the host, and tears the namespace down with the last session", async () => {
    const client = createClient(sidecar.address);
    const port = await freePort();
    const owner = await openTurn(client, 'agent-net-owner');
    const server = await serve(owner, port);
    expect(holdersOf(sidecar)).toHaveLength(1);

    const fromCommand = textOf(await owner.call(id(), 'run_command', { command: fetchScript(`http://127.0.0.1:${port}/page.txt`) }));
    expect(fromCommand).toContain('GOT served in the agent network');
    // A second session of the same agent shares the loopback too.
    const fromSession = textOf(await owner.call(id(), 'start_command', { command: fetchScript(`http://127.0.0.1:${port}/page.txt`), yield_ms: 20_000 }));
    expect(fromSession).toContain('GOT served in the agent network');

    const other = await openTurn(client, 'agent-net-other');
    const otherCommand = textOf(await other.call(id(), 'run_command', { command: fetchScript(`http://127.0.0.1:${port}/page.txt`) }));
    expect(otherCommand).toContain('FAILED');
    expect(otherCommand).not.toContain('GOT');
    // Even with a namespace of its own alive (a session of its own), the other agent cannot.
    const otherSession = textOf(await other.call(id(), 'start_command', { command: 'sleep 60', yield_ms: 0 }));
    const otherId = /session (s\d+)/.exec(otherSession)![1]!;
    expect(holdersOf(sidecar)).toHaveLength(2);
    expect(textOf(await other.call(id(), 'run_command', { command: fetchScript(`http://127.0.0.1:${port}/page.txt`) }))).toContain('FAILED');
    expect(await hostReaches(port)).toBe(false);

    const holders = holdersOf(sidecar);
    await owner.call(id(), 'kill_session', { session_id: server });
    await other.call(id(), 'kill_session', { session_id: otherId });
    expect(await waitFor(() => (stillRunning(holders).length === 0 ? true : undefined), 10_000)).toBe(true);
    expect(holdersOf(sidecar)).toEqual([]);
    // With no session left, a command gets a namespace of its own again: the server is gone.
    expect(textOf(await owner.call(id(), 'run_command', { command: fetchScript(`http://127.0.0.1:${port}/page.txt`) }))).toContain('FAILED');
    await owner.end();
    await other.end();
    client.close();
  });

  it('says so at start-up, and leaves no namespace holder when the sidecar is SIGKILLed', async () => {
    const own = await start(workspace, 'off', 'info');
    const client = createClient(own.address);
    try {
      expect(await waitFor(() => (own.stderr().includes('one per agent, shared by its commands and sessions') ? true : undefined), 10_000)).toBe(true);
      const turn = await openTurn(client, 'agent-net-killed');
      await turn.call(id(), 'start_command', { command: 'sleep 300', yield_ms: 0 });
      const holders = holdersOf(own);
      expect(holders).toHaveLength(1);
      // The namespace's inner process too: bwrap's child, in the holder's tree.
      const inner = descendantsOf(holders[0]!.pid);
      expect(inner.length).toBeGreaterThan(0);
      await own.stop('SIGKILL');
      expect(await waitFor(() => (stillRunning([...holders, ...inner]).length === 0 ? true : undefined), 15_000)).toBe(true);
    } finally {
      client.close();
      await own.stop('SIGKILL');
    }
  });
});

describe('one network namespace per agent (--network allow:)', suite, () => {
  let listed: Server;
  let listedPort: number;
  let sidecar: StartedSidecar;
  beforeAll(async () => {
    listed = createHttpServer((_request, response) => response.end('LISTED HOST SAYS HI\n'));
    await new Promise<void>((resolve) => listed.listen(0, '127.0.0.1', resolve));
    listedPort = (listed.address() as { port: number }).port;
    sidecar = await start(mkdtempSync(join(dir, 'allow-')), `allow:127.0.0.1:${listedPort}`); // an entry without a port allows 80 and 443 only
  }, 60_000);
  afterAll(async () => {
    await sidecar?.stop('SIGKILL');
    await new Promise((resolve) => listed?.close(resolve));
  });

  it("reaches a listed host through the proxy from a session and a run_command in the agent's namespace, and the session's server too", async () => {
    const client = createClient(sidecar.address);
    const turn = await openTurn(client, 'agent-net-allow');
    const port = await freePort();
    const server = await serve(turn, port);
    const viaProxy = fetchScript(`http://127.0.0.1:${listedPort}/`);
    // The session's own loopback server is reached directly (NO_PROXY is empty, so urllib would use
    // the proxy: the proxy is told to go to the loopback, which is the host's, not the namespace's).
    const local = `python3 -c "import urllib.request
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
print('LOCAL', opener.open('http://127.0.0.1:${port}/', timeout=3).status)"`;
    const command = textOf(await turn.call(id(), 'run_command', { command: `${viaProxy}; ${local}` }));
    expect(command).toContain('GOT LISTED HOST SAYS HI');
    expect(command).toContain('LOCAL 200');
    const session = textOf(await turn.call(id(), 'start_command', { command: viaProxy, yield_ms: 20_000 }));
    expect(session).toContain('GOT LISTED HOST SAYS HI');
    expect(holdersOf(sidecar)).toHaveLength(1);
    await turn.call(id(), 'kill_session', { session_id: server });
    await turn.end();
    client.close();
  });
});
