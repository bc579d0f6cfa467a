import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { functionCallItem } from '../../../controller/model/responses-wire.js';
import type { ResponseItem } from '../../../controller/model/responses-model.js';
import { startScriptedResponsesServer, type ScriptedResponsesServer } from '../../fakes/scripted-responses-server.js';
import { descendantsOf, stillRunning, waitFor, type ProcessEntry } from '../../fixtures/process-tree.js';
import { startServe } from '../../fixtures/start-serve.js';
import { controlPlaneClient, generatedToken } from '../../fixtures/control-plane-client.js';
import { testSandboxMode } from '../../fixtures/test-sandbox.js';

// A sidecar a controller spawned dies with that controller, however it dies: SIGKILL runs no
// handler of the controller's, so what ends the sidecar is its --exit-on-stdin-eof lifeline.
const root = fileURLToPath(new URL('../../../', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'sidecar-dies-with-controller-'));
const servers: ScriptedResponsesServer[] = [];
const leftovers: ProcessEntry[] = [];

afterAll(async () => {
  // Whatever a failing run left behind goes now.
  for (const entry of stillRunning(leftovers)) {
    try {
      process.kill(entry.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  await Promise.all(servers.map((server) => server.close()));
  rmSync(dir, { recursive: true, force: true });
}, 30_000);

/** A command that records its process group in the workspace, then runs with a background child. */
const longCommand = `echo $$ > started.pgid; sh -c 'sleep 300 & sleep 300; wait'`;

/** SIGKILLs `controller` alone (not its group) and waits, bounded, for everything it had started to be gone. */
async function killAndWatch(controller: ChildProcess, spawned: ProcessEntry[]): Promise<ProcessEntry[]> {
  leftovers.push(...spawned);
  process.kill(controller.pid!, 'SIGKILL');
  const gone = await waitFor(() => (stillRunning(spawned).length === 0 ? [] : undefined), 60_000);
  return gone ?? stillRunning(spawned);
}

describe('a spawned sidecar dies with its controller', () => {
  it('npm start (the built entry, as npm runs it): SIGKILL the controller mid-command, and its sidecar and the command go too', async () => {
    const workspace = mkdtempSync(join(dir, 'npm-start-'));
    const server = await startScriptedResponsesServer({
      steps: [
        { output: [functionCallItem({ callId: 'c1', name: 'run_command', arguments: JSON.stringify({ command: longCommand, timeout_ms: 600_000 }) })] as ResponseItem[] },
        { hang: true },
      ],
    });
    servers.push(server);
    const env = { ...process.env };
    delete env.OPENAI_API_KEY;
    delete env.OPENAI_BASE_URL;
    // npm start's own command without npm in front, so the pid is the controller's.
    const controller = spawn(
      process.execPath,
      ['.ci/build.mjs', '--if-stale', '--then', 'dist/controller/main.js', '--base-url', server.baseURL, '--no-stream', '--approve', 'never', '--workspace', workspace, '--sandbox', testSandboxMode()],
      { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    controller.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    controller.stdout!.resume();
    try {
      const running = await waitFor(() => (existsSync(join(workspace, 'started.pgid')) ? true : undefined), 90_000);
      expect(running, `the command never started; controller stderr:\n${stderr}`).toBe(true);
      const group = await waitFor(() => {
        const spawned = descendantsOf(controller.pid!);
        // Exactly: under the sandbox, bwrap's own command line holds the whole command too.
        return spawned.filter((entry) => entry.command === 'sleep 300').length >= 2 ? spawned : undefined;
      }, 15_000);
      const spawned = group ?? descendantsOf(controller.pid!);
      expect(spawned.some((entry) => entry.command.includes('dist/sidecar/main.js'))).toBe(true);
      expect(spawned.filter((entry) => entry.command === 'sleep 300')).toHaveLength(2);
      expect(await killAndWatch(controller, spawned)).toEqual([]);
    } finally {
      if (controller.exitCode === null && controller.signalCode === null) controller.kill('SIGKILL');
    }
  }, 180_000);

  it('controller serve (from the sources, the sidecar through tsx): SIGKILL serve, and the sidecar it started and its command go too', async () => {
    const workspace = mkdtempSync(join(dir, 'serve-'));
    const agents = join(dir, 'agents.json');
    writeFileSync(agents, JSON.stringify({ 'agent-w': { workspace, stateDir: join(dir, 'serve-state'), sandbox: testSandboxMode() } }));
    // The job's turn keeps a command running on that sidecar (the sidecar takes only serve's token).
    const model = await startScriptedResponsesServer({
      steps: [
        { output: [functionCallItem({ callId: 'c1', name: 'run_command', arguments: JSON.stringify({ command: longCommand, timeout_ms: 600_000 }) })] as ResponseItem[] },
        { hang: true },
      ],
    });
    servers.push(model);
    const dataDir = join(dir, 'serve-data');
    const serve = await startServe({
      args: ['--listen', '127.0.0.1:0', '--data-dir', dataDir, '--agents', agents, '--base-url', model.baseURL, '--no-stream', '--approve', 'never'],
      env: { OPENAI_API_KEY: '', OPENAI_BASE_URL: '' },
    });
    let client: ReturnType<typeof controlPlaneClient> | undefined;
    try {
      client = controlPlaneClient(serve.address, generatedToken(dataDir, serve.address));
      await client.startJob({ agentId: 'agent-w', prompt: 'keep a command running' });
      const spawned = await waitFor(() => {
        const found = descendantsOf(serve.child.pid!);
        return found.filter((entry) => entry.command === 'sleep 300').length >= 2 ? found : undefined;
      }, 60_000);
      expect(spawned, 'the command never started').toBeDefined();
      expect(spawned!.some((entry) => entry.command.includes('sidecar/main.ts'))).toBe(true);
      expect(await killAndWatch(serve.child, spawned!)).toEqual([]);
    } finally {
      client?.close();
      await serve.stop('SIGKILL');
    }
  }, 180_000);
});
