// The deploy/ probe script against real processes: a sidecar behind its token, and a `serve`
// controller on PostgreSQL (SQLite without it) that drains on SIGTERM: NOT_SERVING for readiness,
// still answering for liveness, running turns finished within the grace, exit 0.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openControlPlaneStore } from '../../../controller/control-plane/store/open-control-plane-store.js';
import { startScriptedAgentModel, type ScriptedAgentModel } from '../../fakes/scripted-agent-model.js';
import { controlPlaneClient, until } from '../../fixtures/control-plane-client.js';
import { postgresUnavailableReason, startPostgresCluster, type PostgresCluster } from '../../fixtures/postgres-cluster.js';
import { startServe } from '../../fixtures/start-serve.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';

const execFileAsync = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'drain-probe-'));
const tokenFile = join(dir, 'token');
writeFileSync(tokenFile, 'probe-token-1\n');
const wrongTokenFile = join(dir, 'wrong-token');
writeFileSync(wrongTokenFile, 'not-it\n');
let sidecar: StartedSidecar;
let model: ScriptedAgentModel;
let cluster: PostgresCluster | undefined;
const started: StartedSidecar[] = [];

/** Runs the probe script; returns its exit code and output. */
async function probe(args: string[]): Promise<{ code: number; out: string }> {
  try {
    const { stdout, stderr } = await execFileAsync(process.execPath, ['deploy/grpc-health-probe.mjs', ...args], { timeout: 20_000 });
    return { code: 0, out: `${stdout}${stderr}` };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof failed.code === 'number' ? failed.code : -1, out: `${failed.stdout ?? ''}${failed.stderr ?? ''}` };
  }
}

beforeAll(async () => {
  sidecar = await startSidecar({ args: ['--listen', '127.0.0.1:0', '--workspace', dir, '--state-dir', join(dir, 'sidecar-state'), '--token-file', tokenFile] });
  model = await startScriptedAgentModel();
  const reason = postgresUnavailableReason();
  if (reason && process.env.CI === 'true') throw new Error(`CI=true and PostgreSQL is missing: ${reason}`);
  if (reason) process.stderr.write(`drain-and-probe: serving on SQLite instead of PostgreSQL: ${reason}\n`);
  else cluster = await startPostgresCluster();
}, 120_000);
afterAll(async () => {
  for (const serve of started) await serve.stop('SIGKILL');
  await sidecar?.stop();
  await model?.close();
  await cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('deploy/grpc-health-probe.mjs', () => {
  it('passes readiness on a SERVING sidecar only with the right token and the right service', async () => {
    const ready = await probe(['--address', sidecar.address, '--token-file', tokenFile, '--service', 'toolruntime.v1.ToolSidecarService']);
    expect(ready).toEqual({ code: 0, out: 'SERVING\n' });
    const wrong = await probe(['--address', sidecar.address, '--token-file', wrongTokenFile]);
    expect(wrong.code).toBe(1);
    expect(wrong.out).toMatch(/bearer token is wrong/);
    const unknown = await probe(['--address', sidecar.address, '--token-file', tokenFile, '--service', 'no.such.Service']);
    expect(unknown.code).toBe(1);
    const nobody = await probe(['--address', '127.0.0.1:1', '--token-file', tokenFile, '--timeout-ms', '3000']);
    expect(nobody.code).toBe(1);
    expect((await probe(['--token-file', tokenFile])).out).toMatch(/--address HOST:PORT is required/);
  });
});

describe('serve drains on SIGTERM', () => {
  it('reports NOT_SERVING while a running turn finishes within the grace, stays alive for liveness, then exits 0 with the job done', async () => {
    const database = cluster ? await cluster.createDatabase('drain') : undefined;
    const dataDir = join(dir, 'data');
    const agents = join(dir, 'agents.json');
    writeFileSync(agents, JSON.stringify({ 'agent-a': { address: sidecar.address, tokenFile } }));
    // No tsx CLI in between: under load it turns the relayed SIGTERM into a SIGKILL (see startServe).
    const serve = await startServe({
      args: ['--listen', '127.0.0.1:0', '--data-dir', dataDir, '--agents', agents, '--base-url', model.baseURL, '--token-file', tokenFile, '--grace-ms', '60000', '--approve', 'never'],
      env: { OPENAI_API_KEY: '', OPENAI_BASE_URL: '', DATABASE_URL: database ?? '' },
      timeoutMs: 60_000,
    });
    started.push(serve);
    const controllerService = ['--address', serve.address, '--token-file', tokenFile, '--service', 'toolruntime.v1.ControlPlaneService'];
    expect(await probe(controllerService)).toEqual({ code: 0, out: 'SERVING\n' });
    const client = controlPlaneClient(serve.address, 'probe-token-1');
    // The job's turn runs a command that outlasts the probes below, well inside the grace.
    const slow = (await client.startJob({ agentId: 'agent-a', prompt: 'draining job\nCALL run_command {"command":"sleep 10; echo slept"}' })).job!;
    await model.waitForTurns('draining job', 1);
    client.close();

    const exited = serve.stop('SIGTERM');
    const draining = await until(() => probe(controllerService), (result) => result.code === 1, 'NOT_SERVING while draining');
    expect(draining.out).toMatch(/NOT_SERVING/);
    expect(await probe(['--address', serve.address, '--token-file', tokenFile, '--live'])).toEqual({ code: 0, out: 'NOT_SERVING\n' });
    expect(await exited).toBe(0);

    const store = await openControlPlaneStore({ dataDir, ...(database ? { database } : {}) });
    try {
      expect(store.location).toMatch(database ? /^postgres:\/\// : /control-plane\.sqlite$/);
      const job = await store.jobs.get(slow.jobId);
      expect(job).toMatchObject({ status: 'succeeded', attempts: 1 });
      expect(job?.finalText).toMatch(/slept/);
    } finally {
      await store.close();
    }
  }, 120_000);
});
