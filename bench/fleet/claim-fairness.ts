/**
 * Claims on the store itself (no controller process): how long a lone agent's job waits behind
 * another agent's flood of queued jobs, with and without the flood, and what a new agent's first job
 * costs against a job of an agent that had many (nothing is created per agent). Claims as the job
 * runner makes them: rounds of `claimNext` until none is left, at most 2 running per agent.
 */
import { openPostgresStore } from '../../controller/control-plane/store/postgres/open-postgres-store.js';
import type { PostgresCluster } from '../../test/fixtures/postgres-cluster.js';
import { quantile } from '../bench-row.js';

/** What the fairness run saw. */
export interface ClaimFairness {
  /** Claims made before the lone job's own, and the time from its insert to its claim, with no flood. */
  alone: { claimsBefore: number; waitMs: number };
  /** The same with `flood` jobs of another agent queued before it. */
  flooded: { claimsBefore: number; waitMs: number };
  flood: number;
  /** p50 of insert + claim (ms) of a job of an agent never seen, and of one of an agent with many jobs. */
  firstJobMs: number;
  repeatJobMs: number;
}

async function loneWait(url: string, flood: number): Promise<{ claimsBefore: number; waitMs: number }> {
  const store = await openPostgresStore({ url, maxConnections: 4 });
  try {
    const agentIds = ['flood', 'lone'];
    // A warm connection and plan, so that neither wait pays the first query's cost.
    await store.jobs.insert({ jobId: `warm-${flood}`, agentId: 'warm', prompt: 'p', canSpawnJobs: false, createdAt: Date.now() }, { maxQueuedPerAgent: 5 });
    await store.jobs.claimNext({ agentIds: ['warm'], maxRunningPerAgent: 2, now: Date.now(), owner: 'bench' });
    for (let i = 0; i < flood; i++) await store.jobs.insert({ jobId: `flood-${flood}-${i}`, agentId: 'flood', prompt: 'p', canSpawnJobs: false, createdAt: Date.now() }, { maxQueuedPerAgent: flood + 1 });
    const started = performance.now();
    await store.jobs.insert({ jobId: `lone-${flood}`, agentId: 'lone', prompt: 'p', canSpawnJobs: false, createdAt: Date.now() }, { maxQueuedPerAgent: 5 });
    let claimsBefore = 0;
    for (;;) {
      const job = await store.jobs.claimNext({ agentIds, maxRunningPerAgent: 2, now: Date.now(), owner: 'bench' });
      if (!job) throw new Error('the lone job was never claimed');
      if (job.agentId === 'lone') return { claimsBefore, waitMs: performance.now() - started };
      claimsBefore++;
    }
  } finally {
    await store.close();
  }
}

/** Runs on two fresh databases of `cluster`. */
export async function measureClaimFairness(cluster: PostgresCluster, flood = 1_000): Promise<ClaimFairness> {
  const alone = await loneWait(await cluster.createDatabase(`fair_alone_${process.pid}`), 0);
  const url = await cluster.createDatabase(`fair_flood_${process.pid}`);
  const flooded = await loneWait(url, flood);
  const store = await openPostgresStore({ url, maxConnections: 4 });
  try {
    const first: number[] = [];
    const repeat: number[] = [];
    const one = async (into: number[], jobId: string, agentId: string) => {
      const started = performance.now();
      await store.jobs.insert({ jobId, agentId, prompt: 'p', canSpawnJobs: false, createdAt: Date.now() }, { maxQueuedPerAgent: 10_000 });
      const job = await store.jobs.claimNext({ agentIds: [agentId], maxRunningPerAgent: 10_000, now: Date.now(), owner: 'bench' });
      into.push(performance.now() - started);
      await store.jobs.finish(job!.jobId, { status: 'succeeded', finalText: '', error: '', now: Date.now() });
    };
    for (let i = 0; i < 200; i++) {
      await one(first, `first-${i}`, `new-agent-${i}`);
      await one(repeat, `repeat-${i}`, 'flood');
    }
    return { alone, flooded, flood, firstJobMs: quantile(first, 0.5), repeatJobMs: quantile(repeat, 0.5) };
  } finally {
    await store.close();
  }
}
