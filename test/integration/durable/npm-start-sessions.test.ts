// npm start's conversations (--session NAME, --sessions): real controller processes, each with its
// own sidecar child, against a scripted Responses server that records what the model was sent.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { functionCallItem, messageItem } from '../../../controller/model/responses-wire.js';
import { startScriptedResponsesServer, type ScriptedResponsesServer } from '../../fakes/scripted-responses-server.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'npm-start-sessions-'));
const dataDir = join(dir, 'data');
let model: ScriptedResponsesServer | undefined;
afterAll(async () => {
  await model?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** `controller/main.ts` under node with tsx's loader (so SIGINT reaches it as a terminal's would). */
function startController(args: string[]): { child: ChildProcess; done: Promise<{ code: number | null; stdout: string; stderr: string }> } {
  const env = { ...process.env };
  delete env.OPENAI_API_KEY;
  delete env.OPENAI_BASE_URL;
  const child = spawn(process.execPath, ['--import', 'tsx', `${root}controller/main.ts`, '--data-dir', dataDir, '--no-stream', '--approve', 'never', ...args], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
  const done = once(child, 'exit').then(([code]) => {
    clearTimeout(timer);
    return { code: code as number | null, stdout, stderr };
  });
  return { child, done };
}

const userTexts = (body: Record<string, unknown>) =>
  (body.input as Array<Record<string, unknown>>).filter((item) => item.type === 'message' && item.role === 'user').map((item) => (item.content as Array<{ text: string }>)[0]!.text);

describe('npm start -- --session NAME', () => {
  it('continues a conversation over three processes, the model sent the whole history each time; --sessions lists it; Ctrl-C resumes', async () => {
    model = await startScriptedResponsesServer({
      steps: [
        { output: [functionCallItem({ callId: 'c1', name: 'list_files', arguments: '{"path":"."}' })] },
        { output: [messageItem('Answer one.')] },
        { output: [messageItem('Answer two.')] },
        { output: [messageItem('Answer three.')] },
        { hang: true },
        { output: [messageItem('Answer four, after the interruption.')] },
      ],
    });
    const base = ['--base-url', model.baseURL];
    const first = await startController([...base, '--session', 'demo', '--prompt', 'first question']).done;
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout.trim()).toBe('Answer one.');
    expect(first.stderr).toContain('session demo: new');
    const second = await startController([...base, '--session', 'demo', '--prompt', 'second question']).done;
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).toContain('session demo: continuing after 1 turn');
    const third = await startController([...base, '--session', 'demo', '--prompt', 'third question']).done;
    expect(third.code, third.stderr).toBe(0);
    expect(third.stdout.trim()).toBe('Answer three.');

    // Request 3 (the second process) and 4 (the third) carry everything said before them.
    expect(userTexts(model.requests[2]!)).toEqual(['first question', 'second question']);
    expect(userTexts(model.requests[3]!)).toEqual(['first question', 'second question', 'third question']);
    const input = model.requests[3]!.input as Array<Record<string, unknown>>;
    expect(input.filter((item) => item.type === 'function_call_output').map((item) => item.call_id)).toEqual(['c1']);
    expect(input.filter((item) => item.type === 'message' && item.role === 'assistant')).toHaveLength(2);

    // Ctrl-C while the model thinks: the turn is cut short, and `--session demo` alone resumes it.
    const { child, done } = startController([...base, '--session', 'demo', '--prompt', 'fourth question']);
    await model.waitForRequests(5, AbortSignal.timeout(60_000));
    child.kill('SIGINT');
    expect((await done).code).not.toBe(0);
    const listed = await startController(['--sessions']).done;
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/demo\s+cli-agent\s+3\s+interrupted/);
    expect(listed.stdout).toContain('first question');
    const resumed = await startController([...base, '--session', 'demo']).done;
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain('its last turn was cut short; resuming it');
    expect(resumed.stdout.trim()).toBe('Answer four, after the interruption.');
    expect(userTexts(model.requests[5]!)).toEqual(['first question', 'second question', 'third question', 'fourth question']);
    const nothing = await startController([...base, '--session', 'demo']).done;
    expect(nothing.code).toBe(1);
    expect(nothing.stderr).toContain('session "demo" has nothing to resume (its 4 turns ended): continue it with --prompt');
    expect(model.requests).toHaveLength(6);
  }, 300_000);

  it('refuses a session of another agent, a malformed name and a damaged journal, each with what to do', async () => {
    // A session of the embedded model's (its turn reads files with parallel calls).
    const made = await startController(['--session', 'mine', '--prompt', 'Look around.']).done;
    expect(made.code, made.stderr).toBe(0);
    const other = await startController(['--session', 'mine', '--agent-id', 'someone-else', '--prompt', 'hi']).done;
    expect(other.code).toBe(1);
    expect(other.stderr).toContain('the journal "session:mine" is a session of agent "cli-agent", not a session of agent "someone-else": use another name');
    const malformed = await startController(['--session', '../etc', '--prompt', 'hi']).done;
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toContain('--session "../etc" is not a session name');

    // Damage: an item the journal references is gone.
    const Database = createRequire(import.meta.url)('better-sqlite3') as typeof import('better-sqlite3');
    const db = new Database(join(dataDir, 'control-plane.sqlite'));
    db.prepare("DELETE FROM turn_items WHERE hash IN (SELECT value FROM turn_journal_entries, json_each(items_json) WHERE journal_id = 'session:mine' LIMIT 1)").run();
    db.close();
    const damaged = await startController(['--session', 'mine', '--prompt', 'hi']).done;
    expect(damaged.code).toBe(1);
    expect(damaged.stderr).toMatch(/the journal session:mine references item \S+, which the store does not hold: the journal is corrupted/);
  }, 120_000);
});
