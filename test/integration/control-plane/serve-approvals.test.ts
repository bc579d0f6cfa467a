import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runApprovalsCommand } from '../../../controller/control-plane/cli/approvals-command.js';
import { functionCallItem, messageItem } from '../../../controller/model/responses-wire.js';
import type { ResponseItem } from '../../../controller/model/responses-model.js';
import { ControlPlaneServiceClient, JobState, type Job } from '../../../src/gen/toolruntime/v1/control_plane.js';
import { startScriptedResponsesServer, type ScriptedResponsesServer } from '../../fakes/scripted-responses-server.js';
import { generatedToken } from '../../fixtures/control-plane-client.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';

const dir = mkdtempSync(join(tmpdir(), 'serve-approvals-'));
const workspace = join(dir, 'workspace');
let model: ScriptedResponsesServer;
let serve: StartedSidecar;
let client: ControlPlaneServiceClient;
const metadata = new grpc.Metadata();

const write = (callId: string, path: string) =>
  ({ output: [functionCallItem({ callId, name: 'write_file', arguments: JSON.stringify({ path, content: `written by ${callId}` }) })] as ResponseItem[] });
const answer = (body: Record<string, unknown>) => {
  const outputs = (body.input as ResponseItem[]).filter((item) => item.type === 'function_call_output').map((item) => (item as unknown as { output: string }).output);
  return { output: [messageItem(`the tool said: ${outputs.join(' | ')}`)] as ResponseItem[] };
};

beforeAll(async () => {
  mkdirSync(workspace);
  model = await startScriptedResponsesServer({ steps: [write('c1', 'approved.txt'), answer, write('c2', 'denied.txt'), answer] });
  const agents = join(dir, 'agents.json');
  writeFileSync(agents, JSON.stringify({ 'agent-x': { workspace, stateDir: join(dir, 'sidecar-state') } }));
  const env = { ...process.env };
  delete env.OPENAI_API_KEY;
  serve = await startSidecar({
    entry: 'controller/control-plane-main.ts',
    args: ['serve', '--listen', '127.0.0.1:0', '--data-dir', join(dir, 'data'), '--agents', agents, '--base-url', model.baseURL, '--no-stream', '--approval-timeout-ms', '600000'],
    env,
    timeoutMs: 60_000,
  });
  client = new ControlPlaneServiceClient(serve.address, grpc.credentials.createInsecure());
  // The token serve generated (no --token-file), where `approvals` finds it too.
  metadata.set('authorization', `Bearer ${generatedToken(join(dir, 'data'), serve.address)}`);
}, 90_000);
afterAll(async () => {
  client?.close();
  await serve?.stop();
  await model?.close();
  rmSync(dir, { recursive: true, force: true });
});

const startJob = (prompt: string) =>
  new Promise<Job>((resolve, reject) => client.startJob({ agentId: 'agent-x', prompt }, metadata, (error, response) => (error ? reject(error) : resolve(response.job!))));
const showJob = (jobId: string) =>
  new Promise<Job>((resolve, reject) => client.showJob({ agentId: 'agent-x', jobId }, metadata, (error, response) => (error ? reject(error) : resolve(response.job!))));

/** Runs `approvals ...` as the CLI does (the command's own code, in process), returning code and output. */
async function approvals(...args: string[]) {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const code = await runApprovalsCommand([...args, '--address', serve.address, '--data-dir', join(dir, 'data')], { argv: args, env: {}, stdout, stderr, signal: AbortSignal.timeout(20_000) });
  return { code, stdout: out, stderr: err };
}

async function until<T>(read: () => Promise<T | undefined>, what: string): Promise<T> {
  const deadline = Date.now() + 45_000;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what} did not happen within 45 s; serve's log:\n${serve.stderr().slice(-3_000)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const pendingApproval = () =>
  until(async () => {
    const listed = await approvals('list', '--json');
    const first = listed.stdout.trim().split('\n').filter(Boolean)[0];
    return first ? (JSON.parse(first) as { approval_id: string; state: string; tool_name: string; parameters_json: string; destructive: boolean; agent_id: string }) : undefined;
  }, 'a pending approval');

const finished = (jobId: string) =>
  until(async () => {
    const job = await showJob(jobId);
    return job.state === JobState.JOB_STATE_SUCCEEDED || job.state === JobState.JOB_STATE_FAILED ? job : undefined;
  }, `job ${jobId} finishing`);

describe('stored approvals under controller serve', () => {
  it('a background job\'s destructive call waits as a pending approval; approved from the CLI, it runs and the job finishes', async () => {
    const job = await startJob('write the approved file');
    const pending = await pendingApproval();
    // --json speaks the proto's snake_case field names, as `workflow list` does.
    expect(pending).toMatchObject({ state: 'pending', tool_name: 'write_file', destructive: true, agent_id: 'agent-x' });
    expect(JSON.parse(pending.parameters_json)).toEqual({ path: 'approved.txt', content: 'written by c1' });
    expect(existsSync(join(workspace, 'approved.txt'))).toBe(false);
    expect((await showJob(job.jobId)).state).toBe(JobState.JOB_STATE_RUNNING);

    const approved = await approvals('approve', pending.approval_id, '--reason', 'fine by me');
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout).toContain(`${pending.approval_id}  approved`);
    const done = await finished(job.jobId);
    expect(done.state).toBe(JobState.JOB_STATE_SUCCEEDED);
    expect(readFileSync(join(workspace, 'approved.txt'), 'utf8')).toBe('written by c1');

    const again = await approvals('deny', pending.approval_id);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('is no longer pending: it is approved');
    expect((await approvals('list')).stdout).toContain('no pending approvals');
  }, 120_000);

  it('denied from the CLI, the tool never runs and the model reads the reason', async () => {
    const job = await startJob('write the denied file');
    const pending = await pendingApproval();
    // A prefix of the id, as people copy it shortened.
    const denied = await approvals('deny', pending.approval_id.slice(0, 8), '--reason', 'not in production');
    expect(denied.code, denied.stderr).toBe(0);
    const done = await finished(job.jobId);
    expect(done.finalText).toContain('Error (denied)');
    expect(done.finalText).toContain('an operator denied it: not in production');
    expect(existsSync(join(workspace, 'denied.txt'))).toBe(false);
    // A prefix of an approval that is no longer pending says so, as the whole id does.
    const late = await approvals('approve', pending.approval_id.slice(0, 8));
    expect(late.code).toBe(1);
    expect(late.stderr).toContain(`${pending.approval_id} is no longer pending: it is denied`);
    expect(pending.approval_id).toMatch(/^appr-/);
    const all = await approvals('list', '--all', '--json');
    expect(all.stdout.trim().split('\n').map((line) => (JSON.parse(line) as { state: string }).state)).toEqual(['denied', 'approved']);
  }, 120_000);

  it('the CLI refuses bad usage and unknown ids with a one-line reason', async () => {
    expect((await approvals('approve')).code).toBe(2);
    const unknown = await approvals('approve', 'appr-nope');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr.trim()).toBe('error: no approval appr-nope');
  });

  it('finds serve\'s token by its address alone, whatever --data-dir serve was given (the runtime folder), and lists it', async () => {
    // No --data-dir: the default data folder holds no token for this address; the runtime folder names serve's.
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    let err = '';
    stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
    stdout.resume();
    const code = await runApprovalsCommand(['list', '--address', serve.address], { argv: [], env: {}, stdout, stderr, signal: AbortSignal.timeout(20_000) });
    expect([code, err]).toEqual([0, '']);
    const { runServersCommand } = await import('../../../controller/control-plane/cli/servers-command.js');
    let listed = '';
    const out = new PassThrough();
    out.setEncoding('utf8').on('data', (chunk: string) => (listed += chunk));
    expect(await runServersCommand({ argv: ['--json'], env: process.env, stdout: out, stderr })).toBe(0);
    const servers = listed.trim().split('\n').map((line) => JSON.parse(line) as { kind: string; address: string; dataDir?: string; tokenFile?: string });
    expect(servers).toContainEqual(expect.objectContaining({ kind: 'control-plane', address: serve.address, dataDir: join(dir, 'data') }));
    // serve's own sidecar child is listed too (its token stays with serve: the file it read is gone).
    expect(servers.some((server) => server.kind === 'sidecar')).toBe(true);
  });
});
