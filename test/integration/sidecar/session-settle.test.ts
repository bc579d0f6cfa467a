// How a session call's wait ends (exit, quiet, until, budget, timeout) and the terminal's size, over
// real gRPC against the real sidecar: real shells, a real PTY, a real Python REPL where python3 is
// installed. Sandbox: test-sandbox.ts's choice (startSidecar adds it). The assertions are on what
// ended each wait and on the output being whole, never on how long a wait took (bench "sessions").
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';
import { requireSystemTools } from '../../fixtures/system-tools.js';
import { testSandboxMode } from '../../fixtures/test-sandbox.js';
import { createClient, openTurn, textOf, type TurnDriver } from './turn-driver.js';

let dir: string;
let sidecar: StartedSidecar;
let client: ReturnType<typeof createClient>;
let turn: TurnDriver;
let calls = 0;

interface Read {
  text: string;
  endedBy: string | undefined;
  running: boolean;
  error: string | undefined;
}

async function call(tool: string, args: Record<string, unknown>): Promise<Read> {
  const result = await turn.call(`c${++calls}`, tool, args);
  const details = result.detailsJson ? (JSON.parse(result.detailsJson) as { endedBy?: string; running?: boolean }) : {};
  return { text: textOf(result), endedBy: details.endedBy, running: details.running ?? false, error: result.error?.code };
}

async function started(args: Record<string, unknown>): Promise<{ id: string; read: Read }> {
  const read = await call('start_command', args);
  const id = /session (s\d+) is still running/.exec(read.text)?.[1];
  if (!id) throw new Error(`no session: ${read.text}`);
  return { id, read };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'session-settle-'));
  sidecar = await startSidecar({ args: ['--workspace', dir, '--state-dir', join(dir, '.state'), '--log-level', 'error'], timeoutMs: 60_000 });
  client = createClient(sidecar.address);
  turn = await openTurn(client, 'agent-settle');
}, 60_000);
afterAll(async () => {
  await turn?.end().catch(() => {});
  client?.close();
  await sidecar?.stop('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
});

describe(`a session call returns when the program has answered (sandbox: ${testSandboxMode()})`, () => {
  it('returns on quiet once the program answered, with the whole answer, well before the default yield_ms', async () => {
    const { id } = await started({ command: 'while read line; do echo "one $line"; echo "two $line"; done', yield_ms: 0 });
    for (const word of ['alpha', 'beta', 'gamma']) {
      const read = await call('write_session', { session_id: id, input: `${word}\n` });
      expect(read.endedBy).toBe('quiet');
      expect(read.text).toContain(`one ${word}\ntwo ${word}`);
      expect(read.text).toMatch(/returned after \d+ ms: the output went quiet/);
    }
    await call('kill_session', { session_id: id });
  });

  it('does not take a pause before the answer for quiet: no output yet means it keeps waiting (pipes and a terminal)', async () => {
    const pipe = await started({ command: 'while read line; do sleep 0.4; echo "compiled $line"; done', yield_ms: 0 });
    const piped = await call('write_session', { session_id: pipe.id, input: 'main.c\n', yield_ms: 10_000 });
    expect(piped.endedBy).toBe('quiet');
    expect(piped.text).toContain('compiled main.c');
    // In a terminal the shell's echo of the input comes at once: it is not the answer.
    const tty = await started({ command: 'sh', tty: true, yield_ms: 300 });
    const typed = await call('write_session', { session_id: tty.id, input: 'sleep 0.4; echo "slept $((6*7))"\n', yield_ms: 10_000 });
    expect(typed.endedBy).toBe('quiet');
    expect(typed.text).toContain('slept 42');
    await call('kill_session', { session_id: pipe.id });
    await call('kill_session', { session_id: tty.id });
  });

  it('returns at until (a literal, then a /regex/), where quiet alone would have returned early', async () => {
    const { id } = await started({ command: 'while read line; do echo "step 1"; sleep 0.3; echo "step 2"; sleep 0.3; echo "ready 42"; done', yield_ms: 0 });
    const literal = await call('write_session', { session_id: id, input: 'go\n', until: 'ready 42', yield_ms: 10_000 });
    expect(literal.endedBy).toBe('until');
    expect(literal.text).toContain('step 1\nstep 2\nready 42');
    expect(literal.text).toContain('"ready 42" appeared');
    const regex = await call('write_session', { session_id: id, input: 'again\n', until: '/ready \\d+/', yield_ms: 10_000 });
    expect(regex.endedBy).toBe('until');
    expect(regex.text).toContain('step 2\nready 42');
    await call('kill_session', { session_id: id });
  });

  it('names timeout when nothing came within yield_ms, and until not seen', async () => {
    const { id } = await started({ command: 'cat', yield_ms: 0 });
    const silent = await call('read_session', { session_id: id, yield_ms: 200 });
    expect(silent.endedBy).toBe('timeout');
    const unseen = await call('write_session', { session_id: id, input: 'hello\n', until: 'never printed', yield_ms: 300 });
    expect(unseen.endedBy).toBe('timeout');
    expect(unseen.text).toContain('hello');
    expect(unseen.text).toContain('without seeing "never printed"');
    await call('kill_session', { session_id: id });
  });

  it('names exit when the command ended, and budget when ten million characters came first', async () => {
    const ended = await call('start_command', { command: 'echo bye; exit 3', yield_ms: 10_000 });
    expect(ended.endedBy).toBe('exit');
    expect(ended.text).toContain('exit code 3');
    const chatty = await call('start_command', { command: "yes 'a chatty line' | head -c 12000000; sleep 30", yield_ms: 20_000 });
    expect(chatty.endedBy).toBe('budget');
    expect(chatty.running).toBe(true);
    const id = /session (s\d+)/.exec(chatty.text)![1]!;
    await call('kill_session', { session_id: id });
  });

  it('refuses an until that could take exponential time, or does not compile, and sends nothing', async () => {
    const { id } = await started({ command: 'cat', yield_ms: 0 });
    const nested = await call('write_session', { session_id: id, input: 'x\n', until: '/(a+)+$/' });
    expect(nested.error).toBe('invalid_arguments');
    expect(nested.text).toContain('repeats a group that repeats inside');
    const broken = await call('write_session', { session_id: id, input: 'x\n', until: '/(unclosed/' });
    expect(broken.error).toBe('invalid_arguments');
    const read = await call('read_session', { session_id: id, yield_ms: 200 });
    expect(read.text).toContain('(no new output)');
    await call('kill_session', { session_id: id });
  });
});

describe(`a terminal's size (sandbox: ${testSandboxMode()})`, () => {
  it('starts at cols × rows, resizes through write_session, and the screen follows', async () => {
    const { id } = await started({ command: 'sh', tty: true, cols: 50, rows: 10, yield_ms: 300 });
    const before = await call('write_session', { session_id: id, input: 'stty size\n', until: '10 50' });
    expect(before.endedBy).toBe('until');
    const after = await call('write_session', { session_id: id, input: 'stty size\n', cols: 80, rows: 24, until: '24 80' });
    expect(after.endedBy).toBe('until');
    expect(after.text).toContain('terminal resized to 80×24');
    const screen = await call('read_session', { session_id: id, screen: true });
    expect(screen.text).toContain('[screen 80×24,');
    await call('kill_session', { session_id: id });
  });

  it('refuses a size out of bounds, a size without a terminal, and half a resize', async () => {
    expect((await call('start_command', { command: 'sh', tty: true, cols: 5000 })).error).toBe('invalid_arguments');
    expect((await call('start_command', { command: 'cat', cols: 80, rows: 24 })).error).toBe('invalid_arguments');
    const { id } = await started({ command: 'cat', yield_ms: 0 });
    expect((await call('write_session', { session_id: id, input: '', cols: 80 })).error).toBe('invalid_arguments');
    const pipe = await call('write_session', { session_id: id, input: '', cols: 80, rows: 24 });
    expect(pipe.error).toBe('invalid_arguments');
    expect(pipe.text).toContain('has no terminal');
    await call('kill_session', { session_id: id });
  });
});

describe(
  `a Python REPL driven with the defaults (sandbox: ${testSandboxMode()})`,
  requireSystemTools({ suite: 'a Python REPL in a session', tools: [{ name: 'python3', executable: '/usr/bin/python3' }], aptPackages: ['python3'] }),
  () => {
    it('gets every answer whole, each call ending on quiet', async () => {
      const { id } = await started({ command: '/usr/bin/python3 -q -i', tty: true, until: '>>> ' });
      for (let index = 1; index <= 5; index++) {
        const read = await call('write_session', { session_id: id, input: `${index} * 1111\n` });
        expect(read.endedBy).toBe('quiet');
        expect(read.text).toContain(String(index * 1111));
        expect(read.text).toContain('>>> ');
      }
      await call('kill_session', { session_id: id });
    });
  },
);
