// Server reflection as a generic client sees it: `buf curl` (in node_modules, speaks gRPC
// reflection like grpcurl) drives a real sidecar and a real `controller serve` knowing nothing but
// what reflection tells it, with the proto's own snake_case field names.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedAgentModel, type ScriptedAgentModel } from '../../fakes/scripted-agent-model.js';
import { until } from '../../fixtures/control-plane-client.js';
import { startServe } from '../../fixtures/start-serve.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';

const buf = fileURLToPath(new URL('../../../node_modules/.bin/buf', import.meta.url));
const run = promisify(execFile);

/** `buf curl` over plain HTTP/2 gRPC; resolves stdout, rejects with stderr in the message. */
async function bufCurl(args: string[]): Promise<string> {
  try {
    const { stdout } = await run(buf, ['curl', '--protocol', 'grpc', '--http2-prior-knowledge', '--connect-timeout', '10', ...args], { timeout: 30_000 });
    return stdout;
  } catch (error) {
    const { stderr, message } = error as { stderr?: string; message: string };
    throw new Error(`buf curl ${args.join(' ')} failed: ${stderr || message}`);
  }
}
const lines = (text: string) => text.split('\n').filter(Boolean);

const dir = mkdtempSync(join(tmpdir(), 'reflection-'));
// The control plane needs its token on every call, reflection included (buf curl's -H reaches
// reflection requests only with --reflect-header '*').
const token = 'reflection-test-token';
const tokenFile = join(dir, 'control.token');
const withToken = ['-H', `authorization: Bearer ${token}`, '--reflect-header', '*'];
let sidecar: StartedSidecar;
let serve: StartedSidecar;
let model: ScriptedAgentModel;
beforeAll(async () => {
  sidecar = await startSidecar({ args: ['--listen', '127.0.0.1:0', '--workspace', dir, '--state-dir', join(dir, 'state')] });
  model = await startScriptedAgentModel();
  writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
  const agents = join(dir, 'agents.json');
  writeFileSync(agents, JSON.stringify({ 'agent-a': { address: sidecar.address } }));
  serve = await startServe({
    args: ['--listen', '127.0.0.1:0', '--data-dir', join(dir, 'data'), '--agents', agents, '--base-url', model.baseURL, '--token-file', tokenFile],
    env: { OPENAI_API_KEY: '', OPENAI_BASE_URL: '' },
  });
}, 90_000);
afterAll(async () => {
  await serve?.stop('SIGKILL');
  await sidecar?.stop();
  await model?.close();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('server reflection through buf curl', () => {
  it('the sidecar lists exactly what it serves, and each method resolves', async () => {
    const base = `http://${sidecar.address}`;
    // A sidecar started by hand requires the token it generated (named in its listening line).
    await expect(bufCurl(['--list-services', base])).rejects.toThrow(/not authenticated/);
    const withSidecarToken = ['-H', `authorization: Bearer ${sidecar.token}`, '--reflect-header', '*'];
    expect(lines(await bufCurl([...withSidecarToken, '--list-services', base]))).toEqual([
      'grpc.health.v1.Health',
      'grpc.reflection.v1.ServerReflection',
      'grpc.reflection.v1alpha.ServerReflection',
      'toolruntime.v1.ToolSidecarService',
    ]);
    const methods = lines(await bufCurl([...withSidecarToken, '--list-methods', base]));
    expect(methods).toEqual(expect.arrayContaining(['toolruntime.v1.ToolSidecarService/AssembleTools', 'toolruntime.v1.ToolSidecarService/Turn', 'grpc.health.v1.Health/Check']));
    expect(methods.some((method) => method.startsWith('toolruntime.v1.ControlPlaneService/'))).toBe(false);
    // v1alpha answers the same as v1.
    expect(lines(await bufCurl([...withSidecarToken, '--reflect-protocol', 'grpc-v1alpha', '--list-services', base]))).toContain('toolruntime.v1.ToolSidecarService');
  });

  it('the sidecar answers Health/Check and AssembleTools with snake_case fields', async () => {
    const base = `http://${sidecar.address}`;
    const withSidecarToken = ['-H', `authorization: Bearer ${sidecar.token}`, '--reflect-header', '*'];
    expect(JSON.parse(await bufCurl([...withSidecarToken, '-d', '{"service":"toolruntime.v1.ToolSidecarService"}', `${base}/grpc.health.v1.Health/Check`]))).toEqual({ status: 'SERVING' });
    const assembled = JSON.parse(await bufCurl([...withSidecarToken, '-d', '{"context":{"agent_id":"agent-a","turn_id":"t-1","can_spawn_jobs":false}}', `${base}/toolruntime.v1.ToolSidecarService/AssembleTools`]));
    const names = (assembled.tools as Array<{ name: string }>).map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining(['read_file', 'run_command']));
  });

  it('a symbol the sidecar does not serve is not found', async () => {
    await expect(bufCurl(['-H', `authorization: Bearer ${sidecar.token}`, '--reflect-header', '*', '-d', '{}', `http://${sidecar.address}/toolruntime.v1.ControlPlaneService/ListJobs`])).rejects.toThrow(/ControlPlaneService/);
  });

  it('the controller lists exactly what it serves, answers Health/Check, and StartJob/ShowJob with snake_case fields', async () => {
    const base = `http://${serve.address}`;
    await expect(bufCurl(['--list-services', base])).rejects.toThrow(/not authenticated/);
    expect(lines(await bufCurl([...withToken, '--list-services', base]))).toEqual([
      'grpc.health.v1.Health',
      'grpc.reflection.v1.ServerReflection',
      'grpc.reflection.v1alpha.ServerReflection',
      'toolruntime.v1.ControlPlaneService',
    ]);
    expect(JSON.parse(await bufCurl([...withToken, '-d', '{"service":""}', `${base}/grpc.health.v1.Health/Check`]))).toEqual({ status: 'SERVING' });
    const started = JSON.parse(await bufCurl([...withToken, '-d', '{"agent_id":"agent-a","prompt":"reflected job"}', `${base}/toolruntime.v1.ControlPlaneService/StartJob`]));
    expect(started.job).toMatchObject({ agentId: 'agent-a', prompt: 'reflected job' });
    const jobId = started.job.jobId as string;
    const done = await until(
      async () => JSON.parse(await bufCurl([...withToken, '-d', JSON.stringify({ agent_id: 'agent-a', job_id: jobId }), `${base}/toolruntime.v1.ControlPlaneService/ShowJob`])),
      (shown: { job: { state: string; finalText?: string } }) => shown.job.state === 'JOB_STATE_SUCCEEDED',
      'the reflected job',
    );
    expect(done.job.finalText).toBe('done: reflected job');
  });
});
