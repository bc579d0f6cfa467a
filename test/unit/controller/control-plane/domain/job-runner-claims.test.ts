// Issue 34: on PostgreSQL a job turn ran twice. A pg-boss claim expired after `--claim-expiry-s`
// whatever its controller did, the job runner did not bound a turn by its claim's life, and another
// controller took the `running` row over beside the live turn. Claims are leases on the rows now,
// renewed by the live runner at each poll; a turn whose claim cannot be renewed stops before it runs
// out. Both databases, two controllers (two stores on one database) each with its own runner.
import { describe, expect, it } from 'vitest';
import { JobRunner, type JobTurnOutcome } from '../../../../../controller/control-plane/domain/jobs/job-runner.js';
import type { JobRecord, JobStore } from '../../../../../controller/control-plane/domain/jobs/job-store.js';
import { postgresBackend, sqliteBackend, useStoreSuite } from '../../../../fixtures/store-backends.js';

/** Resolves once `read` is true (every 25 ms, at most 20 s). */
async function until(read: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await read())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

const job = { jobId: 'j1', agentId: 'agent-a', prompt: 'take your time', canSpawnJobs: false, createdAt: Date.now() };

for (const backend of [sqliteBackend(), postgresBackend('the job runner claim suite')]) {
  describe(`JobRunner claims: ${backend.name}`, backend.suiteOptions, () => {
    const suite = useStoreSuite(backend, () => new Date());

    it('runs a turn that outlives its lease once: its runner renews the claim and no other controller takes it over', async () => {
      // A short claim expiry on both stores: on pg-boss it was the claim's whole life.
      const [a, b] = [await suite.second({ claimExpirySeconds: 1 }), await suite.second({ claimExpirySeconds: 1 })];
      const starts: string[] = [];
      const turn = (name: string) => async (record: JobRecord, signal: AbortSignal): Promise<JobTurnOutcome> => {
        starts.push(`${name}:${record.attempts}`);
        await new Promise((resolve) => {
          const timer = setTimeout(resolve, 3_000);
          signal.addEventListener('abort', () => (clearTimeout(timer), resolve(undefined)), { once: true });
        });
        return signal.aborted ? { status: 'failed', finalText: '', error: String(signal.reason) } : { status: 'succeeded', finalText: `done by ${name}`, error: '' };
      };
      const runners = [new JobRunner({ jobs: a.jobs, agentIds: ['agent-a'], runTurn: turn('a'), leaseMs: 900, pollMs: 100 })];
      await a.jobs.insert(job, { maxQueuedPerAgent: 5 });
      await runners[0]!.start();
      await until(() => starts.length === 1, 'the first turn');
      runners.push(new JobRunner({ jobs: b.jobs, agentIds: ['agent-a'], runTurn: turn('b'), leaseMs: 900, pollMs: 100 }));
      await runners[1]!.start();
      try {
        await until(async () => (await a.jobs.get('j1'))?.status === 'succeeded', 'the job to succeed');
        expect(starts).toEqual(['a:1']);
        expect(await b.jobs.get('j1')).toMatchObject({ status: 'succeeded', attempts: 1, finalText: 'done by a' });
      } finally {
        for (const runner of runners) await runner.close({ graceMs: 0 });
      }
    }, 30_000);

    it('stops a turn before its claim runs out when the claim cannot be renewed, records nothing, and another controller runs the job again', async () => {
      const store = suite.store;
      // The database stops answering this runner's renewals (a partition), not its other calls.
      const cut: JobStore = { ...store.jobs, claimNext: (o) => store.jobs.claimNext(o), renewClaims: async () => Promise.reject(new Error('connection lost')) };
      let aborted: unknown;
      const runner = new JobRunner({
        jobs: cut,
        agentIds: ['agent-a'],
        leaseMs: 1_000,
        pollMs: 100,
        // The turn runs far past the claim and past --job-timeout-ms's default alike, unless stopped.
        runTurn: (_record, signal) =>
          new Promise((resolve) => {
            const timer = setTimeout(() => resolve({ status: 'succeeded', finalText: 'too late', error: '' }), 60_000);
            signal.addEventListener('abort', () => {
              clearTimeout(timer);
              aborted = signal.reason;
              resolve({ status: 'failed', finalText: '', error: 'aborted' });
            }, { once: true });
          }),
      });
      await store.jobs.insert(job, { maxQueuedPerAgent: 5 });
      await runner.start();
      try {
        await until(() => aborted !== undefined, 'the turn to be stopped');
        expect(String(aborted)).toMatch(/claim could not be renewed within its 1000 ms lease/);
        // Stopped before the claim ran out: nobody else could have claimed it yet, and nothing was recorded.
        const stored = await store.jobs.get('j1');
        expect(stored).toMatchObject({ status: 'running', attempts: 1 });
        // (This runner stops here, or it would claim the job again itself once the claim ran out.)
        await runner.close({ graceMs: 0 });
        const other = await suite.second();
        await until(async () => (await other.jobs.claimNext({ agentIds: ['agent-a'], maxRunningPerAgent: 2, now: Date.now(), owner: 'other' })) !== undefined, 'another controller to claim the job');
        expect(await other.jobs.get('j1')).toMatchObject({ status: 'running', attempts: 2 });
      } finally {
        await runner.close({ graceMs: 0 });
      }
    }, 30_000);
  });
}
