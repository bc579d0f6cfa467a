import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../../controller/cli/cli.js';
import { functionCallItem, messageItem } from '../../../controller/model/responses-wire.js';
import type { ResponseItem } from '../../../controller/model/responses-model.js';
import { startScriptedResponsesServer, type ScriptedResponsesServer } from '../../fakes/scripted-responses-server.js';

const dirs: string[] = [];
const servers: ScriptedResponsesServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((server) => server.close()));
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/**
 * Runs the CLI in process on a scripted model that writes notes.txt, then reads it back, then
 * answers with both outputs; the sidecar works on the CLI's throwaway copy of the sample workspace,
 * so the read is how the test sees the file system.
 */
async function writeTurn(options: { args?: string[]; isTerminal: boolean; stdin?: PassThrough; onStderr?: (text: string) => void }) {
  const dir = mkdtempSync(join(tmpdir(), 'cli-approvals-'));
  dirs.push(dir);
  const outputsOf = (body: Record<string, unknown>) =>
    (body.input as ResponseItem[]).filter((item) => item.type === 'function_call_output').map((item) => (item as unknown as { output: string }).output);
  const server = await startScriptedResponsesServer({
    steps: [
      { output: [functionCallItem({ callId: 'c1', name: 'write_file', arguments: JSON.stringify({ path: 'notes.txt', content: 'from the model' }) })] as ResponseItem[] },
      { output: [functionCallItem({ callId: 'c2', name: 'read_file', arguments: JSON.stringify({ path: 'notes.txt' }) })] as ResponseItem[] },
      (body) => ({ output: [messageItem(outputsOf(body).map((output, index) => `output ${index + 1}: ${output}`).join('\n'))] as ResponseItem[] }),
    ],
  });
  servers.push(server);
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  stderr.setEncoding('utf8').on('data', (chunk: string) => {
    err += chunk;
    options.onStderr?.(err);
  });
  const eventsFile = join(dir, 'events.jsonl');
  const code = await runCli({
    argv: ['--base-url', server.baseURL, '--events-file', eventsFile, '--no-stream', ...(options.args ?? [])],
    env: {},
    stdout,
    stderr,
    signal: AbortSignal.timeout(60_000),
    isTerminal: options.isTerminal,
    ...(options.stdin ? { stdin: options.stdin } : {}),
  });
  const events = readFileSync(eventsFile, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
  return { code, stdout: out, stderr: err, events };
}

describe('npm start approvals', () => {
  it('without a terminal, a destructive call is denied with a reason the model reads, and recorded', async () => {
    const run = await writeTurn({ isTerminal: false });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('output 1: Error (denied)');
    expect(run.stdout).toMatch(/output 2: Error \(tool_failed\).*notes\.txt/);
    expect(run.stdout).toContain('--approve never');
    expect(run.stderr).toContain('✗ denied (no-terminal)');
    const types = run.events.map((event) => event.type);
    expect(types).toContain('approval-requested');
    expect(run.events.find((event) => event.type === 'approval-decided')).toMatchObject({ callId: 'c1', approved: false, decidedBy: 'no-terminal' });
  }, 90_000);

  it('--approve never lets it run without asking', async () => {
    const run = await writeTurn({ isTerminal: false, args: ['--approve', 'never'] });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/output 2: .*from the model/s);
    expect(run.events.some((event) => String(event.type).startsWith('approval-'))).toBe(false);
  }, 90_000);

  it('on a terminal it shows the label and parameters and runs the call on y', async () => {
    const stdin = new PassThrough();
    let answered = false;
    const run = await writeTurn({
      isTerminal: true,
      stdin,
      onStderr: (text) => {
        if (!answered && text.includes('Allow? [y/N]')) {
          answered = true;
          stdin.write('y\n');
        }
      },
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain('? write_file (destructive) wants to run:');
    expect(run.stderr).toContain('"content": "from the model"');
    expect(run.stderr).toContain('✓ approved (terminal)');
    expect(run.stdout).toMatch(/output 2: .*from the model/s);
  }, 90_000);

  it('refuses an unknown --approve value as bad usage', async () => {
    const stderr = new PassThrough();
    let err = '';
    stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
    const code = await runCli({ argv: ['--approve', 'sometimes'], env: {}, stdout: new PassThrough(), stderr, signal: AbortSignal.timeout(10_000) });
    expect(code).toBe(2);
    expect(err).toContain('--approve must be "never", "destructive" or "all", not "sometimes"');
  });
});
