// Command sessions driven in-process through their tools: real shells, a real PTY (@lydell/node-pty),
// a real headless terminal. Sandbox: test-sandbox.ts's choice, the default workspace-write
// (bubblewrap) where it works, off where it does not; the sandbox's confinement of sessions is
// tested in test/integration/sandbox/session-sandbox.test.ts.
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { isToolRuntimeError, type WorkerAgentTool } from '../../../../../src/index.js';
import { policyFor } from '../../../../../sidecar/categories/process-policy.js';
import { SessionTable } from '../../../../../sidecar/categories/computer/sessions/session-table.js';
import { createSessionTools } from '../../../../../sidecar/categories/computer/sessions/session-tools.js';
import type { SessionReadDetails } from '../../../../../sidecar/categories/computer/sessions/session-read.js';
import { requireSystemTools } from '../../../../fixtures/system-tools.js';
import { testSandboxMode } from '../../../../fixtures/test-sandbox.js';
import { callTool, makeTempDir, testConfig, testTurn, toolNamed, type CallRecord } from '../tool-harness.js';

let workspace: Awaited<ReturnType<typeof makeTempDir>>;
let table: SessionTable;

beforeAll(async () => {
  workspace = await makeTempDir('sessions-ws');
});
afterAll(async () => {
  await workspace.remove();
});
afterEach(async () => {
  await table?.close();
});

function toolsFor(agentId: string): Record<string, WorkerAgentTool> {
  const config = testConfig({ workspace: workspace.dir, stateDir: path.join(workspace.dir, '.state') });
  const tools = createSessionTools({ config, turn: testTurn({ agentId }), table, policy: policyFor(config) });
  return Object.fromEntries(tools.map((tool) => [tool.name, tool]));
}

function freshTable(limits: Partial<SessionTable['limits']> = {}): void {
  table = new SessionTable({ limits });
}

const details = (call: CallRecord) => call.result.details as SessionReadDetails;

/**
 * Reads the session until `pattern` appears in `seen` plus what was read (bounded), returning
 * all of it.
 */
async function readUntil(tools: Record<string, WorkerAgentTool>, sessionId: string, pattern: RegExp, seen = '', ms = 15_000): Promise<{ text: string; last?: CallRecord }> {
  const end = Date.now() + ms;
  let text = seen;
  if (pattern.test(text)) return { text };
  for (;;) {
    const last = await callTool(tools.read_session!, { session_id: sessionId, yield_ms: 200 });
    text += last.text;
    if (pattern.test(text) || !details(last).running || Date.now() > end) return { text, last };
  }
}

async function failure(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    if (isToolRuntimeError(error)) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error('expected the call to fail');
}

describe(`command sessions (sandbox: ${testSandboxMode()})`, () => {
  it('returns as run_command does when the command ends within yield_ms, and forgets it', async () => {
    freshTable();
    const tools = toolsFor('agent-1');
    const call = await callTool(tools.start_command!, { command: 'echo hello; exit 4', yield_ms: 10_000 });
    expect(call.text).toMatch(/^session s\d+ ended: exit code 4/);
    expect(call.text).toContain('hello');
    expect(details(call).running).toBe(false);
    expect(table.list('agent-1')).toEqual([]);
  });

  it('returns a session id and "still running" after yield_ms, then pipes stdin, reads new output only, and ends on Ctrl-D', async () => {
    freshTable();
    const tools = toolsFor('agent-1');
    const start = await callTool(tools.start_command!, { command: 'echo ready; cat', yield_ms: 300 });
    // Sandboxed, the session's process is bubblewrap behind its launchers: the wait's wrapper rules
    // apply (they did not while the limits' launcher came first).
    expect(table.get('agent-1', details(start).sessionId).wrapped).toBe(testSandboxMode() !== 'off');
    expect(start.text).toContain('still running');
    expect(start.text).toContain('ready');
    const id = details(start).sessionId;
    const first = await callTool(tools.write_session!, { session_id: id, input: 'one\n', yield_ms: 300 });
    const { text } = await readUntil(tools, id, /one/, first.text);
    expect(text).toContain('one');
    expect(text).not.toContain('ready');
    // Two writes issued together apply in order; each read holds what followed its own write.
    // Each write's wait is long enough for cat's echo even on a loaded machine.
    const [a, b] = await Promise.all([
      callTool(tools.write_session!, { session_id: id, input: 'alpha\n', yield_ms: 2_000 }),
      callTool(tools.write_session!, { session_id: id, input: 'beta\n', yield_ms: 2_000 }),
    ]);
    expect(a.text).toContain('alpha');
    expect(a.text).not.toContain('beta');
    expect(b.text).toContain('beta');
    expect(b.text).not.toContain('alpha');
    const end = await callTool(tools.write_session!, { session_id: id, input: '\u0004', yield_ms: 5_000 });
    expect(end.text).toMatch(/ended: exit code 0/);
    expect(details(end)).toMatchObject({ running: false, exitCode: 0 });
  });

  it('interrupts sleep 100 under a PTY with Ctrl-C', async () => {
    freshTable();
    const tools = toolsFor('agent-1');
    const start = await callTool(tools.start_command!, { command: 'sleep 100', tty: true, yield_ms: 200 });
    expect(details(start).running).toBe(true);
    const call = await callTool(tools.write_session!, { session_id: details(start).sessionId, input: '\u0003', yield_ms: 10_000 });
    expect(details(call).running).toBe(false);
    // The shell may exec sleep (killed by SIGINT) or wait for it (exit 130).
    expect(details(call).signal === 'SIGINT' || details(call).exitCode === 130).toBe(true);
  });

  it('interrupts a pipe session with \\u0003 too (SIGINT to its group)', async () => {
    freshTable();
    const tools = toolsFor('agent-1');
    const start = await callTool(tools.start_command!, { command: 'sleep 100', yield_ms: 100 });
    const call = await callTool(tools.write_session!, { session_id: details(start).sessionId, input: '\u0003', yield_ms: 10_000 });
    expect(details(call).running).toBe(false);
    expect(details(call).signal === 'SIGINT' || details(call).exitCode === 130).toBe(true);
  });

  it('answers a read -p prompt in a terminal', async () => {
    freshTable();
    const tools = toolsFor('agent-1');
    const start = await callTool(tools.start_command!, { command: 'read -p "Name? " name; echo "hello, $name"', tty: true, yield_ms: 200 });
    const id = details(start).sessionId;
    const prompt = await readUntil(tools, id, /Name\? /, start.text);
    expect(prompt.text).toContain('Name? ');
    const answer = await callTool(tools.write_session!, { session_id: id, input: 'Ada\n', yield_ms: 10_000 });
    expect(answer.text).toContain('hello, Ada');
    // The answer returns once the output went quiet (30 ms); on a loaded machine the shell may not
    // have exited by then (it failed so under the Node 24 run), and the next read reports the exit.
    let last = answer;
    for (let reads = 0; details(last).running && reads < 50; reads++) last = await callTool(tools.read_session!, { session_id: id, yield_ms: 200 });
    expect(details(last)).toMatchObject({ running: false, exitCode: 0 });
  });

  it('renders a full-screen program as the text on its screen', async () => {
    freshTable();
    const tools = toolsFor('agent-1');
    const start = await callTool(tools.start_command!, { command: "printf '\\033[2J\\033[HTOP LEFT\\033[10;5Hmiddle\\033[31m red\\033[0m'; sleep 100", tty: true, yield_ms: 300 });
    const id = details(start).sessionId;
    const screen = await callTool(tools.read_session!, { session_id: id, screen: true, yield_ms: 200 });
    const lines = screen.text.split('\n');
    const at = lines.indexOf('screen:');
    expect(lines[at + 1]).toBe('TOP LEFT');
    expect(lines[at + 10]).toBe('    middle red');
    expect(screen.text).not.toContain('\u001b');
    const pipe = await callTool(tools.start_command!, { command: 'sleep 100', yield_ms: 0 });
    expect(await failure(callTool(tools.read_session!, { session_id: details(pipe).sessionId, screen: true }))).toMatchObject({ code: 'invalid_arguments' });
  });

  it('survives its turn: the next turn of the same agent sees it, another agent never does', async () => {
    freshTable();
    const first = toolsFor('agent-1');
    const start = await callTool(first.start_command!, { command: 'sleep 100', yield_ms: 0 });
    const id = details(start).sessionId;
    const next = toolsFor('agent-1');
    expect((await callTool(next.list_sessions!, {})).text).toContain(`${id}: running`);
    const other = toolsFor('agent-2');
    expect((await callTool(other.list_sessions!, {})).text).toBe('no sessions; start one with start_command');
    for (const call of [
      callTool(other.read_session!, { session_id: id }),
      callTool(other.write_session!, { session_id: id, input: 'x' }),
      callTool(other.kill_session!, { session_id: id }),
    ]) {
      expect(await failure(call)).toMatchObject({ code: 'session_not_found' });
    }
    expect((await callTool(next.list_sessions!, {})).text).toContain(`${id}: running`);
    const killed = await callTool(next.kill_session!, { session_id: id });
    expect(details(killed).running).toBe(false);
    expect(await failure(callTool(next.read_session!, { session_id: id }))).toMatchObject({ code: 'session_not_found' });
  });

  it('refuses bad input with its own code: unknown id, ended session, oversized input, session limit', async () => {
    freshTable({ maxPerAgent: 2, maxInputBytes: 1024 });
    const tools = toolsFor('agent-1');
    const unknown = await failure(callTool(tools.write_session!, { session_id: 's999', input: 'x' }));
    expect(unknown.code).toBe('session_not_found');
    expect(unknown.message).toContain('This agent has no sessions');

    const ending = await callTool(tools.start_command!, { command: 'echo early; sleep 0.3; echo "last words"; exit 7', yield_ms: 0 });
    const id = details(ending).sessionId;
    await table.get('agent-1', id).ended;
    const ended = await failure(callTool(tools.write_session!, { session_id: id, input: 'too late\n' }));
    expect(ended.code).toBe('session_ended');
    expect(ended.message).toContain('exit code 7');
    expect(ended.message).toContain('last words');
    expect(await failure(callTool(tools.read_session!, { session_id: id }))).toMatchObject({ code: 'session_not_found' });

    const a = details(await callTool(tools.start_command!, { command: 'sleep 100', yield_ms: 0 })).sessionId;
    const big = await failure(callTool(tools.write_session!, { session_id: a, input: 'é'.repeat(600) }));
    expect(big.code).toBe('input_too_large');
    expect(big.message).toContain('1200 bytes');
    const b = details(await callTool(tools.start_command!, { command: 'sleep 100', yield_ms: 0 })).sessionId;
    const limit = await failure(callTool(tools.start_command!, { command: 'sleep 100', yield_ms: 0 }));
    expect(limit.code).toBe('session_limit_reached');
    expect(limit.message).toContain(`${a}: running`);
    expect(limit.message).toContain(`${b}: running`);
    await callTool(tools.kill_session!, { session_id: a });
    expect(details(await callTool(tools.start_command!, { command: 'sleep 100', yield_ms: 0 })).running).toBe(true);
  });

  it('keeps memory bounded when a command prints 100 MB: head and tail kept, UTF-8 whole', async () => {
    freshTable({ maxBufferedChars: 20_000 });
    const tools = toolsFor('agent-1');
    // 2-byte and 4-byte characters around the cuts: a read never splits one.
    const start = await callTool(tools.start_command!, {
      command: "printf 'FIRST é😀'; head -c 100000000 /dev/zero | tr '\\0' a; printf '😀é LAST'",
      yield_ms: 0,
    });
    const id = details(start).sessionId;
    let maxPending = 0;
    const session = table.get('agent-1', id);
    while (session.running) {
      maxPending = Math.max(maxPending, ...table.list('agent-1').map((info) => info.unreadBytes));
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const read = await callTool(tools.read_session!, { session_id: id });
    expect(maxPending).toBeLessThanOrEqual(20_000 + 200);
    expect(read.text).toContain('FIRST é😀');
    expect(read.text).toContain('😀é LAST');
    expect(details(read).cutChars).toBeGreaterThan(99_000_000);
    expect(read.text).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/);
  });

  it('kills an idle session after the idle limit', async () => {
    freshTable({ idleMs: 500 });
    const tools = toolsFor('agent-1');
    const id = details(await callTool(tools.start_command!, { command: 'sleep 100', yield_ms: 0 })).sessionId;
    const session = table.get('agent-1', id);
    await session.ended;
    expect(session.exit?.signal).toBe('SIGTERM');
  });
});

describe(`command sessions with python3 (sandbox: ${testSandboxMode()})`, requireSystemTools({ suite: 'command sessions with python3', tools: [{ name: 'python3', executable: '/usr/bin/python3' }], aptPackages: ['python3'] }), () => {
  it('drives python3 -i: 1+1 gives 2, and Ctrl-C interrupts a statement without ending the REPL', async () => {
    freshTable();
    const tools = toolsFor('agent-1');
    const start = await callTool(tools.start_command!, { command: 'python3 -i -q', tty: true, yield_ms: 300 });
    const id = details(start).sessionId;
    await readUntil(tools, id, />>> /, start.text);
    const write = await callTool(tools.write_session!, { session_id: id, input: '1+1\n', yield_ms: 300 });
    const { text } = await readUntil(tools, id, /\r?\n2\r?\n>>> /, write.text);
    expect(text).toMatch(/1\+1\r?\n2\r?\n>>> /);
    const sleeping = await callTool(tools.write_session!, { session_id: id, input: 'import time; time.sleep(60)\n', yield_ms: 300 });
    const interrupted = await callTool(tools.write_session!, { session_id: id, input: '\u0003', yield_ms: 300 });
    expect(await readUntil(tools, id, /KeyboardInterrupt[\s\S]*>>> /, sleeping.text + interrupted.text)).toMatchObject({ text: expect.stringContaining('KeyboardInterrupt') });
    const after = await callTool(tools.write_session!, { session_id: id, input: '6*7\n', yield_ms: 300 });
    expect((await readUntil(tools, id, /\r?\n42\r?\n/, after.text)).text).toContain('42');
    const end = await callTool(tools.write_session!, { session_id: id, input: 'exit()\n', yield_ms: 10_000 });
    expect(details(end).running).toBe(false);
  });
});

describe('command session tools', () => {
  it('are offered with their execution modes: start sequential like run_command, the rest parallel, reads read-only', () => {
    freshTable();
    const tools = toolsFor('agent-1');
    expect(Object.values(tools).map((tool) => [tool.name, tool.executionMode, tool.isReadOnly, tool.isDestructive])).toEqual([
      ['start_command', 'sequential', false, true],
      ['write_session', 'parallel', false, true],
      ['read_session', 'parallel', true, false],
      ['list_sessions', 'parallel', true, false],
      ['kill_session', 'parallel', false, false],
    ]);
    expect(toolNamed(Object.values(tools), 'start_command').describeActivity({ command: 'npm run dev', tty: true })).toBe('Starting `npm run dev` in a terminal');
  });
});
