// A controller SIGKILLed in the middle of a scripted 12-call job turn, then started again: the turn
// resumes from its journal. Real parts: `controller serve` child processes (SIGKILLed at a step the
// seam names: turn-step-seam.ts), a real sidecar over a workspace, the embedded SQLite store, and a
// scripted Responses server that counts what it is asked. The side effects are lines in a file.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../../controller/control-plane/store/sqlite/open-sqlite-store.js';
import { INTERRUPTED_OUTPUT } from '../../../controller/loop/turn-journal.js';
import { STOP_AT_ENV } from '../../../controller/loop/turn-step-seam.js';
import { functionCallItem, messageItem } from '../../../controller/model/responses-wire.js';
import { startScriptedResponsesServer, type ScriptedResponsesServer } from '../../fakes/scripted-responses-server.js';
import { startServe } from '../../fixtures/start-serve.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';

const STEPS = 6; // six responses of two calls (append a line, then read the file), then the answer

const dir = mkdtempSync(join(tmpdir(), 'kill-job-turn-'));
let model: ScriptedResponsesServer;
/** Model requests per step (the number of call outputs the request holds, halved). */
let asked: number[] = [];
let sidecar: StartedSidecar;
let workspace = '';

beforeAll(async () => {
  model = await startScriptedResponsesServer({
    steps: Array.from({ length: 200 }, () => (body: Record<string, unknown>) => {
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
}, 60_000);

afterAll(async () => {
  await model?.close();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

/** Queues the job in a fresh store, runs serve until it stops at `point` (if any) and SIGKILLs it, then runs serve again to the job's end. */
async function runJob(name: string, point: string | undefined): Promise<{ finalText: string; requests: Array<Record<string, unknown>> }> {
  asked = [];
  workspace = join(dir, name, 'workspace');
  const dataDir = join(dir, name, 'data');
  mkdirSync(workspace, { recursive: true });
  sidecar = await startSidecar({ args: ['--listen', '127.0.0.1:0', '--workspace', workspace, '--state-dir', join(dir, name, 'state')] });
  const agents = join(dir, name, 'agents.json');
  writeFileSync(agents, JSON.stringify({ 'agent-a': { address: sidecar.address } }));
  const store = await openSqliteStore({ dataDir });
  await store.jobs.insert({ jobId: 'job-1', agentId: 'agent-a', prompt: 'Do the twelve calls.', canSpawnJobs: false, createdAt: Date.now() }, { maxQueuedPerAgent: 5 });
  await store.close();
  const firstRequest = model.requests.length;
  const args = ['--listen', '127.0.0.1:0', '--data-dir', dataDir, '--agents', agents, '--base-url', model.baseURL, '--approve', 'never'];
  const env = { OPENAI_API_KEY: '', OPENAI_BASE_URL: '' };
  try {
    if (point) {
      const doomed = await startServe({ args, env: { ...env, [STOP_AT_ENV]: point } });
      await waitFor(() => doomed.stderr().includes(`stopped at ${point}`), `serve to stop at ${point}`);
      await doomed.stop('SIGKILL');
    }
    const serve = await startServe({ args, env });
    try {
      const job = await waitForJob(dataDir);
      expect(job.status, job.error).toBe('succeeded');
      return { finalText: job.finalText, requests: model.requests.slice(firstRequest) };
    } finally {
      await serve.stop('SIGTERM');
    }
  } finally {
    await sidecar.stop('SIGTERM');
  }
}

async function waitFor(condition: () => boolean, what: string): Promise<void> {
  for (const until = Date.now() + 90_000; !condition(); ) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function waitForJob(dataDir: string) {
  for (const until = Date.now() + 120_000; ; ) {
    const store = await openSqliteStore({ dataDir });
    const job = await store.jobs.get('job-1').finally(() => store.close());
    if (job && job.status !== 'queued' && job.status !== 'running') return job;
    if (Date.now() > until) throw new Error(`the job did not finish: ${JSON.stringify(job)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

const effects = () => readFileSync(join(workspace, 'effects.txt'), 'utf8').trim().split('\n');
const expectedEffects = Array.from({ length: STEPS }, (_, step) => `s${step}`);

describe('a job turn whose controller is SIGKILLed resumes on restart', () => {
  let reference = '';
  it('runs uninterrupted: the reference answer, each call once', async () => {
    const run = await runJob('reference', undefined);
    reference = run.finalText;
    expect(reference).toMatch(/^done after \d+ items$/);
    expect(effects()).toEqual(expectedEffects);
    expect(asked).toEqual(Array.from({ length: STEPS + 1 }, () => 1));
  }, 240_000);

  // Call 5 is the third append (a command: it may have changed things), call 6 the read after it.
  it.each(['after-model-response:3', 'during-call:5', 'during-call:6', 'after-call:8'])('killed at %s: the same answer, every model call asked once, every finished call run once', async (point) => {
    const run = await runJob(point.replace(':', '-'), point);
    expect(run.finalText).toBe(reference);
    expect(asked).toEqual(Array.from({ length: STEPS + 1 }, () => 1));
    // Each append ran once: the one in flight at during-call:5 was not run again.
    expect(effects()).toEqual(expectedEffects);
    const last = run.requests.at(-1)!.input as Array<Record<string, unknown>>;
    const interrupted = last.filter((item) => item.type === 'function_call_output' && item.output === INTERRUPTED_OUTPUT).map((item) => item.call_id);
    expect(interrupted).toEqual(point === 'during-call:5' ? ['w2'] : []);
  }, 240_000);
});
