// Command sessions over real gRPC against the real sidecar (sidecar/main.ts, its real catalogs):
// real shells, a real PTY, real turns. Sandbox: test-sandbox.ts's choice (startSidecar adds it),
// the default workspace-write where bubblewrap works, off where it does not; the server test
// opens the network (--network on) so a second command can reach the session's server.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';
import { requireSystemTools } from '../../fixtures/system-tools.js';
import { testSandboxMode } from '../../fixtures/test-sandbox.js';
import { createClient, openTurn, textOf, type TurnDriver } from './turn-driver.js';

let dir: string;
const groups: number[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'sidecar-sessions-'));
});
afterAll(() => {
  for (const group of groups) {
    try {
      process.kill(-group, 'SIGKILL');
    } catch {
      // gone
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

const start = (workspace: string, extra: string[] = []) =>
  startSidecar({ args: ['--workspace', workspace, '--state-dir', join(workspace, '.state'), '--log-level', 'error', ...extra], timeoutMs: 60_000 });

/** Live (non-zombie) processes whose command line is exactly `command` (sandboxed ones too). */
function processesWith(command: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) continue;
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ').trim() === command) found.push(Number(entry));
    } catch {
      // gone
    }
  }
  return found;
}

/** Live (non-zombie) processes in process group `group`. */
function membersOf(group: number): number[] {
  const members: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] !== 'Z' && Number(fields[2]) === group) members.push(Number(entry));
    } catch {
      // gone
    }
  }
  return members;
}

async function waitFor<T>(check: () => T | undefined, ms: number): Promise<T | undefined> {
  const end = Date.now() + ms;
  for (;;) {
    const value = check();
    if (value !== undefined || Date.now() > end) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const detailsOf = (turn: TurnDriver, callId: string) => JSON.parse(turn.record(callId).result!.detailsJson) as { sessionId: string; running: boolean; exitCode: number | null };

/** Starts a session and returns its id and process group (from the "pid N" of its status line). */
async function startSession(turn: TurnDriver, callId: string, args: Record<string, unknown>): Promise<{ id: string; group: number; text: string }> {
  const text = textOf(await turn.call(callId, 'start_command', args));
  const match = /session (s\d+) is still running \([\d.]+ s, pid (\d+)\)/.exec(text);
  if (!match) throw new Error(`start_command ${callId} did not leave a session running: ${text}`);
  const group = Number(match[2]);
  groups.push(group);
  return { id: match[1]!, group, text };
}

/** Polls with read_session until `pattern` shows (bounded). */
async function readUntil(turn: TurnDriver, id: string, pattern: RegExp, seen = ''): Promise<string> {
  let text = seen;
  for (let index = 0; index < 100 && !pattern.test(text); index++) {
    text += textOf(await turn.call(`read-${id}-${Math.random()}`, 'read_session', { session_id: id, yield_ms: 200 }));
  }
  return text;
}

describe(`command sessions over gRPC (sandbox: ${testSandboxMode()})`, () => {
  let sidecar: StartedSidecar;
  let client: ReturnType<typeof createClient>;
  beforeAll(async () => {
    sidecar = await start(dir);
    client = createClient(sidecar.address);
  });
  afterAll(async () => {
    client.close();
    await sidecar.stop('SIGTERM');
  });

  it('keeps a session across turns of the same agent, hides it from another, and streams its output to the turn waiting on it', async () => {
    const first = await openTurn(client, 'agent-a');
    const { id, group } = await startSession(first, 'start', { command: 'echo started; while read line; do echo "got $line"; done', yield_ms: 300 });
    expect(first.record('start').events.some((event) => event?.$case === 'presentation' && event.value.kind === 'command.output' && event.value.payloadJson.includes('started'))).toBe(true);
    await first.end();
    expect(membersOf(group).length).toBeGreaterThan(0);

    const next = await openTurn(client, 'agent-a');
    expect(textOf(await next.call('list', 'list_sessions', {}))).toContain(`${id}: running`);
    const write = await next.call('write', 'write_session', { session_id: id, input: 'ping\n', yield_ms: 500 });
    const text = await readUntil(next, id, /got ping/, textOf(write));
    expect(text).toContain('got ping');
    const streamed = next.record('write').events.filter((event) => event?.$case === 'presentation').map((event) => JSON.parse(event!.$case === 'presentation' ? event!.value.payloadJson : '{}'));
    expect(streamed.every((payload) => payload.session_id === id && payload.stream === 'output')).toBe(true);

    const other = await openTurn(client, 'agent-b');
    expect(textOf(await other.call('list', 'list_sessions', {}))).toBe('no sessions; start one with start_command');
    const stolen = await other.call('steal', 'write_session', { session_id: id, input: 'rm -rf /\n' });
    expect(stolen.error?.code).toBe('session_not_found');
    await other.end();

    const killed = await next.call('kill', 'kill_session', { session_id: id });
    expect(textOf(killed)).toMatch(new RegExp(`session ${id} ended`));
    expect(await waitFor(() => (membersOf(group).length === 0 ? true : undefined), 10_000)).toBe(true);
    const gone = await next.call('again', 'read_session', { session_id: id });
    expect(gone.error?.code).toBe('session_not_found');
    await next.end();
  });

  it('refuses input over the byte bound with input_too_large and sends nothing', async () => {
    const turn = await openTurn(client, 'agent-big');
    const { id } = await startSession(turn, 'start', { command: 'cat', yield_ms: 0 });
    const result = await turn.call('big', 'write_session', { session_id: id, input: 'x'.repeat(70_000) });
    expect(result.error?.code).toBe('input_too_large');
    const read = await turn.call('read', 'read_session', { session_id: id, yield_ms: 200 });
    expect(textOf(read)).toContain('(no new output)');
    await turn.call('kill', 'kill_session', { session_id: id });
    await turn.end();
  });

  it('keeps the sidecar\'s memory bounded while a session prints 100 MB to a waiting turn', async () => {
    const pid = sidecarPid(sidecar);
    const turn = await openTurn(client, 'agent-flood');
    const before = residentKiB(pid);
    const { id } = await startSession(turn, 'start', { command: "head -c 100000000 /dev/zero | tr '\\0' a; echo; echo END", yield_ms: 0 });
    let text = '';
    let lastOutput = '';
    let cut = 0;
    let kept = 0;
    // A loaded machine may need several polls: each takes what came since the last, head and tail.
    // The last output can come in a poll that still finds the command running (its wait ended on
    // the output budget before the exit was seen); the poll after it then reports the exit alone.
    for (let index = 0; index < 200 && !/ended: exit code 0/.test(text); index++) {
      text = textOf(await turn.call(`poll-${index}`, 'read_session', { session_id: id, yield_ms: 2_000 }));
      const polledCut = Number(/; (\d+) characters of output cut/.exec(text)?.[1] ?? 0);
      cut += polledCut;
      const output = text.slice(text.indexOf('\n') + 1);
      if (output !== '(no new output)') lastOutput = output;
      kept += output === '(no new output)' ? 0 : output.replace(/\n\[… \d+ characters cut …\]\n/, '').length;
    }
    expect(text).toMatch(/ended: exit code 0 \([\d.]+ s\)/);
    expect(lastOutput.trimEnd().endsWith('END')).toBe(true);
    expect(cut + kept).toBeGreaterThanOrEqual(100_000_000);
    expect(cut).toBeGreaterThan(98_000_000);
    // 100 MB held as text would be over 100 MiB more; the session holds head and tail only.
    const grown = residentKiB(pid) - before;
    expect(grown).toBeLessThan(64 * 1024);
    await turn.end();
  });
});

describe(`command sessions with python3 over gRPC (sandbox: ${testSandboxMode()}, --network on)`, requireSystemTools({ suite: 'command sessions with python3', tools: [{ name: 'python3', executable: '/usr/bin/python3' }], aptPackages: ['python3'] }), () => {
  it('starts python3 -m http.server in the workspace, queries it from a second command, kills it, and frees its port', async () => {
    const workspace = mkdtempSync(join(dir, 'www-'));
    writeFileSync(join(workspace, 'hello.txt'), 'hello from the workspace\n');
    const port = await freePort();
    // Under --network off every sandboxed process has a network of its own: the server's loopback
    // would not be the second command's (see docs/sessions.md).
    const sidecar = await start(workspace, ['--network', 'on']);
    const client = createClient(sidecar.address);
    try {
      const turn = await openTurn(client, 'agent-www');
      const { id, group, text } = await startSession(turn, 'serve', { command: `python3 -u -m http.server ${port} --bind 127.0.0.1`, yield_ms: 1_000 });
      expect(await readUntil(turn, id, /Serving HTTP/, text)).toContain(`port ${port}`);
      const fetch = await turn.call('fetch', 'run_command', { command: `python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:${port}/hello.txt').read().decode())"` });
      expect(textOf(fetch)).toContain('exit code 0');
      expect(textOf(fetch)).toContain('hello from the workspace');
      expect(await readUntil(turn, id, /GET \/hello.txt/)).toContain('"GET /hello.txt HTTP/1.1" 200');
      const killed = await turn.call('stop', 'kill_session', { session_id: id });
      expect(textOf(killed)).toContain(`session ${id} ended`);
      expect(membersOf(group)).toEqual([]);
      expect(processesWith(`python3 -u -m http.server ${port} --bind 127.0.0.1`)).toEqual([]);
      expect(await canListen(port)).toBe(true);
      await turn.end();
    } finally {
      client.close();
      await sidecar.stop('SIGTERM');
    }
  });
});

describe(`sessions die with their sidecar (sandbox: ${testSandboxMode()})`, () => {
  it('leaves no session process, pipe or PTY, when the sidecar is SIGKILLed', async () => {
    const sidecar = await start(dir);
    const client = createClient(sidecar.address);
    try {
      const turn = await openTurn(client, 'agent-kill');
      const marker = `${process.pid}${Date.now() % 100_000}`;
      await startSession(turn, 'pipe', { command: `sh -c 'sleep 301${marker} & sleep 302${marker}; wait'`, yield_ms: 300 });
      await startSession(turn, 'tty', { command: `sleep 303${marker}`, tty: true, yield_ms: 300 });
      const all = () => [...processesWith(`sleep 301${marker}`), ...processesWith(`sleep 302${marker}`), ...processesWith(`sleep 303${marker}`)];
      expect(await waitFor(() => (all().length === 3 ? true : undefined), 10_000)).toBe(true);
      await sidecar.stop('SIGKILL');
      const left = await waitFor(() => (all().length === 0 ? true : undefined), 15_000);
      expect(left ? [] : all()).toEqual([]);
    } finally {
      client.close();
      await sidecar.stop('SIGKILL');
    }
  });

  it('kills every session when the sidecar drains on SIGTERM', async () => {
    const sidecar = await start(dir);
    const client = createClient(sidecar.address);
    try {
      const turn = await openTurn(client, 'agent-term');
      const marker = `sleep 304${process.pid}${Date.now() % 100_000}`;
      await startSession(turn, 'tty', { command: marker, tty: true, yield_ms: 200 });
      expect(await waitFor(() => (processesWith(marker).length === 1 ? true : undefined), 10_000)).toBe(true);
      await turn.end();
      expect(await sidecar.stop('SIGTERM')).toBe(0);
      expect(await waitFor(() => (processesWith(marker).length === 0 ? true : undefined), 10_000)).toBe(true);
    } finally {
      client.close();
      await sidecar.stop('SIGKILL');
    }
  });
});

/** The real sidecar's pid: tsx runs it as a node grandchild in the started process group. */
function sidecarPid(sidecar: StartedSidecar): number {
  const group = sidecar.child.pid!;
  const members = membersOf(group).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('sidecar/main.ts') && !readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('tsx/dist/cli');
    } catch {
      return false;
    }
  });
  return members.at(-1) ?? group;
}

function residentKiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0);
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function canListen(port: number): Promise<boolean> {
  const server = createServer();
  const ok = await new Promise<boolean>((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => resolve(true));
  });
  if (ok) await new Promise((resolve) => server.close(resolve));
  return ok;
}
