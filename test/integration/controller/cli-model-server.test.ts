// The controller CLI (a real child process, with its own real sidecar child) against a scripted
// Responses server that misbehaves: exit codes, Ctrl-C during a long retry-after, the flags.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { messageItem } from '../../../controller/model/responses-wire.js';
import { startScriptedResponsesServer, type ScriptStep, type ScriptedResponsesServer } from '../../fakes/scripted-responses-server.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const servers: ScriptedResponsesServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((server) => server.close()));
});

/**
 * Starts `controller/main.ts` with `args` under node with tsx's loader, so a SIGINT reaches it as a
 * terminal's would (the tsx CLI relays signals and SIGKILLs a child that is slow to acknowledge one).
 */
function startController(args: string[], entry = 'controller/main.ts'): { child: ChildProcess; done: Promise<{ code: number | null; stdout: string; stderr: string }> } {
  const env = { ...process.env };
  delete env.OPENAI_API_KEY;
  delete env.OPENAI_BASE_URL;
  const child = spawn(process.execPath, ['--import', 'tsx', `${root}${entry}`, ...args], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const done = once(child, 'exit').then(([code]) => {
    clearTimeout(timer);
    return { code: code as number | null, stdout, stderr };
  });
  return { child, done };
}

async function server(steps: ScriptStep[]): Promise<ScriptedResponsesServer> {
  const started = await startScriptedResponsesServer({ steps });
  servers.push(started);
  return started;
}

describe('the controller CLI against a misbehaving model server', () => {
  it('exits 3 with the part that came when the answer is cut off, and 4 when the response failed', async () => {
    const cut = await server([{ output: [messageItem('The project is a small')], fields: { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } } }]);
    const incomplete = await startController(['--base-url', cut.baseURL, '--no-stream', '--quiet']).done;
    expect(incomplete.code, incomplete.stderr).toBe(3);
    expect(incomplete.stdout.trim()).toBe('The project is a small');
    expect(incomplete.stderr).toContain("error: turn incomplete: the model's answer was cut off (max_output_tokens)");

    const failing = await server([{ output: [], fields: { status: 'failed', error: { code: 'server_error', message: 'The model crashed.' } } }]);
    const failed = await startController(['--base-url', failing.baseURL, '--quiet']).done;
    expect(failed.code, failed.stderr).toBe(4);
    expect(failed.stderr).toContain('error: turn model_failed: the model response failed: server_error: The model crashed.');
  }, 90_000);

  it('reports a retry-after over the cap as the reason, and a Ctrl-C ends a long one it honours at once', async () => {
    const limited: ScriptStep = { status: 429, body: { error: { message: 'slow down' } }, headers: { 'retry-after': '600' } };
    const capped = await server([limited, { output: [messageItem('never')] }]);
    const refused = await startController(['--base-url', capped.baseURL, '--quiet', '--max-retry-after-ms', '5000']).done;
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('the server asked to retry after 600 s, longer than the 5 s this controller waits (--max-retry-after-ms)');
    expect(capped.requests).toHaveLength(1);

    const patient = await server([limited, { output: [messageItem('never')] }]);
    const { child, done } = startController(['--base-url', patient.baseURL, '--max-retry-after-ms', '3600000']);
    await patient.waitForRequests(1, AbortSignal.timeout(45_000));
    child.kill('SIGINT');
    // Without an abortable wait the child would sleep 600 s; the watchdog kills it at 60 s (code null).
    const interrupted = await done;
    expect(interrupted.code).toBe(1);
    expect(interrupted.stderr).toContain('interrupted: aborting the turn');
    expect(interrupted.stderr).toMatch(/error: turn aborted|error: aborted/);
    expect(patient.requests).toHaveLength(1);
  }, 120_000);

  it('workflow run takes the same model flags: a retry-after over --max-retry-after-ms fails the attempt at once', async () => {
    const limited: ScriptStep = { status: 429, body: { error: { message: 'slow down' } }, headers: { 'retry-after': '600' } };
    const capped = await server([limited, limited, { output: [messageItem('never')] }]);
    const dir = mkdtempSync(join(tmpdir(), 'workflow-retry-'));
    try {
      const file = join(dir, 'workflow.json');
      const resultSchema = { type: 'object', properties: { n: { type: 'number' } }, required: ['n'], additionalProperties: false };
      writeFileSync(file, JSON.stringify({ name: 'retry-cap', tasks: [{ id: 'a', prompt: 'Count.', result_schema: resultSchema, max_attempts: 1 }] }));
      const run = await startController(['workflow', 'run', file, '--base-url', capped.baseURL, '--data-dir', join(dir, 'data'), '--max-retry-after-ms', '5000'], 'controller/control-plane-main.ts').done;
      expect(run.code).not.toBe(0);
      expect(run.code).not.toBeNull();
      expect(run.stderr).toContain('longer than the 5 s this controller waits');
      expect(capped.requests).toHaveLength(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('refuses a bad value for the new flags with exit 2', async () => {
    const bad = await startController(['--stream-idle-timeout-ms', 'soon']).done;
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--stream-idle-timeout-ms must be a whole number of milliseconds (0 or more), not "soon"');
  }, 60_000);
});
