// Three controllers on one PostgreSQL store: the one running a scripted 12-call job turn is SIGKILLed
// with a command in flight, and another takes the turn over from the journal. Real parts: three
// `controller serve` processes, a throwaway PostgreSQL cluster, a real sidecar, a scripted model.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgresStore } from '../../../controller/control-plane/store/postgres/open-postgres-store.js';
import { INTERRUPTED_OUTPUT } from '../../../controller/loop/turn-journal.js';
import { STOP_AT_ENV } from '../../../controller/loop/turn-step-seam.js';
import { functionCallItem, messageItem } from '../../../controller/model/responses-wire.js';
import { startScriptedResponsesServer, type ScriptedResponsesServer } from '../../fakes/scripted-responses-server.js';
import { requirePostgres, startPostgresCluster, type PostgresCluster } from '../../fixtures/postgres-cluster.js';
import { startServe } from '../../fixtures/start-serve.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';

const STEPS = 6;
const dir = mkdtempSync(join(tmpdir(), 'kill-job-turn-pg-'));
const asked: number[] = [];
let model: ScriptedResponsesServer | undefined;
let cluster: PostgresCluster | undefined;
let sidecar: StartedSidecar | undefined;

describe('three controllers on PostgreSQL', requirePostgres('the three-controller turn resume test'), () => {
  beforeAll(async () => {
    cluster = await startPostgresCluster();
    model = await startScriptedResponsesServer({
      steps: Array.from({ length: 100 }, () => (body: Record<string, unknown>) => {
        const input = body.input as Array<Record<string, unknown>>;
        const step = input.filter((item) => item.type === 'function_call_output').length / 2;
        asked[step] = (asked[step] ?? 0) + 1;
        if (step >= STEPS) return { output: [messageItem(`done after ${input.length} items`)] };
        return {
          output: [
            functionCallItem({ callId: `w${step}`, name: 'run_command', arguments: JSON.stringify({ command: `echo s${step} >> effects.txt` }) }),
            functionCallItem({ callId: `r${step}`, name: 'read_file', arguments: JSON.stringify({ path: 'effects.txt' }) }),
          ],
        };
      }),
    });
  }, 120_000);

  afterAll(async () => {
    await sidecar?.stop('SIGTERM');
    await model?.close();
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('the turn of a controller SIGKILLed with a command in flight is finished by another: every call once, the command reported interrupted', async () => {
    const url = await cluster!.createDatabase('kill_turn');
    const workspace = join(dir, 'workspace');
    mkdirSync(workspace);
    sidecar = await startSidecar({ args: ['--listen', '127.0.0.1:0', '--workspace', workspace, '--state-dir', join(dir, 'state')] });
    const agents = join(dir, 'agents.json');
    writeFileSync(agents, JSON.stringify({ 'agent-a': { address: sidecar.address } }));
    // The job's pg-boss claim expires as the controllers' do (it is sent with its expiry).
    const store = await openPostgresStore({ url, maxConnections: 2, claimExpirySeconds: 5 });
    await store.jobs.insert({ jobId: 'job-1', agentId: 'agent-a', prompt: 'Do the twelve calls.', canSpawnJobs: false, createdAt: Date.now() }, { maxQueuedPerAgent: 5 });
    const serveArgs = (name: string) => ['--listen', '127.0.0.1:0', '--data-dir', join(dir, name), '--database', url, '--claim-expiry-s', '5', '--agents', agents, '--base-url', model!.baseURL, '--approve', 'never'];
    const env = { OPENAI_API_KEY: '', OPENAI_BASE_URL: '', DATABASE_URL: '' };
    const first = await startServe({ args: serveArgs('first'), env: { ...env, [STOP_AT_ENV]: 'during-call:5' } });
    const others = [];
    try {
      for (const until = Date.now() + 90_000; !first.stderr().includes('stopped at during-call:5'); ) {
        if (Date.now() > until) throw new Error(`the first controller never stopped: ${first.stderr()}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      others.push(await startServe({ args: serveArgs('second'), env }), await startServe({ args: serveArgs('third'), env }));
      await first.stop('SIGKILL');
      let job = await store.jobs.get('job-1');
      for (const until = Date.now() + 120_000; job?.status === 'running' || job?.status === 'queued'; job = await store.jobs.get('job-1')) {
        if (Date.now() > until) throw new Error(`the job was not finished by another controller: ${JSON.stringify(job)}\n${others.map((serve) => serve.stderr().split('\n').filter((line) => /job|claim|resum/i.test(line)).slice(-8).join('\n')).join('\n---\n')}`);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      expect(job?.status, job?.error).toBe('succeeded');
      expect(job?.finalText).toMatch(/^done after \d+ items$/);
      // The first controller is dead: the second claim (attempt 2) was one of the two others'.
      expect(job?.attempts).toBe(2);
      expect(asked).toEqual(Array.from({ length: STEPS + 1 }, () => 1));
      expect(readFileSync(join(workspace, 'effects.txt'), 'utf8').trim().split('\n')).toEqual(Array.from({ length: STEPS }, (_, step) => `s${step}`));
      const last = model!.requests.at(-1)!.input as Array<Record<string, unknown>>;
      expect(last.filter((item) => item.output === INTERRUPTED_OUTPUT).map((item) => item.call_id)).toEqual(['w2']);
    } finally {
      for (const serve of others) await serve.stop('SIGTERM');
      await first.stop('SIGKILL');
      await store.close();
    }
  }, 300_000);
});
