// Under the sidecar's sandbox, a command of the model cannot read the controller's token files or
// its data folder: `serve` passes `--hide DATA_DIR` (and every token file it was given) to each
// sidecar it spawns. The data folder is under /var/tmp, not /tmp, so the sandbox's fresh /tmp does
// not hide it by accident: only --hide does. An agent of the same user with `"sandbox": "off"`
// runs the same command as the contrast: unsandboxed, the same user reads the file (what
// docs/security.md says a token cannot prevent without the sandbox or another user).
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { controlTokenPath } from '../../../controller/control-plane/grpc/control-token.js';
import { JobState } from '../../../src/gen/toolruntime/v1/control_plane.js';
import { startScriptedAgentModel, type ScriptedAgentModel } from '../../fakes/scripted-agent-model.js';
import { controlPlaneClient, until } from '../../fixtures/control-plane-client.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';
import { requireSystemTools } from '../../fixtures/system-tools.js';

const needs = requireSystemTools({ suite: 'the sandboxed token test', tools: [{ name: 'bwrap', executable: '/usr/bin/bwrap' }], aptPackages: ['bubblewrap'] });

let dir: string;
let dataDir: string;
let consoleTokenFile: string;
let model: ScriptedAgentModel;
let serve: StartedSidecar;
let operator: ReturnType<typeof controlPlaneClient>;
let token: string;

describe('the controller\'s tokens under the sidecar\'s sandbox', needs, () => {
  beforeAll(async () => {
    dir = mkdtempSync('/var/tmp/sandboxed-token-');
    dataDir = join(dir, 'data');
    consoleTokenFile = join(dir, 'console.token');
    writeFileSync(consoleTokenFile, 'console-secret-4711\n', { mode: 0o600 });
    for (const name of ['ws-s', 'ws-open']) mkdirSync(join(dir, name));
    const agents = join(dir, 'agents.json');
    writeFileSync(
      agents,
      JSON.stringify({
        'agent-s': { workspace: join(dir, 'ws-s'), stateDir: join(dir, 'state-s') },
        'agent-open': { workspace: join(dir, 'ws-open'), stateDir: join(dir, 'state-open'), sandbox: 'off' },
      }),
    );
    model = await startScriptedAgentModel();
    serve = await startSidecar({
      entry: 'controller/control-plane-main.ts',
      args: ['serve', '--listen', '127.0.0.1:0', '--data-dir', dataDir, '--agents', agents, '--base-url', model.baseURL, '--approve', 'never', '--console', '127.0.0.1:0', '--console-token-file', consoleTokenFile],
      env: { OPENAI_API_KEY: '', OPENAI_BASE_URL: '' },
      timeoutMs: 90_000,
    });
    token = readFileSync(controlTokenPath({ dataDir, kind: 'control-plane', address: serve.address }), 'utf8').trim();
    operator = controlPlaneClient(serve.address, token);
  }, 120_000);

  afterAll(async () => {
    operator?.close();
    await serve?.stop('SIGTERM');
    await model?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  /** Runs `command` as a run_command of `agentId`'s job and returns the job's final text (the command's output in it). */
  async function runAs(agentId: string, command: string): Promise<string> {
    const job = (await operator.startJob({ agentId, prompt: `probe ${agentId}\nCALL run_command ${JSON.stringify({ command })}` })).job!;
    const done = await until(() => operator.showJob({ agentId, jobId: job.jobId }), (reply) => reply.job!.state !== JobState.JOB_STATE_RUNNING && reply.job!.state !== JobState.JOB_STATE_QUEUED, `${agentId}'s job`, 90_000);
    expect(done.job!.state, done.job!.finalText).toBe(JobState.JOB_STATE_SUCCEEDED);
    return done.job!.finalText;
  }

  const probe = () => {
    const tokenFile = controlTokenPath({ dataDir, kind: 'control-plane', address: serve.address });
    return `cat ${tokenFile} 2>/dev/null; echo "token-read=$?"; cat ${consoleTokenFile} 2>/dev/null; echo "console-read=$?"; echo "data=[$(ls -A ${dataDir} 2>/dev/null | tr '\\n' ' ')]"`;
  };

  it('hides the generated token file, the --console-token-file and the data folder from a sandboxed command', async () => {
    const output = await runAs('agent-s', probe());
    expect(output).toContain('token-read=1');
    expect(output).toContain('console-read=1');
    expect(output).toContain('data=[]');
    expect(output).not.toContain(token);
    expect(output).not.toContain('console-secret-4711');
  }, 120_000);

  it('(the contrast) leaves them readable to an unsandboxed command of the same user, as documented', async () => {
    const output = await runAs('agent-open', probe());
    expect(output).toContain('token-read=0');
    expect(output).toContain(token);
    expect(output).toContain('console-secret-4711');
    expect(output).toMatch(/data=\[.*control-plane\.sqlite.*tokens/);
  }, 120_000);
});
