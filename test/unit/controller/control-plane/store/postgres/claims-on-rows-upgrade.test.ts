// Issue 34: a database of the per-agent pg-boss queues (schema 5) moves to claims on the rows
// (schema 6) in place, with its queued work kept, while controllers of the earlier release still
// run beside the new ones. pg-boss itself is not needed here: its job table is stood in for by one
// with the columns migration 6 touches (name, state as pg-boss's enum, completed_on), partitioned by
// queue name as pg-boss 10 partitions it.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgresStore } from '../../../../../../controller/control-plane/store/postgres/open-postgres-store.js';
import { postgresMigrations } from '../../../../../../controller/control-plane/store/postgres/postgres-migrations.js';
import { requirePostgres, startPostgresCluster, type PostgresCluster } from '../../../../../fixtures/postgres-cluster.js';

const T0 = Date.parse('2026-12-03T08:00:00.000Z');

describe('migration 6 (claims on the rows) on a database of the per-agent pg-boss queues', requirePostgres('the claims-on-rows upgrade test'), () => {
  let cluster: PostgresCluster;
  beforeAll(async () => {
    cluster = await startPostgresCluster();
  }, 90_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it('keeps queued work claimable, leaves the old controllers their running work, and stops them fetching anything again', async () => {
    const url = await cluster.createDatabase(`v5_${process.pid}`);
    const db = new pg.Client({ connectionString: url });
    await db.connect();
    try {
      // Schema 5 as the earlier release left it, with pg-boss's job table beside it.
      await db.query('CREATE TABLE tools_runtime_schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)');
      for (const migration of postgresMigrations.slice(0, 5)) {
        await db.query(migration.sql);
        await db.query('INSERT INTO tools_runtime_schema_migrations VALUES ($1, $2, $3)', [migration.version, migration.name, new Date(T0).toISOString()]);
      }
      await db.query(`CREATE SCHEMA pgboss;
        CREATE TYPE pgboss.job_state AS ENUM ('created', 'retry', 'active', 'completed', 'cancelled', 'failed');
        CREATE TABLE pgboss.job (id uuid NOT NULL DEFAULT gen_random_uuid(), name text NOT NULL, state pgboss.job_state NOT NULL DEFAULT 'created', data jsonb, completed_on timestamptz, PRIMARY KEY (name, id)) PARTITION BY LIST (name);
        CREATE TABLE pgboss.j_turns PARTITION OF pgboss.job FOR VALUES IN ('tools-runtime-job-turns.agent-1');
        CREATE TABLE pgboss.j_tasks PARTITION OF pgboss.job FOR VALUES IN ('tools-runtime-task-attempts.agent-1');
        CREATE TABLE pgboss.j_other PARTITION OF pgboss.job DEFAULT;`);
      // An old controller's work: a job queued, one running; a run whose task a runs and whose b is queued.
      await db.query(`INSERT INTO jobs (job_id, agent_id, prompt, status, can_spawn_jobs, created_at) VALUES ('queued-job', 'agent-1', 'p', 'queued', false, ${T0})`);
      await db.query(`INSERT INTO jobs (job_id, agent_id, prompt, status, can_spawn_jobs, attempts, owner, created_at, started_at) VALUES ('old-job', 'agent-1', 'p', 'running', false, 1, 'old:1:x', ${T0}, ${T0})`);
      await db.query(`INSERT INTO workflow_runs (run_id, agent_id, name, state, max_parallel, created_at) VALUES ('run-1', 'agent-1', 'two', 'running', 2, '2026-12-03T08:00:00.000Z')`);
      for (const [task, state, claim, owner, attempts] of [['a', 'running', 'boss-a', 'old:1:x', 1], ['b', 'pending', 'boss-b', null, 0]] as const) {
        await db.query(`INSERT INTO workflow_tasks (run_id, task_id, position, prompt, result_schema_json, depends_on_json, max_attempts, state, attempts, claim_id, claim_owner) VALUES ('run-1', $1, $2, 'p', '{}', '[]', 2, $3, $4, $5, $6)`, [task, task === 'a' ? 0 : 1, state, attempts, claim, owner]);
      }
      await db.query(`INSERT INTO workflow_attempts (run_id, task_id, attempt, started_at, owner) VALUES ('run-1', 'a', 1, '2026-12-03T08:00:00.000Z', 'old:1:x')`);
      await db.query(`INSERT INTO pgboss.job (name, state, data) VALUES
        ('tools-runtime-job-turns.agent-1', 'created', '{"jobId":"queued-job"}'),
        ('tools-runtime-job-turns.agent-1', 'active', '{"jobId":"old-job"}'),
        ('tools-runtime-task-attempts.agent-1', 'active', '{"runId":"run-1","taskId":"a"}'),
        ('tools-runtime-task-attempts.agent-1', 'retry', '{"runId":"run-1","taskId":"b"}'),
        ('someone-elses-queue', 'created', '{}')`);

      const store = await openPostgresStore({ url, maxConnections: 3 });
      try {
        expect((await db.query('SELECT max(version) AS v FROM tools_runtime_schema_migrations')).rows[0].v).toBe(postgresMigrations.at(-1)!.version);
        const states = async () => (await db.query<{ name: string; state: string; data: unknown }>('SELECT name, state::text AS state, data FROM pgboss.job ORDER BY name, data::text')).rows.map((row) => `${row.name} ${JSON.stringify(row.data)} ${row.state}`);
        // Nothing of this program is left for an old controller to fetch; what old controllers run stays theirs; other queues are untouched.
        expect(await states()).toEqual([
          'someone-elses-queue {} created',
          'tools-runtime-job-turns.agent-1 {"jobId":"old-job"} active',
          'tools-runtime-job-turns.agent-1 {"jobId":"queued-job"} completed',
          'tools-runtime-task-attempts.agent-1 {"runId":"run-1","taskId":"a"} active',
          'tools-runtime-task-attempts.agent-1 {"runId":"run-1","taskId":"b"} completed',
        ]);
        // An old controller still running sends new work, and hands its claims back or has them expire: none becomes fetchable.
        await db.query(`INSERT INTO pgboss.job (name, state, data) VALUES ('tools-runtime-job-turns.agent-2', 'created', '{"jobId":"sent-later"}')`);
        await db.query(`UPDATE pgboss.job SET state = 'retry' WHERE state = 'active'`);
        expect((await db.query("SELECT count(*)::int AS n FROM pgboss.job WHERE name LIKE 'tools-runtime-%' AND state IN ('created', 'retry')")).rows[0].n).toBe(0);

        // An old controller offers a task as it did: its pg-boss claim on the pending row. The row is still claimable.
        await db.query("UPDATE workflow_tasks SET claim_id = 'boss-late' WHERE task_id = 'b'");
        // The new controllers claim the queued work from the rows.
        expect(await store.jobs.claimNext({ agentIds: ['agent-1'], maxRunningPerAgent: 5, now: Date.now(), owner: 'new:2:y' })).toMatchObject({ jobId: 'queued-job', attempts: 1 });
        expect(await store.workflows.claimTask({ owner: 'new:2:y', leaseMs: 60_000, agentIds: ['agent-1'] })).toMatchObject({ runId: 'run-1', taskId: 'b', attempt: 1 });
        // The old controller's running job and task keep a lease of the old expiry's default: not taken over from it.
        expect(await store.jobs.claimNext({ agentIds: ['agent-1'], maxRunningPerAgent: 5, now: Date.now(), owner: 'new:2:y' })).toBeUndefined();
        expect(await store.workflows.claimTask({ owner: 'new:2:y', leaseMs: 60_000, agentIds: ['agent-1'] })).toBeUndefined();
        // ...and it records their ends as before.
        expect(await store.jobs.finish('old-job', { status: 'succeeded', finalText: 'old', error: '', now: Date.now() })).toBe(true);
        expect(await store.workflows.commitResult({ runId: 'run-1', taskId: 'a', attempt: 1, resultJson: '{}' })).toMatchObject({ committed: true, runState: 'running' });
        // Once the old lease runs out unrenewed (its controller died), the new ones take the job over.
        await db.query("UPDATE jobs SET status = 'running', claim_until = 1 WHERE job_id = 'old-job'");
        expect(await store.jobs.claimNext({ agentIds: ['agent-1'], maxRunningPerAgent: 5, now: Date.now(), owner: 'new:2:y' })).toMatchObject({ jobId: 'old-job', attempts: 2 });
      } finally {
        await store.close();
      }
    } finally {
      await db.end();
    }
  }, 60_000);
});
