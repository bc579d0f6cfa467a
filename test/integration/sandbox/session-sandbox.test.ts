import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { descendantsOf, liveProcesses, waitFor } from '../../fixtures/process-tree.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';
import { requireSystemTools } from '../../fixtures/system-tools.js';
import { createClient, openTurn, textOf, type TurnDriver } from '../sidecar/turn-driver.js';

// Command sessions are confined like run_command: over real gRPC, a real sidecar with the default
// sandbox (workspace-write, network off) under real bubblewrap, a shell session with pipes and one
// in a PTY each try what the escape corpus tries through run_command. Where bubblewrap cannot be
// had, start_command refuses like run_command (the second suite, which needs no bubblewrap).
const suite = requireSystemTools({
  suite: 'sandboxed command sessions',
  tools: [
    { name: 'bwrap', executable: '/usr/bin/bwrap' },
    { name: 'python3', executable: '/usr/bin/python3' },
  ],
  aptPackages: ['bubblewrap', 'python3'],
});

const TOKEN = `token-${Math.random().toString(36).slice(2)}`;
let dir: string;
let calls = 0;
const id = () => `c${++calls}`;

/** Starts a shell session and returns its id. */
async function shell(turn: TurnDriver, tty: boolean): Promise<string> {
  const text = textOf(await turn.call(id(), 'start_command', { command: 'sh', tty, yield_ms: 300 }));
  const found = /session (s\d+) is still running/.exec(text)?.[1];
  if (!found) throw new Error(`no session: ${text}`);
  return found;
}

/** Types `line` into the shell session and reads until `done` shows (bounded). */
async function type(turn: TurnDriver, session: string, line: string, done: RegExp): Promise<string> {
  let text = textOf(await turn.call(id(), 'write_session', { session_id: session, input: `${line}\n`, yield_ms: 300 }));
  for (let index = 0; index < 50 && !done.test(text); index++) text += textOf(await turn.call(id(), 'read_session', { session_id: session, yield_ms: 200 }));
  return text;
}

describe('sandboxed command sessions (sandbox: workspace-write, network off)', suite, () => {
  let workspace: string;
  let home: string;
  let stateDir: string;
  let tokenFile: string;
  let sidecar: StartedSidecar;
  let turn: TurnDriver;
  let sidecarPid: number;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'session-sandbox-'));
    workspace = join(dir, 'workspace');
    home = join(dir, 'home');
    stateDir = join(dir, 'state');
    tokenFile = join(dir, 'token');
    for (const folder of [workspace, home, stateDir]) mkdirSync(folder);
    writeFileSync(tokenFile, `${TOKEN}\n`);
    sidecar = await startSidecar({
      args: ['--workspace', workspace, '--state-dir', stateDir, '--token-file', tokenFile, '--sandbox', 'workspace-write', '--log-level', 'error'],
      env: { HOME: home },
    });
    turn = await openTurn(createClient(sidecar.address, TOKEN), 'agent-session-sandbox');
    const node = descendantsOf(sidecar.child.pid!).find((entry) => entry.command.includes('sidecar/main.ts') && !entry.command.includes('tsx/dist/cli'));
    sidecarPid = node?.pid ?? sidecar.child.pid!;
  }, 60_000);

  afterAll(async () => {
    await turn?.end().catch(() => {});
    await sidecar?.stop('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  for (const tty of [false, true]) {
    it(`a ${tty ? 'PTY' : 'pipe'} session writes the workspace only, cannot read the token, and cannot see or signal the sidecar`, async () => {
      const session = await shell(turn, tty);
      const name = tty ? 'tty' : 'pipe';
      const inside = await type(turn, session, `echo inside > ${name}.txt; echo "inside=$?"`, /inside=\d/);
      expect(inside).toContain('inside=0');
      expect(readFileSync(join(workspace, `${name}.txt`), 'utf8')).toBe('inside\n');
      const outside = await type(turn, session, `echo escaped > ${home}/${name}.txt; echo "home=$?"; echo escaped > /etc/${name}-escape; echo "etc=$?"`, /etc=\d/);
      expect(outside).toMatch(/home=[1-9]/);
      expect(outside).toMatch(/etc=[1-9]/);
      expect(existsSync(join(home, `${name}.txt`))).toBe(false);
      expect(existsSync(`/etc/${name}-escape`)).toBe(false);
      const token = await type(turn, session, `cat ${tokenFile}; echo "token=$?"`, /token=\d/);
      expect(token).not.toContain(TOKEN);
      const signal = await type(turn, session, `kill -0 ${sidecarPid}; echo "kill=$?"`, /kill=\d/);
      expect(signal).toMatch(/kill=[1-9]/);
      await turn.call(id(), 'kill_session', { session_id: session });
    });
  }

  // As root the agent's commands share one network namespace (docs/sessions.md); elsewhere each
  // sandbox keeps its own, and run_command cannot reach the session's server.
  const shared = process.getuid?.() === 0;
  it(`under --network off, a server in a shell session is queried from the same shell, and ${shared ? "the agent's run_command reaches it too" : 'no run_command reaches it'}`, async () => {
    writeFileSync(join(workspace, 'page.txt'), 'served from the sandbox\n');
    const session = await shell(turn, true);
    const port = 20_000 + (process.pid % 20_000);
    await type(turn, session, `python3 -m http.server ${port} --bind 127.0.0.1 > /dev/null 2>&1 & echo "server=$!"`, /server=\d/);
    const fetch = `python3 -c "import time, urllib.request
for i in range(100):
    try: print('GOT', urllib.request.urlopen('http://127.0.0.1:${port}/page.txt').read().decode()); break
    except OSError: time.sleep(0.05)"`;
    const got = await type(turn, session, `${fetch}; echo "fetched=$?"`, /fetched=\d/);
    expect(got).toContain('GOT served from the sandbox');
    const outside = await turn.call(id(), 'run_command', { command: `python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:${port}/page.txt', timeout=2)"` });
    if (shared) expect(textOf(outside)).toContain('exit code 0');
    else expect(textOf(outside)).not.toContain('exit code 0');
    await turn.call(id(), 'kill_session', { session_id: session });
  });

  it('a process that left the session\'s process group (setsid) dies with the session', async () => {
    const session = await shell(turn, false);
    const marker = `sleep 306${process.pid}${calls}`;
    await type(turn, session, `setsid ${marker} > /dev/null 2>&1 < /dev/null & echo started`, /started/);
    expect(await waitFor(() => (liveProcesses().some((entry) => entry.command === marker) ? true : undefined), 10_000)).toBe(true);
    const killed = await turn.call(id(), 'kill_session', { session_id: session });
    expect(textOf(killed)).toContain(`session ${session} ended`);
    expect(await waitFor(() => (liveProcesses().some((entry) => entry.command === marker) ? undefined : true), 10_000)).toBe(true);
  });
});

describe('command sessions where the sandbox cannot be had (sandbox: workspace-write asked, bwrap missing)', () => {
  let sidecar: StartedSidecar;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'session-sandbox-unavailable-'));
    sidecar = await startSidecar({
      args: ['--workspace', dir, '--state-dir', join(dir, '.state'), '--sandbox', 'workspace-write', '--log-level', 'error'],
      env: { TOOLS_RUNTIME_BWRAP: join(dir, 'no-such-bwrap') },
    });
  }, 60_000);
  afterAll(async () => {
    await sidecar?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('start_command refuses with sandbox_unavailable, naming the fix, and runs nothing, with or without a terminal', async () => {
    const client = createClient(sidecar.address);
    const turn = await openTurn(client, 'agent-no-sandbox');
    for (const tty of [false, true]) {
      const result = await turn.call(id(), 'start_command', { command: 'touch ran.txt', tty });
      expect(result.error?.code).toBe('sandbox_unavailable');
      expect(result.error?.message).toContain('apt-get install bubblewrap');
    }
    expect(existsSync(join(dir, 'ran.txt'))).toBe(false);
    expect(textOf(await turn.call(id(), 'list_sessions', {}))).toBe('no sessions; start one with start_command');
    await turn.end();
    client.close();
  });
});
