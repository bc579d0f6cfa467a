/**
 * What an idle fleet costs its database: two real `serve` controllers on one throwaway PostgreSQL
 * database, `agents` agent ids over one sidecar, measured as the transactions the database commits
 * per second (`pg_stat_database`: every claim poll is a transaction or a lone statement) and the
 * tuples its statements read per second. Once with no work ever queued (idle), once after `worked`
 * of the agents each had a job that finished (busy before, idle now: pg-boss kept a queue table per
 * such agent and fetched from each at every poll).
 */
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { controlPlaneClient } from '../../test/fixtures/control-plane-client.js';
import type { PostgresCluster } from '../../test/fixtures/postgres-cluster.js';
import { startServe } from '../../test/fixtures/start-serve.js';
import { startSidecar, type StartedSidecar } from '../../test/fixtures/start-sidecar.js';

/** One measurement of a fleet's database load. */
export interface IdleCost {
  agents: number;
  /** Transactions committed per second with no work ever queued. */
  idleTps: number;
  /** The same once `worked` agents each had a job that finished. */
  afterWorkTps: number;
  /** While those jobs were queued and run (busy): transactions per job, from the first submission to the last job's end. */
  busyTransactionsPerJob: number;
  worked: number;
  /** Tuples read per second (idle, after work): the work behind those transactions. */
  idleTuplesPerSecond: number;
  afterWorkTuplesPerSecond: number;
}

const sampleWorkspace = join(import.meta.dirname, '..', '..', 'controller', 'sample-workspace');

async function transactions(db: pg.Client): Promise<number> {
  await db.query('SELECT pg_stat_clear_snapshot()');
  const { rows } = await db.query<{ x: string }>('SELECT xact_commit + xact_rollback AS x FROM pg_stat_database WHERE datname = current_database()');
  return Number(rows[0]!.x);
}

async function sample(db: pg.Client, seconds: number): Promise<{ tps: number; tuples: number }> {
  const read = async () => {
    const { rows } = await db.query<{ x: string; t: string }>('SELECT xact_commit + xact_rollback AS x, tup_returned + tup_fetched AS t FROM pg_stat_database WHERE datname = current_database()');
    return { x: Number(rows[0]!.x), t: Number(rows[0]!.t) };
  };
  // The statistics are flushed by each backend now and then: settle, then read over a window.
  await db.query('SELECT pg_stat_clear_snapshot()');
  const before = await read();
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  await db.query('SELECT pg_stat_clear_snapshot()');
  const after = await read();
  // This client's own two reads (and clear calls) are not the fleet's.
  return { tps: (after.x - before.x - 3) / seconds, tuples: (after.t - before.t) / seconds };
}

/** Measures one fleet size; every process it starts is stopped before it returns. */
export async function measureIdleCost(options: { cluster: PostgresCluster; agents: number; worked: number; seconds?: number; log?: (line: string) => void }): Promise<IdleCost> {
  const log = options.log ?? (() => undefined);
  const seconds = options.seconds ?? 10;
  const dir = mkdtempSync(join(tmpdir(), 'fleet-idle-'));
  const started: StartedSidecar[] = [];
  let db: pg.Client | undefined;
  try {
    const url = await options.cluster.createDatabase(`idle_${process.pid}_${options.agents}_${Date.now() % 1_000_000}`);
    const workspace = join(dir, 'workspace');
    cpSync(sampleWorkspace, workspace, { recursive: true });
    const sidecar = await startSidecar({ args: ['--listen', '127.0.0.1:0', '--workspace', workspace, '--state-dir', join(dir, 'state')], timeoutMs: 60_000 });
    started.push(sidecar);
    const agentIds = Array.from({ length: options.agents }, (_, i) => `agent-${String(i).padStart(5, '0')}`);
    const agentsFile = join(dir, 'agents.json');
    writeFileSync(agentsFile, JSON.stringify(Object.fromEntries(agentIds.map((id) => [id, { address: sidecar.address }]))));
    const tokenFile = join(dir, 'controller.token');
    writeFileSync(tokenFile, 'idle-token\n', { mode: 0o600 });
    const serves: StartedSidecar[] = [];
    for (let i = 0; i < 2; i++) {
      const serve = await startServe({
        args: ['--listen', '127.0.0.1:0', '--token-file', tokenFile, '--database', url, '--agents', agentsFile, '--approve', 'never', '--embedded'],
        env: { OPENAI_API_KEY: '', OPENAI_BASE_URL: '', DATABASE_URL: '' },
        timeoutMs: 120_000,
      });
      serves.push(serve);
      started.push(serve);
    }
    db = new pg.Client({ connectionString: url });
    await db.connect();
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const idle = await sample(db, seconds);
    log(`idle cost: ${options.agents} agents, idle: ${idle.tps.toFixed(1)} transactions/s, ${Math.round(idle.tuples)} tuples/s`);
    const client = controlPlaneClient(serves[0]!.address, 'idle-token');
    const worked = agentIds.slice(0, options.worked);
    const before = await transactions(db);
    for (let i = 0; i < worked.length; i += 20) await Promise.all(worked.slice(i, i + 20).map((agentId) => client.startJob({ agentId, prompt: `one job of ${agentId}` })));
    client.close();
    for (;;) {
      const { rows } = await db.query<{ n: string }>("SELECT count(*) AS n FROM jobs WHERE status IN ('succeeded', 'failed', 'cancelled')");
      if (Number(rows[0]!.n) >= worked.length) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const busyTransactionsPerJob = ((await transactions(db)) - before) / worked.length;
    log(`idle cost: ${options.agents} agents, busy: ${busyTransactionsPerJob.toFixed(1)} transactions per job (StartJob, claims, renewals, the turn's own, polls meanwhile)`);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const after = await sample(db, seconds);
    log(`idle cost: ${options.agents} agents, after ${worked.length} had a job: ${after.tps.toFixed(1)} transactions/s, ${Math.round(after.tuples)} tuples/s`);
    return { agents: options.agents, idleTps: idle.tps, afterWorkTps: after.tps, busyTransactionsPerJob, worked: worked.length, idleTuplesPerSecond: idle.tuples, afterWorkTuplesPerSecond: after.tuples };
  } finally {
    await db?.end().catch(() => undefined);
    for (const process of started.reverse()) await process.stop('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}
