// Migration 5 on both databases: a populated store of schema 4 (a running run with a claimed task,
// a committed one, values in the columns being dropped) upgrades in place; its runs, claims and
// attempts are kept and work on, and the unused columns are gone.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControlPlaneStore } from '../../../../../controller/control-plane/domain/control-plane-store.js';
import { openPostgresStore } from '../../../../../controller/control-plane/store/postgres/open-postgres-store.js';
import { postgresMigrations } from '../../../../../controller/control-plane/store/postgres/postgres-migrations.js';
import { migrations } from '../../../../../controller/control-plane/store/sqlite/migrations.js';
import { openSqliteStore, STORE_FILE_NAME } from '../../../../../controller/control-plane/store/sqlite/open-sqlite-store.js';
import type { WorkflowDefinition } from '../../../../../controller/control-plane/domain/workflows/workflow-store.js';
import { requirePostgres, startPostgresCluster, type PostgresCluster } from '../../../../fixtures/postgres-cluster.js';

const schema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] };
const definition: WorkflowDefinition = {
  name: 'three',
  maxParallel: 2,
  tasks: [
    { id: 'a', prompt: 'first', resultSchema: schema, dependsOn: [], maxAttempts: 2 },
    { id: 'b', prompt: 'second', resultSchema: schema, dependsOn: ['a'], maxAttempts: 2 },
    { id: 'c', prompt: 'third', resultSchema: schema, dependsOn: ['b'], maxAttempts: 2 },
  ],
};
const T0 = Date.parse('2026-12-01T18:00:00.000Z');
const now = () => new Date(T0);

/** Populates a store of schema 4 through the store itself: a committed, b claimed by r1, c pending. */
async function populate(store: ControlPlaneStore) {
  const run = await store.workflows.createRun({ agentId: 'agent-1', definition, maxRunningPerAgent: 5 });
  const a = await store.workflows.claimTask({ owner: 'r1', leaseMs: 60_000 });
  expect(a).toMatchObject({ taskId: 'a', attempt: 1 });
  expect(await store.workflows.commitResult({ runId: run.runId, taskId: 'a', attempt: 1, resultJson: '{"n":1}' })).toMatchObject({ committed: true });
  const b = await store.workflows.claimTask({ owner: 'r1', leaseMs: 60_000 });
  expect(b).toMatchObject({ taskId: 'b', attempt: 1 });
  return { runId: run.runId, claim: b! };
}

/** After the upgrade: everything is there, r1's claim still holds, and the run finishes. */
async function expectKeptAndWorking(store: ControlPlaneStore, runId: string, claim: Awaited<ReturnType<typeof populate>>['claim']) {
  const run = await store.workflows.getRun(runId);
  expect(run?.tasks.map((task) => [task.taskId, task.state, task.owner])).toEqual([['a', 'committed', undefined], ['b', 'running', 'r1'], ['c', 'pending', undefined]]);
  expect(run?.tasks[0]?.resultJson).toBe('{"n":1}');
  expect(await store.workflows.renewClaims({ owner: 'r1', leaseMs: 60_000, claims: [claim] })).toEqual([claim]);
  expect(await store.workflows.commitResult({ runId, taskId: 'b', attempt: 1, resultJson: '{"n":2}' })).toMatchObject({ committed: true });
  const c = await store.workflows.claimTask({ owner: 'r2', leaseMs: 60_000 });
  expect(c).toMatchObject({ runId, taskId: 'c', attempt: 1 });
  expect(await store.workflows.commitResult({ runId, taskId: 'c', attempt: 1, resultJson: '{"n":3}' })).toMatchObject({ committed: true, runState: 'succeeded' });
  expect((await store.workflows.listAttempts(runId)).map((attempt) => [attempt.taskId, attempt.outcome, attempt.owner])).toEqual([
    ['a', 'committed', 'r1'],
    ['b', 'committed', 'r1'],
    ['c', 'committed', 'r2'],
  ]);
}

describe('migration 5 (the unused run lease columns) on SQLite', () => {
  it('upgrades a populated store of schema 4 in place', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'store-v4-'));
    try {
      const old = await openSqliteStore({ dataDir, now, migrations: migrations.slice(0, 4) });
      const { runId, claim } = await populate(old);
      await old.close();
      // Values in the columns about to go, as an older release could have left them.
      const raw = new Database(join(dataDir, STORE_FILE_NAME));
      raw.prepare("UPDATE workflow_runs SET owner = 'gone:1:x', lease_until = 5").run();
      expect(raw.pragma('user_version', { simple: true })).toBe(4);
      raw.close();

      const store = await openSqliteStore({ dataDir, now, migrations: migrations.slice(0, 5) });
      try {
        const check = new Database(join(dataDir, STORE_FILE_NAME), { readonly: true });
        const columns = (check.prepare('PRAGMA table_info(workflow_runs)').all() as Array<{ name: string }>).map((column) => column.name);
        expect(check.pragma('user_version', { simple: true })).toBe(5);
        check.close();
        expect(columns).not.toContain('owner');
        expect(columns).not.toContain('lease_until');
        expect(columns).toContain('max_parallel');
        await expectKeptAndWorking(store, runId, claim);
      } finally {
        await store.close();
      }
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe('migration 5 (the unused run lease columns and claim_until) on PostgreSQL', requirePostgres('the migration 5 test on PostgreSQL'), () => {
  let cluster: PostgresCluster;
  beforeAll(async () => {
    cluster = await startPostgresCluster();
  }, 90_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it('upgrades a populated store of schema 4 in place', async () => {
    const url = await cluster.createDatabase(`v4_${process.pid}`);
    const old = await openPostgresStore({ url, now, maxConnections: 2, migrations: postgresMigrations.slice(0, 4) });
    const { runId, claim } = await populate(old);
    await old.close();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const columnsOf = async (table: string) => (await client.query<{ column_name: string }>('SELECT column_name FROM information_schema.columns WHERE table_name = $1', [table])).rows.map((row) => row.column_name);
    try {
      await client.query("UPDATE workflow_runs SET owner = 'gone:1:x', lease_until = 5");
      await client.query('UPDATE workflow_tasks SET claim_until = 7');
      const store = await openPostgresStore({ url, now, maxConnections: 2 });
      try {
        // Migration 6 (claims on the rows) runs after it and brings a task's claim_until back, as a lease its runner renews.
        expect((await client.query('SELECT max(version) AS v FROM tools_runtime_schema_migrations')).rows[0].v).toBe(postgresMigrations.at(-1)!.version);
        expect(await columnsOf('workflow_runs')).not.toContain('lease_until');
        expect(await columnsOf('workflow_runs')).not.toContain('owner');
        expect((await client.query<{ n: string }>("SELECT count(*) AS n FROM workflow_tasks WHERE claim_until = 7")).rows[0]!.n).toBe('0');
        expect(await columnsOf('workflow_tasks')).toContain('claim_id');
        await expectKeptAndWorking(store, runId, claim);
      } finally {
        await store.close();
      }
    } finally {
      await client.end();
    }
  }, 60_000);
});
