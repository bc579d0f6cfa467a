// The Responses API's own apply_patch and shell tools, offered by the loop and executed by the real
// sidecar (under its sandbox where bubblewrap works), against scripted Responses servers over real
// HTTP, streamed and not.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runTurn, type RunTurnOptions, type TurnOutcome } from '../../../controller/loop/run-turn.js';
import type { TurnEvent } from '../../../controller/loop/turn-events.js';
import { createOpenAIResponsesModel } from '../../../controller/model/openai-responses-model.js';
import type { ResponseItem } from '../../../controller/model/responses-model.js';
import { messageItem } from '../../../controller/model/responses-wire.js';
import { createSidecarClient, type SidecarClient } from '../../../controller/sidecar-client/create-sidecar-client.js';
import type { OpenTurnOptions } from '../../../controller/sidecar-client/sidecar-turn.js';
import { startScriptedResponsesServer, type ScriptStep, type ScriptedResponsesServer } from '../../fakes/scripted-responses-server.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';

const workspace = mkdtempSync(join(tmpdir(), 'native-tools-'));
let sidecar: StartedSidecar;
let client: SidecarClient;
const servers: ScriptedResponsesServer[] = [];
let turns = 0;

beforeAll(async () => {
  sidecar = await startSidecar({ args: ['--listen', '127.0.0.1:0', '--workspace', workspace, '--state-dir', mkdtempSync(join(tmpdir(), 'native-tools-state-'))] });
  client = createSidecarClient({ address: sidecar.address });
});
afterAll(async () => {
  client?.close();
  await Promise.all(servers.map((server) => server.close()));
  await sidecar?.stop();
  rmSync(workspace, { recursive: true, force: true });
});

const shellCall = (callId: string, commands: string[], extra: Record<string, unknown> = {}): ResponseItem => ({
  type: 'shell_call',
  id: `sh_${callId}`,
  call_id: callId,
  action: { commands, timeout_ms: null, max_output_length: null, ...extra },
  status: 'completed',
});
const patchCall = (callId: string, operation: Record<string, unknown>): ResponseItem => ({
  type: 'apply_patch_call',
  id: `ap_${callId}`,
  call_id: callId,
  operation,
  status: 'completed',
});

async function scripted(
  steps: ScriptStep[],
  options: Partial<RunTurnOptions> & { stream?: boolean; turnOptions?: OpenTurnOptions; approval?: boolean } = {},
): Promise<{ outcome: TurnOutcome; server: ScriptedResponsesServer; events: TurnEvent[] }> {
  const server = await startScriptedResponsesServer({ steps });
  servers.push(server);
  const model = createOpenAIResponsesModel({ model: 'gpt-5.4', apiKey: 'test-key', baseURL: server.baseURL, stream: options.stream ?? true, maxRetries: 0 });
  const turn = await client.openTurn(
    { agentId: 'native-agent', turnId: `native-${++turns}`, ...(options.approval ? { approvalPolicy: { mode: 'destructive' as const } } : {}) },
    { signal: AbortSignal.timeout(20_000), ...options.turnOptions },
  );
  const events: TurnEvent[] = [];
  try {
    const outcome = await runTurn({ model, turn, prompt: 'work', nativeTools: true, onEvent: (event) => events.push(event), ...options });
    return { outcome, server, events };
  } finally {
    if (options.signal?.aborted) turn.abort();
    else await turn.close({ timeoutMs: 5_000 });
  }
}

const inputOf = (body: Record<string, unknown> | undefined) => (body?.input ?? []) as ResponseItem[];

describe.each([true, false])('native shell and apply_patch calls (stream: %s)', (stream) => {
  it('offers shell in place of run_command and answers a shell_call with stdout, stderr and the outcome of each command, in order', async () => {
    const { outcome, server } = await scripted(
      [
        { output: [shellCall('sh1', ['echo out; echo err >&2; exit 3', 'printf hi'], { max_output_length: 200 })] },
        { output: [messageItem('done')] },
      ],
      { stream },
    );
    expect(outcome.status).toBe('completed');
    const tools = server.requests[0]!.tools as Array<Record<string, unknown>>;
    expect(tools).toContainEqual({ type: 'shell', environment: { type: 'local' } });
    expect(tools.some((tool) => tool.name === 'run_command')).toBe(false);
    expect(tools.some((tool) => tool.name === 'read_file')).toBe(true);
    const input = inputOf(server.requests[1]);
    expect(input.map((item) => item.type)).toEqual(['message', 'shell_call', 'shell_call_output']);
    expect(input[2]).toMatchObject({
      type: 'shell_call_output',
      call_id: 'sh1',
      max_output_length: 200,
      output: [
        { stdout: 'out\n', stderr: 'err\n', outcome: { type: 'exit', exit_code: 3 } },
        { stdout: 'hi', stderr: '', outcome: { type: 'exit', exit_code: 0 } },
      ],
    });
  });

  it('keeps function calls and native calls paired and in the order the model made them', async () => {
    writeFileSync(join(workspace, `order-${stream}.txt`), 'x\n');
    const { server } = await scripted(
      [
        {
          output: [
            { type: 'function_call', id: 'fc_1', call_id: 'f1', name: 'read_file', arguments: JSON.stringify({ path: `order-${stream}.txt` }), status: 'completed' },
            shellCall('sh2', ['echo two']),
            patchCall('ap1', { type: 'delete_file', path: '' }),
          ],
        },
        { output: [messageItem('done')] },
      ],
      { stream },
    );
    const input = inputOf(server.requests[1]);
    expect(input.slice(4).map((item) => [item.type, item.call_id])).toEqual([
      ['function_call_output', 'f1'],
      ['shell_call_output', 'sh2'],
      ['apply_patch_call_output', 'ap1'],
    ]);
    // A patch operation without a path is refused with a reason, never run.
    expect(input[6]).toMatchObject({ status: 'failed', output: expect.stringMatching(/path/) });
  });

  it('applies apply_patch_call operations in the workspace and answers each with its status', async () => {
    const name = `native-${stream}.txt`;
    const { server } = await scripted(
      [
        { output: [patchCall('p1', { type: 'create_file', path: name, diff: '+alpha\n+beta\n' })] },
        { output: [patchCall('p2', { type: 'update_file', path: name, diff: '@@\n alpha\n-beta\n+gamma\n' }), patchCall('p3', { type: 'update_file', path: '.git/config', diff: '@@\n+[core]\n' })] },
        { output: [messageItem('done')] },
      ],
      { stream },
    );
    expect(readFileSync(join(workspace, name), 'utf8')).toBe('alpha\ngamma\n');
    expect(existsSync(join(workspace, '.git', 'config'))).toBe(false);
    expect(inputOf(server.requests[1]).at(-1)).toMatchObject({ type: 'apply_patch_call_output', call_id: 'p1', status: 'completed' });
    const outputs = inputOf(server.requests[2]).filter((item) => item.type === 'apply_patch_call_output');
    expect(outputs.map((item) => [item.call_id, item.status])).toEqual([['p1', 'completed'], ['p2', 'completed'], ['p3', 'failed']]);
    const tools = server.requests[0]!.tools as Array<Record<string, unknown>>;
    expect(tools).toContainEqual({ type: 'apply_patch' });
    expect(tools.some((tool) => tool.name === 'apply_patch')).toBe(false);
  });

  it('reports a command past its timeout_ms as a timeout', async () => {
    const { server } = await scripted([{ output: [shellCall('sh3', ['sleep 5'], { timeout_ms: 300 })] }, { output: [messageItem('done')] }], { stream });
    expect(inputOf(server.requests[1]).at(-1)).toMatchObject({ type: 'shell_call_output', output: [{ outcome: { type: 'timeout' } }] });
  });
});

describe('native calls go through the sidecar\'s guards', () => {
  it('asks approval for a shell command (destructive) and a denied command never runs', async () => {
    const asked: string[] = [];
    const { server } = await scripted([{ output: [shellCall('sh4', ['touch denied-marker'])] }, { output: [messageItem('done')] }], {
      approval: true,
      turnOptions: {
        approve: async (request) => {
          asked.push(request.approval.label);
          return { approved: false, reason: 'not today' };
        },
      },
    });
    expect(asked).toEqual(['Running `touch denied-marker`']);
    expect(existsSync(join(workspace, 'denied-marker'))).toBe(false);
    const entry = (inputOf(server.requests[1]).at(-1)!.output as Array<Record<string, unknown>>)[0]!;
    expect(entry).toMatchObject({ stdout: '', outcome: { type: 'exit', exit_code: 126 } });
    expect(String(entry.stderr)).toMatch(/not today/);
  });

  it('an interrupted turn kills the shell call\'s commands', async () => {
    const marker = `sleep 31.${process.pid}`;
    const controller = new AbortController();
    const running = scripted([{ output: [shellCall('sh5', [marker])] }, { output: [messageItem('never')] }], { signal: controller.signal });
    const started = Date.now();
    while (!processesRunning(marker) && Date.now() - started < 15_000) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(processesRunning(marker)).toBe(true);
    controller.abort();
    const { outcome } = await running;
    expect(outcome.status).toBe('aborted');
    const stopped = Date.now();
    while (processesRunning(marker) && Date.now() - stopped < 10_000) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(processesRunning(marker)).toBe(false);
  });
});

/** True while a process whose command line is exactly `command` (split on spaces) is alive. */
function processesRunning(command: string): boolean {
  const wanted = command.split(' ').join('\0');
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0$/, '') === wanted) return true;
    } catch {
      // gone meanwhile
    }
  }
  return false;
}
