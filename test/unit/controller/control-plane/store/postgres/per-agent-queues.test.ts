import pg from 'pg';
import PgBoss from 'pg-boss';
import { beforeEach, describe, expect, it } from 'vitest';
import type { ControlPlaneStore } from '../../../../../../controller/control-plane/domain/control-plane-store.js';
import { postgresBackend, useStoreSuite } from '../../../../../fixtures/store-backends.js';

const schema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] };
const oneTask = { name: 'one', maxParallel: 1, tasks: [{ id: 'a', prompt: 'p', resultSchema: schema, dependsOn: [], maxAttempts: 2 }] };
const T0 = Date.parse('2026-12-01T18:00:00.000Z');

// Issue 23 item 7: every agent's task attempts and job turns shared one pg-boss queue, so each
// controller fetched other agents' work and handed it back; pg-boss counts every hand-back as a
// retry, so work for an agent no controller serves ran out of retries and was stuck for good.
const backend = postgresBackend('the per-agent pg-boss queues suite');
describe('PostgreSQL store: each agent has its own pg-boss queues', backend.suiteOptions, () => {
  const suite = useStoreSuite(backend, () => new Date(T0));
  let store: ControlPlaneStore;
  let db: pg.Client;
  beforeEach(async () => {
    store = suite.store;
    db = new pg.Client({ connectionString: suite.location.url });
    await db.connect();
    return () => db.end();
  });
  const claimTask = (agentId: string) => store.workflows.claimTask({ owner: 'r1', leaseMs: 60_000, agentIds: [agentId] });
  const claimJob = (agentId: string) => store.jobs.claimNext({ agentIds: [agentId], maxRunningPerAgent: 1, now: T0, owner: 'r1' });

  it("creates the queues of many agents at once on one session, and only for agents with work: a controller serving hundreds of agents stays within PostgreSQL's connections", async () => {
    const queues = async () => (await db.query<{ n: number }>("SELECT count(*)::int AS n FROM pgboss.queue WHERE name LIKE 'tools-runtime-%.agent-%'")).rows[0]!.n;
    const agents = Array.from({ length: 110 }, (_, index) => `agent-${index}`);
    // Claiming creates no queue: pg-boss makes a table per queue, and most agents may never have work.
    expect(await store.jobs.claimNext({ agentIds: agents, maxRunningPerAgent: 1, now: T0, owner: 'r1' })).toBeUndefined();
    expect(await queues()).toBe(0);
    // Every agent's first job at once: 220 queues, past this cluster's max_connections (200). One
    // session per queue creation, all at once, failed here with "sorry, too many clients already".
    await Promise.all(agents.map((agentId) => store.jobs.insert({ jobId: `j-${agentId}`, agentId, prompt: 'p', canSpawnJobs: false, createdAt: T0 }, { maxQueuedPerAgent: 5 })));
    expect(await queues()).toBe(220);
    expect(await store.jobs.claimNext({ agentIds: ['agent-109'], maxRunningPerAgent: 1, now: T0, owner: 'r1' })).toMatchObject({ jobId: 'j-agent-109' });
  }, 120_000);

  it("a controller never fetches another agent's work, so that work is never handed back nor counted as a retry", async () => {
    const run = await store.workflows.createRun({ agentId: 'agent-b', maxRunningPerAgent: 5, definition: oneTask });
    await store.jobs.insert({ jobId: 'jb', agentId: 'agent-b', prompt: 'p', canSpawnJobs: false, createdAt: T0 }, { maxQueuedPerAgent: 5 });
    for (let i = 0; i < 3; i++) {
      expect(await claimTask('agent-a')).toBeUndefined();
      expect(await claimJob('agent-a')).toBeUndefined();
    }
    const { rows } = await db.query<{ state: string; retry_count: number }>("SELECT state, retry_count FROM pgboss.job WHERE name LIKE 'tools-runtime-%'");
    expect(rows).toEqual([
      { state: 'created', retry_count: 0 },
      { state: 'created', retry_count: 0 },
    ]);
    // Untouched, so claimable at once (a handed-back job waits out pg-boss's retry delay first).
    expect(await claimTask('agent-b')).toMatchObject({ runId: run.runId, taskId: 'a', attempt: 1 });
    expect(await claimJob('agent-b')).toMatchObject({ jobId: 'jb', status: 'running' });
  });

  it('moves work an earlier version queued on the shared queue to its agent queue, and runs it', async () => {
    // The shared queues as the earlier version created them, before this version's store opens.
    const boss = new PgBoss({ connectionString: suite.location.url, max: 1, schedule: false, supervise: false });
    await boss.start();
    for (const name of ['tools-runtime-job-turns', 'tools-runtime-task-attempts']) await boss.createQueue(name, { name, policy: 'short', retryLimit: 1_000_000, retryDelay: 1, expireInSeconds: 900 });
    await boss.stop({ graceful: false, wait: true });
    store = await suite.reopen();
    const run = await store.workflows.createRun({ agentId: 'agent-b', maxRunningPerAgent: 5, definition: oneTask });
    await store.jobs.insert({ jobId: 'jb', agentId: 'agent-b', prompt: 'p', canSpawnJobs: false, createdAt: T0 }, { maxQueuedPerAgent: 5 });
    // As the earlier version queued them: the same pg-boss jobs, on the shared queues.
    for (const name of ['tools-runtime-job-turns', 'tools-runtime-task-attempts']) {
      const moved = await db.query('UPDATE pgboss.job SET name = $1 WHERE name LIKE $2', [name, `${name}.%`]);
      expect(moved.rowCount).toBe(1);
    }
    expect(await claimTask('agent-b')).toMatchObject({ runId: run.runId, taskId: 'a', attempt: 1 });
    expect(await claimJob('agent-b')).toMatchObject({ jobId: 'jb', status: 'running' });
    const { rows } = await db.query<{ name: string; state: string }>("SELECT name, state FROM pgboss.job WHERE name LIKE 'tools-runtime-%' ORDER BY name");
    expect(rows).toEqual([
      { name: 'tools-runtime-job-turns', state: 'completed' },
      { name: 'tools-runtime-job-turns.agent-b', state: 'active' },
      { name: 'tools-runtime-task-attempts', state: 'completed' },
      { name: 'tools-runtime-task-attempts.agent-b', state: 'active' },
    ]);
  });
});
