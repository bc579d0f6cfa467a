import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, openSync, closeSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, type SuiteOptions } from 'vitest';
import { parseLimitSettings } from '../../../sidecar/categories/computer/sandbox/limits/limit-settings.js';
import { openProcessLimiter } from '../../../sidecar/categories/computer/sandbox/limits/process-limiter.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';
import { bwrapWorks } from '../../fixtures/test-sandbox.js';
import { createClient, openTurn, textOf, type TurnDriver } from '../sidecar/turn-driver.js';

// The limits, tried as a hostile command would, over real gRPC against a real sidecar under real
// bubblewrap, each bounded so the test machine survives: a memory hog 400 MB over a 128 MiB limit,
// a fork bomb of at most 300 sleeps against a pids limit of 64, 64 MB into a 16 MiB /tmp. Each part
// runs where this machine offers its mechanism and skips, saying why, where it does not (CI
// containers often have no writable cgroup): the line below says which ran.
const LIMITS = 'memory=128M,pids=64,tmp=16M';
const probe = await openProcessLimiter(parseLimitSettings(LIMITS));
probe.close();
const cgroups = probe.mechanism === 'cgroup-v1' || probe.mechanism === 'cgroup-v2';
const sizedTmp = bwrapWorks() && /--size\b/.test(spawnSync(process.env.TOOLS_RUNTIME_BWRAP || 'bwrap', ['--help'], { encoding: 'utf8' }).stdout ?? '');
const python = spawnSync('python3', ['-c', '1']).status === 0;
const skipUnless = (ok: boolean, why: string): SuiteOptions => (ok ? {} : { skip: true, meta: { missingSystemTools: `process limits: ${why}` } });
console.log(`process limits: mechanism ${probe.mechanism} (${probe.description}); memory and process tests ${cgroups && bwrapWorks() ? 'run' : 'skip'}, /tmp size ${sizedTmp ? 'runs' : 'skips'}`);

const root = fileURLToPath(new URL('../../../', import.meta.url));
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'process-limits-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let calls = 0;
const id = () => `c${++calls}`;

describe(`an agent's limits (${LIMITS}) under real bubblewrap`, skipUnless(cgroups && bwrapWorks(), `no cgroup (${probe.description}) or no working bubblewrap`), () => {
  let sidecar: StartedSidecar;
  let hostile: TurnDriver;
  let other: TurnDriver;

  beforeAll(async () => {
    const workspace = join(dir, 'workspace');
    mkdirSync(workspace, { recursive: true });
    sidecar = await startSidecar({ args: ['--workspace', workspace, '--state-dir', join(dir, 'state'), '--limits', LIMITS] });
    const client = createClient(sidecar.address);
    hostile = await openTurn(client, 'hostile-agent');
    other = await openTurn(client, 'other-agent');
  });
  afterAll(async () => {
    await hostile?.end();
    await other?.end();
    await sidecar?.stop();
  });

  it('says at start-up which mechanism is in force', async () => {
    for (let index = 0; index < 100 && !sidecar.stderr().includes('limitsMechanism'); index++) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(sidecar.stderr()).toContain(`"limitsMechanism":"${probe.mechanism}"`);
  });

  it.skipIf(!python)('kills a memory hog with a result that says so, while the sidecar and another agent answer', async () => {
    const hog = textOf(await hostile.call(id(), 'run_command', { command: "python3 -c \"b = bytearray(400 * 1024 * 1024); print('survived')\"", timeout_ms: 60_000 }));
    expect(hog).toMatch(/^killed: out of memory \(limit 128 MiB/);
    expect(hog).not.toContain('survived');
    expect(textOf(await other.call(id(), 'run_command', { command: 'echo alive' }))).toContain('alive');
    expect(sidecar.child.exitCode).toBeNull();
  });

  it('stops a bounded fork bomb at the pids limit while another agent\'s commands answer', async () => {
    const bomb = hostile.call(id(), 'run_command', { command: 'i=0; while [ $i -lt 300 ]; do sleep 3 & i=$((i+1)); done 2>&1 | tail -n 1; wait', timeout_ms: 30_000 });
    expect(textOf(await other.call(id(), 'run_command', { command: 'echo still here' }))).toContain('still here');
    expect(textOf(await bomb)).toMatch(/fork|Resource temporarily unavailable/i);
  });

  it.skipIf(!sizedTmp)('fails a write past /tmp\'s size with ENOSPC', async () => {
    const text = textOf(await hostile.call(id(), 'run_command', { command: 'dd if=/dev/zero of=/tmp/fill bs=1M count=64 2>&1; df -k /tmp | tail -n 1' }));
    expect(text).toContain('No space left on device');
  });
});

describe('Ctrl-C into a sandboxed pipe session', skipUnless(bwrapWorks(), 'no working bubblewrap'), () => {
  it('reaches the command inside the sandbox: its trap runs and the session goes on', async () => {
    const workspace = join(dir, 'ctrl-c');
    mkdirSync(workspace, { recursive: true });
    const sidecar = await startSidecar({ args: ['--workspace', workspace, '--state-dir', join(dir, 'ctrl-c-state')] });
    const turn = await openTurn(createClient(sidecar.address), 'agent-1');
    try {
      const start = textOf(await turn.call(id(), 'start_command', { command: "trap 'echo trapped' INT; echo ready; while :; do sleep 0.1; done", yield_ms: 1_000 }));
      const session = /session (s\d+) is still running/.exec(start)?.[1];
      expect(session, start).toBeDefined();
      let text = textOf(await turn.call(id(), 'write_session', { session_id: session, input: '\u0003', yield_ms: 1_000 }));
      for (let index = 0; index < 20 && !text.includes('trapped'); index++) text += textOf(await turn.call(id(), 'read_session', { session_id: session, yield_ms: 200 }));
      expect(text).toContain('trapped');
      expect(text).toContain('still running');
      await turn.call(id(), 'kill_session', { session_id: session });
    } finally {
      await turn.end();
      await sidecar.stop();
    }
  });
});

describe('descriptors the sidecar inherited', () => {
  it('reach no command: all but 0-2 are closed before its exec', () => {
    const secret = join(dir, 'launcher-secret');
    writeFileSync(secret, 'secret\n');
    const script = join(dir, 'list-fds.mts');
    writeFileSync(
      script,
      `import { runProcess } from '${root}sidecar/categories/computer/run-process.ts';\n` +
        "const outcome = await runProcess({ command: 'for f in /proc/self/fd/*; do readlink \"$f\"; done', cwd: '/', env: { PATH: process.env.PATH }, policy: { mode: 'off', network: { mode: 'on' }, workspace: '/', hide: [], readable: [] }, signal: new AbortController().signal });\n" +
        'console.log(outcome.output);\n',
    );
    const fd = openSync(secret, 'r');
    try {
      // As a shell's `3< secret` (and a high one, as bash's own 255) would leave them to the sidecar.
      const stdio = ['ignore', 'pipe', 'pipe', ...Array.from({ length: 12 }, () => fd)] as const;
      const run = spawnSync(process.execPath, ['--import', 'tsx', script], { cwd: root, stdio: [...stdio], encoding: 'utf8', timeout: 60_000 });
      expect(run.stderr).toBe('');
      expect(run.stdout).toContain('/dev/null');
      expect(run.stdout).not.toContain(secret);
    } finally {
      closeSync(fd);
    }
  });
});
