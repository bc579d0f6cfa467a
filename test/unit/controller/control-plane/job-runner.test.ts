import { hostname } from 'node:os';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { JobRunner, type JobTurnOutcome } from '../../../../controller/control-plane/domain/jobs/job-runner.js';
import type { ControlHooks } from '../../../../controller/control-plane/grpc/answer-control-request.js';
import type { JobRecord } from '../../../../controller/control-plane/domain/jobs/job-store.js';
import { askControlPlane as ask, tempStore } from '../../../fixtures/ask-control-plane.js';

/** A scripted job turn: records the jobs it ran, ends when the test says so or when aborted. */
function scriptedTurns() {
  const started: JobRecord[] = [];
  const finishers = new Map<string, (outcome: JobTurnOutcome) => void>();
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  return {
    started,
    run(job: JobRecord, signal: AbortSignal): Promise<JobTurnOutcome> {
      started.push(job);
      for (const waiter of waiters.filter((w) => started.length >= w.count)) waiter.resolve();
      return new Promise((resolve) => {
        finishers.set(job.jobId, resolve);
        signal.addEventListener('abort', () => resolve({ status: 'failed', finalText: '', error: `aborted: ${String(signal.reason)}` }), { once: true });
      });
    },
    finish(jobId: string, finalText: string) {
      finishers.get(jobId)?.({ status: 'succeeded', finalText, error: '' });
    },
    waitForStarts(count: number): Promise<void> {
      if (started.length >= count) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`only ${started.length} of ${count} job turns started`)), 15_000);
        waiters.push({ count, resolve: () => (clearTimeout(timer), resolve()) });
      });
    },
  };
}

async function until<T>(read: () => Promise<T>, ok: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const value = await read();
    if (ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('JobRunner over the SQLite store', () => {
  let db: ReturnType<typeof tempStore>;
  beforeEach(() => {
    db = tempStore();
  });
  afterEach(() => db.remove());

  it('runs at most the cap per agent, records final text, and cancel aborts the running turn', async () => {
    const store = await db.open();
    const turns = scriptedTurns();
    const runner = new JobRunner({ jobs: store.jobs, agentIds: ['agent-a', 'agent-b'], runTurn: turns.run, maxRunningPerAgent: 2, pollMs: 50 });
    const hooks: ControlHooks = {
      schedulesAndJobs: { onJobQueued: () => runner.wake(), onJobCancelled: (jobId, reason) => runner.abort(jobId, reason) },
    };
    await runner.start();
    const ids: string[] = [];
    for (const prompt of ['one', 'two', 'three']) ids.push((await ask(store, 'agent-a', 'startJob', { agentId: '', prompt }, hooks)).job!.jobId);
    await ask(store, 'agent-b', 'startJob', { agentId: '', prompt: 'other agent' }, hooks);
    await turns.waitForStarts(3);
    // Two of agent-a's (the cap) and agent-b's one; the third of agent-a waits queued.
    expect(turns.started.map((job) => job.prompt).sort()).toEqual(['one', 'other agent', 'two']);
    expect((await store.jobs.get(ids[2]!))!.status).toBe('queued');

    turns.finish(ids[0]!, 'done one');
    await turns.waitForStarts(4);
    expect(turns.started[3]!.prompt).toBe('three');
    const one = await until(() => ask(store, 'agent-a', 'showJob', { agentId: '', jobId: ids[0]! }), (r) => r.job!.state === 3, 'job one to succeed');
    expect(one.job).toMatchObject({ finalText: 'done one', error: '' });
    expect(one.job!.startedAt).not.toBe('');
    expect(one.job!.finishedAt).not.toBe('');

    const cancelled = await ask(store, 'agent-a', 'cancelJob', { agentId: '', jobId: ids[1]!, reason: 'not needed' }, hooks);
    expect(cancelled.job).toMatchObject({ state: 5, error: 'cancelled: not needed' });
    // The turn saw the abort; the store keeps the cancel, not the turn's failure.
    await until(async () => runner.runningCount, (n) => n === 2, 'the cancelled turn to end');
    expect((await store.jobs.get(ids[1]!))!.status).toBe('cancelled');
    await runner.close({ graceMs: 0, abortGraceMs: 5_000 });
    await store.close();
  });

  it('leaves jobs running at shutdown in the store and runs them again at the next start', async () => {
    const first = await db.open();
    const turns = scriptedTurns();
    // As if it ran in another process on this host, one that is gone by the restart (no such pid).
    const runner = new JobRunner({ jobs: first.jobs, agentIds: ['agent-a'], runTurn: turns.run, pollMs: 50, owner: `${hostname()}:2147483646:gone` });
    await runner.start();
    const { job } = await ask(first, 'agent-a', 'startJob', { agentId: '', prompt: 'long work' }, { schedulesAndJobs: { onJobQueued: () => runner.wake() } });
    await turns.waitForStarts(1);
    await runner.close({ graceMs: 0 });
    expect((await first.jobs.get(job!.jobId))!.status).toBe('running');
    await first.close();

    const second = await db.open();
    // A runner of this (live) process does not take a live runner's job...
    const live = await second.jobs.insert({ jobId: 'job_live', agentId: 'agent-a', prompt: 'held', canSpawnJobs: false, createdAt: 1 }, { maxQueuedPerAgent: 10 });
    // (Claimed now: a claim is a lease from its time, and one that ran out is taken over.)
    await second.jobs.claimNext({ agentIds: ['agent-a'], maxRunningPerAgent: 5, now: Date.now(), owner: `${hostname()}:${process.pid}:alive` });
    const again = scriptedTurns();
    const restarted = new JobRunner({ jobs: second.jobs, agentIds: ['agent-a'], runTurn: again.run, pollMs: 50 });
    expect(await restarted.start()).toEqual({ resumed: 1 });
    await again.waitForStarts(1);
    expect(again.started[0]).toMatchObject({ jobId: job!.jobId, attempts: 2 });
    // ...but the dead one's only.
    expect((await second.jobs.get(live.jobId))!.status).toBe('running');
    expect(again.started.map((j) => j.jobId)).not.toContain(live.jobId);
    again.finish(job!.jobId, 'finished after the restart');
    await until(() => second.jobs.get(job!.jobId), (j) => j?.status === 'succeeded', 'the resumed job to succeed');
    await restarted.close();
    await second.close();
  });
});
