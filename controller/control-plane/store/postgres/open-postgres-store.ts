import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { errorMessage, silentLogger, type Logger } from '../../../../src/index.js';
import type { PostgresStoreContext } from '../store-context.js';
import { ControlPlaneError } from '../../control-plane-error.js';
import type { ControlPlaneStore } from '../control-plane-store.js';
import { postgresMigrations, type PostgresMigration } from './postgres-migrations.js';
import type { PostgresDatabase } from '../store-schema.js';
import { createPostgresJobStore } from '../sql-job-store.js';
import { createPostgresScheduleStore } from '../sql-schedule-store.js';
import { createPostgresWorkflowStore } from '../sql-workflow-store.js';
import { PgBossClaims } from './pg-boss-claims.js';
import { createPostgresApprovalStore } from '../sql-approval-store.js';
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
   * How long a controller's claim on a job turn lives before pg-boss expires it and another
   * controller may run the job (default 900 s: longer than any turn should take).
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
  const db = new Kysely<PostgresDatabase>({ dialect: new PostgresDialect({ pool }) });
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
  let claims: PgBossClaims;
  try {
    claims = await PgBossClaims.start({
      url: options.url,
      onError: (error) => health.reportError('pg-boss', error),
      ...(options.claimExpirySeconds ? { expireInSeconds: options.claimExpirySeconds } : {}),
    });
  } catch (cause) {
    health.close();
    await db.destroy().catch(() => undefined);
    throw new ControlPlaneError('unavailable', `cannot start pg-boss on ${location}: ${errorMessage(cause)}`, { cause });
  }
  const context: PostgresStoreContext = {
    db,
    now: options.now ?? (() => new Date()),
    newId: options.newId ?? (() => crypto.randomUUID()),
  };
  const jobs = createPostgresJobStore(context, claims);
  let closed = false;
  return {
    location,
    workflows: createPostgresWorkflowStore(context, claims),
    schedules: createPostgresScheduleStore(context, claims),
    jobs,
    approvals: createPostgresApprovalStore(context),
    watchHealth: (listener) => health.watch(listener),
    async close() {
      if (closed) return;
      closed = true;
      health.close();
      // Claims still held (turns a shutdown interrupted) go back to pg-boss for another controller.
      await jobs.handBackAll().catch(() => undefined);
      await claims.stop().catch(() => undefined);
      await db.destroy();
    },
  };
}

/** Applies the migrations newer than the database's version, all in one transaction under the migration lock. */
async function migrate(db: Kysely<PostgresDatabase>, list: readonly PostgresMigration[]): Promise<void> {
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
