import pg from 'pg';
import { beforeEach, describe, expect, it } from 'vitest';
import type { ControlPlaneStore } from '../../../../../../controller/control-plane/domain/control-plane-store.js';
import { postgresBackend, useStoreSuite } from '../../../../../fixtures/store-backends.js';

const schema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] };
const T0 = Date.parse('2026-12-01T18:00:00.000Z');

// Issue 23 item 6: a claim was a pg-boss job fetched before the transaction that recorded it, and
// when that transaction failed the job stayed claimed by nobody for the whole claim expiry. Claims
// are rows now (issue 34): the claim and its recording are one transaction, so a failure leaves the
// work claimable at once. A trigger makes the recording fail once, as a lost connection or a
// statement timeout would.
const backend = postgresBackend('the failed-claim hand-back suite');
describe('PostgreSQL store: a claim whose recording transaction fails leaves the work claimable at once', backend.suiteOptions, () => {
  const suite = useStoreSuite(backend, () => new Date(T0));
  let store: ControlPlaneStore;
  let db: pg.Client;
  beforeEach(async () => {
    store = suite.store;
    db = new pg.Client({ connectionString: suite.location.url });
    await db.connect();
    return () => db.end();
  });
  const failOnce = async (table: string, when: 'INSERT' | 'UPDATE') => {
    await db.query("CREATE FUNCTION injected_failure() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$");
    await db.query(`CREATE TRIGGER injected BEFORE ${when} ON ${table} FOR EACH ROW EXECUTE FUNCTION injected_failure()`);
    return async () => {
      await db.query(`DROP TRIGGER injected ON ${table}`);
      await db.query('DROP FUNCTION injected_failure()');
    };
  };

  it('a workflow task attempt', async () => {
    const run = await store.workflows.createRun({ agentId: 'agent-1', maxRunningPerAgent: 5, definition: { name: 'one', maxParallel: 1, tasks: [{ id: 'a', prompt: 'p', resultSchema: schema, dependsOn: [], maxAttempts: 2 }] } });
    const restore = await failOnce('workflow_attempts', 'INSERT');
    await expect(store.workflows.claimTask({ owner: 'r1', leaseMs: 60_000, agentIds: ['agent-1'] })).rejects.toThrow(/injected failure/);
    await restore();
    expect(await store.workflows.claimTask({ owner: 'r1', leaseMs: 60_000, agentIds: ['agent-1'] })).toMatchObject({ runId: run.runId, taskId: 'a', attempt: 1 });
  });

  it('a background job turn', async () => {
    await store.jobs.insert({ jobId: 'j1', agentId: 'agent-1', prompt: 'p', canSpawnJobs: false, createdAt: T0 }, { maxQueuedPerAgent: 5 });
    const restore = await failOnce('jobs', 'UPDATE');
    const claim = () => store.jobs.claimNext({ agentIds: ['agent-1'], maxRunningPerAgent: 1, now: T0, owner: 'r1' });
    await expect(claim()).rejects.toThrow(/injected failure/);
    await restore();
    expect(await claim()).toMatchObject({ jobId: 'j1', status: 'running', attempts: 1 });
  });
});
