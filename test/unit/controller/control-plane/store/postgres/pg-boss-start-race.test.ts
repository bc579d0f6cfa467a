import pg from 'pg';
import PgBoss from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgBossClaims } from '../../../../../../controller/control-plane/store/postgres/pg-boss-claims.js';
import { requirePostgres, startPostgresCluster, type PostgresCluster } from '../../../../../fixtures/postgres-cluster.js';

// Issue 23 item 5: three controllers started at the same moment on a fresh database used to fail
// about one start in nine with "deadlock detected" (two pgboss.create_queue calls blocking each
// other). Each round below starts three PgBossClaims at once on a fresh database; all must start.
describe('PgBossClaims.start: controllers started together on a fresh database', requirePostgres('the pg-boss start race suite'), () => {
  let cluster: PostgresCluster;
  let databases = 0;
  beforeAll(async () => {
    cluster = await startPostgresCluster();
  }, 90_000);
  afterAll(() => cluster?.stop(), 60_000);

  const fresh = () => cluster.createDatabase(`race_${process.pid}_${++databases}`);
  const startThree = async (url: string) => {
    const started = await Promise.allSettled([0, 1, 2].map(() => PgBossClaims.start({ url })));
    await Promise.all(started.map((one) => (one.status === 'fulfilled' ? one.value.stop() : undefined)));
    return started.filter((one): one is PromiseRejectedResult => one.status === 'rejected').map((one) => String(one.reason));
  };

  it('starts three at once on a fresh database 50 times out of 50', async () => {
    const failures: string[] = [];
    for (let round = 0; round < 50; round++) {
      for (const reason of await startThree(await fresh())) failures.push(`round ${round + 1}: ${reason}`);
    }
    expect(failures).toEqual([]);
  }, 600_000);

  it('starts three at once while the queue table is locked, once the lock is released', async () => {
    const url = await fresh();
    // pg-boss's schema installed (no queues yet), as after a controller that died half-way through its first start.
    const boss = new PgBoss({ connectionString: url, max: 1, schedule: false, supervise: false });
    await boss.start();
    await boss.stop({ graceful: false, wait: true });
    const locker = new pg.Client({ connectionString: url });
    const watcher = new pg.Client({ connectionString: url });
    await locker.connect();
    await watcher.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE pgboss.queue IN ACCESS EXCLUSIVE MODE');
      const starting = startThree(url);
      // Every start is now queued behind the lock: wait until all three wait on it, then let them go together.
      const until = Date.now() + 30_000;
      for (;;) {
        // (Read on another connection: inside the locker's transaction pg_stat_activity is one cached snapshot.)
        const { rows } = await watcher.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()");
        if (rows[0]!.n >= 3) break;
        if (Date.now() > until) throw new Error(`only ${rows[0]!.n} of the three starts waited on the locked queue table within 30 s`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await locker.query('COMMIT');
      expect(await starting).toEqual([]);
    } finally {
      await locker.end();
      await watcher.end();
    }
  }, 120_000);
});
