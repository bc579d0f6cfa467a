import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';
import { requireSystemTools } from '../../fixtures/system-tools.js';
import { createClient, openTurn, textOf, type TurnDriver } from '../sidecar/turn-driver.js';

// Issue 32, item 3: a command must not reach the sidecar that runs it (or another one) and act as
// an agent. Two sidecars started by hand (no --token-file) with --network on: one on a unix socket,
// one on loopback TCP. Everything lives under /var/tmp, which commands see (unlike the sandbox's
// private /tmp), so what stops them is the hiding and the token, not the folder's place.
const suite = requireSystemTools({
  suite: 'the sidecar\'s own endpoint from inside the sandbox',
  tools: [
    { name: 'bwrap', executable: '/usr/bin/bwrap' },
    { name: 'python3', executable: '/usr/bin/python3' },
  ],
  aptPackages: ['bubblewrap', 'python3'],
});

const root = fileURLToPath(new URL('../../../', import.meta.url));
let dir: string;
let socket: string;
let unixSidecar: StartedSidecar;
let tcpSidecar: StartedSidecar;
let unixTurn: TurnDriver;
let tcpTurn: TurnDriver;
let calls = 0;

async function run(turn: TurnDriver, command: string): Promise<string> {
  const result = await turn.call(`c${++calls}`, 'run_command', { command, timeout_ms: 60_000 });
  return textOf(result);
}

/** A gRPC Health/Check from inside the sandbox, with grpc-js from this checkout; prints `code=N`. */
const healthCheck = (address: string) =>
  `node -e 'const grpc = require(${JSON.stringify(`${root}node_modules/@grpc/grpc-js`)}); ` +
  `const c = new grpc.Client(${JSON.stringify(address)}, grpc.credentials.createInsecure()); ` +
  `c.makeUnaryRequest("/grpc.health.v1.Health/Check", (b) => b, (b) => b, Buffer.alloc(0), { deadline: Date.now() + 10000 }, (e) => { console.log("code=" + (e ? e.code : 0)); process.exit(0); });'`;

describe('a sandboxed command and the sidecar\'s own endpoint', suite, () => {
  beforeAll(async () => {
    dir = mkdtempSync('/var/tmp/own-endpoint-');
    const env = { TOOLS_RUNTIME_RUNTIME_DIR: join(dir, 'runtime') };
    for (const name of ['unix-ws', 'tcp-ws']) mkdirSync(join(dir, name));
    writeFileSync(join(dir, 'unix-ws', 'notes.txt'), 'hello\n');
    socket = join(dir, 'sidecar.sock');
    const common = ['--sandbox', 'workspace-write', '--network', 'on', '--log-level', 'error'];
    unixSidecar = await startSidecar({ args: ['--workspace', join(dir, 'unix-ws'), '--state-dir', join(dir, 'unix-state'), '--listen', `unix:${socket}`, ...common], env });
    tcpSidecar = await startSidecar({ args: ['--workspace', join(dir, 'tcp-ws'), '--state-dir', join(dir, 'tcp-state'), '--listen', '127.0.0.1:0', ...common], env });
    unixTurn = await openTurn(createClient(unixSidecar.address, unixSidecar.token!), 'agent-unix');
    tcpTurn = await openTurn(createClient(tcpSidecar.address, tcpSidecar.token!), 'agent-tcp');
  }, 60_000);

  afterAll(async () => {
    await unixTurn?.end().catch(() => {});
    await tcpTurn?.end().catch(() => {});
    await unixSidecar?.stop('SIGKILL');
    await tcpSidecar?.stop('SIGKILL');
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('cannot connect to its sidecar\'s unix socket (hidden), nor read any sidecar\'s token', async () => {
    const text = await run(
      unixTurn,
      [
        `echo workspace=$(cat notes.txt)`,
        `python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect(${JSON.stringify(socket)}); print("CONNECTED")' 2>&1 | tail -1`,
        `cat ${unixSidecar.tokenFile} ${tcpSidecar.tokenFile} 2>&1 | head -2`,
        `echo listed=$(ls -A ${join(dir, 'runtime')} 2>/dev/null | wc -l)`,
        'true',
      ].join('; '),
    );
    expect(text).toContain('workspace=hello');
    expect(text).not.toContain('CONNECTED');
    expect(text).not.toContain(unixSidecar.token!);
    expect(text).not.toContain(tcpSidecar.token!);
    // The runtime folder (every local server's address and token) shows nothing.
    expect(text).toContain('listed=0');
  });

  it('reaches a sidecar over loopback TCP with --network on, and is refused without the token', async () => {
    const fromOwn = await run(tcpTurn, healthCheck(tcpSidecar.address));
    const fromOther = await run(unixTurn, healthCheck(tcpSidecar.address));
    // 16: UNAUTHENTICATED. The port answers (network on is the host's network) but serves nothing.
    expect(fromOwn).toContain('code=16');
    expect(fromOther).toContain('code=16');
  });
});
