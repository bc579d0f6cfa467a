import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { errorMessage, silentLogger, type Logger } from '../../../../src/index.js';
import { ControlPlaneError } from '../../domain/control-plane-error.js';
import type { ControlPlaneStore } from '../../domain/control-plane-store.js';
import { createSqlApprovalStore } from '../sql-approval-store.js';
import { createSqlJobStore } from '../sql-job-store.js';
import { createSqlScheduleStore } from '../sql-schedule-store.js';
import { createSqlTurnJournalStore } from '../sql-turn-journal-store.js';
import { createSqlWorkflowStore } from '../sql-workflow-store.js';
import type { Script, StoreContext } from '../store-context.js';
import type { StoreDatabase } from '../store-schema.js';
import { rowTaskClaims } from './row-task-claims.js';
import { postgresMigrations, type PostgresMigration } from './postgres-migrations.js';
import { PostgresHealth } from './postgres-health.js';

/** Options of `openPostgresStore`. */
export interface OpenPostgresStoreOptions {
  /** `postgres://user:password@host:port/database` (or `postgresql://`). */
  url: string;
  /** The clock (injected for tests). */
  now?: () => Date;
  /** New ids (injected for tests). */
  newId?: () => string;
  /** The migrations to apply (default: all of them; tests pass their own). */
  migrations?: readonly PostgresMigration[];
  /** Connections in the pool (default 10). */
  maxConnections?: number;
  /** How long opening may wait for the server (default 15 s). */
  connectTimeoutMs?: number;
  /**
   * How long a job's claim lasts unrenewed when its runner names no lease, before another
   * controller may run the job (default 900 s). Runners renew their claims while the turn runs.
   */
  claimExpirySeconds?: number;
  /** Where connection errors and a lost or regained database are logged (default: nowhere). */
  logger?: Logger;
  /** How often the database is probed for the health watchers (default 5 s). */
  healthIntervalMs?: number;
}

/** Whether `value` names a PostgreSQL database rather than a folder. */
export function isPostgresUrl(value: string): boolean {
  return /^postgres(ql)?:\/\//i.test(value);
}

/** The URL with its password replaced, for logs. */
export function redactDatabaseUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'postgres://(unparsable URL)';
  }
}

/** The lock every controller takes while migrating, so that controllers started together migrate once. */
const MIGRATION_LOCK = 0x746f6f6c; // 'tool'

/**
 * Opens the control-plane store on a PostgreSQL database shared by several controllers: a pg pool
 * under Kysely, migrated to the newest version (the same schema versions as the SQLite store). The
 * SQL is written once through Kysely's query builder; each state change is one transaction whose row
 * locks (and, for per-agent limits, an advisory lock on the agent) keep concurrent controllers apart.
 *
 * @throws ControlPlaneError `unavailable` when the server cannot be reached, the URL is not a
 *   PostgreSQL one, or the database was migrated by a newer version of this program.
 */
export async function openPostgresStore(options: OpenPostgresStoreOptions): Promise<ControlPlaneStore> {
  const location = redactDatabaseUrl(options.url);
  if (!isPostgresUrl(options.url)) throw new ControlPlaneError('unavailable', `not a PostgreSQL URL: ${location} (expected postgres://user@host:port/database)`);
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.maxConnections ?? 10,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 15_000,
    // BIGINT columns hold epoch milliseconds and counts, well inside a double's exact range.
    types: { getTypeParser: (oid: number, format?: 'text' | 'binary') => (oid === 20 ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format)) } as pg.CustomTypesConfig,
  });
  const db = new Kysely<StoreDatabase>({ dialect: new PostgresDialect({ pool }) });
  const health = new PostgresHealth({ db, location, logger: options.logger ?? silentLogger, ...(options.healthIntervalMs ? { intervalMs: options.healthIntervalMs } : {}) });
  // An idle client losing its server must not crash the process: logged, and the probe tells the health watchers.
  pool.on('error', (error) => health.reportError('pool', error));
  // A client checked out of the pool has no error listener of the pool's: a connection lost during
  // a query would rethrow as an uncaught exception and end the controller. The query in flight
  // already fails with that error (its caller sees it), so this listener only keeps the process up.
  pool.on('connect', (client) => client.on('error', () => undefined));
  try {
    await migrate(db, options.migrations ?? postgresMigrations);
  } catch (cause) {
    health.close();
    await db.destroy().catch(() => undefined);
    throw cause instanceof ControlPlaneError ? cause : new ControlPlaneError('unavailable', `cannot open the control-plane store ${location}: ${errorMessage(cause)}`, { cause });
  }
  const context = postgresStoreContext(db, options.now ?? (() => new Date()), options.newId ?? (() => crypto.randomUUID()));
  let closed = false;
  return {
    location,
    workflows: createSqlWorkflowStore(context, rowTaskClaims(context)),
    schedules: createSqlScheduleStore(context),
    jobs: createSqlJobStore(context, options.claimExpirySeconds ? { defaultLeaseMs: options.claimExpirySeconds * 1000 } : {}),
    approvals: createSqlApprovalStore(context),
    turns: createSqlTurnJournalStore(context),
    watchHealth: (listener) => health.watch(listener),
    async close() {
      if (closed) return;
      closed = true;
      health.close();
      await db.destroy();
    },
  };
}

/** Applies the migrations newer than the database's version, all in one transaction under the migration lock. */
async function migrate(db: Kysely<StoreDatabase>, list: readonly PostgresMigration[]): Promise<void> {
  list.forEach((migration, index) => {
    if (migration.version !== index + 1) throw new ControlPlaneError('internal', `migration "${migration.name}" has version ${migration.version}; versions must be 1, 2, 3... in list order`);
  });
  await db.transaction().execute(async (trx) => {
    await sql`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`.execute(trx);
    await sql`CREATE TABLE IF NOT EXISTS tools_runtime_schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`.execute(trx);
    const row = await trx.selectFrom('tools_runtime_schema_migrations').select((eb) => eb.fn.max('version').as('version')).executeTakeFirst();
    const current = Number(row?.version ?? 0);
    const newest = list.at(-1)?.version ?? 0;
    if (current > newest) {
      throw new ControlPlaneError('unavailable', `the store is at schema version ${current}, newer than this program's ${newest}; use a newer controller`);
    }
    for (const migration of list) {
      if (migration.version <= current) continue;
      await sql.raw(migration.sql).execute(trx);
      await trx.insertInto('tools_runtime_schema_migrations').values({ version: migration.version, name: migration.name, applied_at: new Date().toISOString() }).execute();
    }
  });
}

/**
 * The store's scripts on the pool: each step awaited on one transaction's connection (a reading
 * script on whichever connection the pool gives each query).
 */
function postgresStoreContext(db: Kysely<StoreDatabase>, now: () => Date, newId: () => string): StoreContext {
  const drive = async <T>(connection: Kysely<StoreDatabase>, script: () => Script<T>): Promise<T> => {
    const steps = script();
    let next = steps.next();
    while (!next.done) {
      const result = await connection.executeQuery(next.value);
      next = steps.next({ rows: result.rows, changes: result.numAffectedRows !== undefined ? Number(result.numAffectedRows) : result.rows.length });
    }
    return next.value;
  };
  return {
    dialect: 'postgres',
    db,
    transaction: (script) => db.transaction().execute((trx) => drive(trx, script)),
    read: (script) => drive(db, script),
    now,
    newId,
  };
}
