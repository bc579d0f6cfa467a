import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type Database from 'better-sqlite3';
import { DummyDriver, Kysely, SqliteAdapter, SqliteIntrospector, SqliteQueryCompiler, type CompiledQuery } from 'kysely';
import { errorMessage } from '../../../../src/index.js';
import { loadOnFirstUse } from '../../../../src/load-on-first-use.js';
import { ControlPlaneError } from '../../domain/control-plane-error.js';
import type { ControlPlaneStore } from '../../domain/control-plane-store.js';
import { createSqlApprovalStore } from '../sql-approval-store.js';
import { createSqlJobStore } from '../sql-job-store.js';
import { createSqlScheduleStore } from '../sql-schedule-store.js';
import { createSqlTurnJournalStore } from '../sql-turn-journal-store.js';
import { createSqlWorkflowStore } from '../sql-workflow-store.js';
import type { Script, SqlResult, StoreContext } from '../store-context.js';
import type { StoreDatabase } from '../store-schema.js';
import { leaseTaskClaims } from './lease-claims.js';
import { migrations, type SqliteMigration } from './migrations.js';

/** The database file's name inside the data dir. */
// An optional peer of the package (a native addon): loaded when a store opens, so the controller's
// other commands, and a PostgreSQL controller, run without it.
const loadSqlite = loadOnFirstUse<typeof Database>('better-sqlite3');

/** better-sqlite3's constructor, or an error that says how to get it. */
function sqliteDatabase(): typeof Database {
  try {
    return loadSqlite();
  } catch (cause) {
    if ((cause as { code?: string }).code !== 'MODULE_NOT_FOUND') throw cause;
    throw new Error('better-sqlite3 is not installed: the SQLite store needs it (npm install better-sqlite3), or use PostgreSQL (--database postgres://...)', { cause });
  }
}

export const STORE_FILE_NAME = 'control-plane.sqlite';

/** Options of `openSqliteStore`. */
export interface OpenSqliteStoreOptions {
  /** The folder holding the database (created when absent). */
  dataDir: string;
  /** The clock (injected for tests). */
  now?: () => Date;
  /** New ids (injected for tests). */
  newId?: () => string;
  /** The migrations to apply (default: all of them; tests pass a prefix). */
  migrations?: readonly SqliteMigration[];
  /** How long a job's claim lasts when its runner names no lease (default 900 s). */
  claimExpirySeconds?: number;
}

/**
 * Opens (creating when needed) the embedded control-plane store: `<dataDir>/control-plane.sqlite`
 * through better-sqlite3, in WAL mode with foreign keys on and a busy timeout, migrated to the
 * newest version. Several processes may open the same file; SQLite serialises their writes.
 *
 * @throws ControlPlaneError `unavailable` when the folder or the file cannot be opened, or the file
 *   was written by a newer version of this program.
 */
export async function openSqliteStore(options: OpenSqliteStoreOptions): Promise<ControlPlaneStore> {
  const dataDir = resolve(options.dataDir);
  const location = join(dataDir, STORE_FILE_NAME);
  let db: Database.Database;
  try {
    // Private: whoever can write the store can act as the control plane.
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const Sqlite = sqliteDatabase();
    db = new Sqlite(location, { timeout: 10_000 });
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
  } catch (cause) {
    throw new ControlPlaneError('unavailable', `cannot open the control-plane store ${location}: ${errorMessage(cause)}`, { cause });
  }
  try {
    migrate(db, options.migrations ?? migrations);
  } catch (cause) {
    db.close();
    throw cause instanceof ControlPlaneError ? cause : new ControlPlaneError('unavailable', `cannot migrate ${location}: ${errorMessage(cause)}`, { cause });
  }
  const context = sqliteStoreContext(db, options.now ?? (() => new Date()), options.newId ?? (() => crypto.randomUUID()));
  let closed = false;
  return {
    location,
    workflows: createSqlWorkflowStore(context, leaseTaskClaims(context)),
    schedules: createSqlScheduleStore(context),
    jobs: createSqlJobStore(context, options.claimExpirySeconds ? { defaultLeaseMs: options.claimExpirySeconds * 1000 } : {}),
    approvals: createSqlApprovalStore(context),
    turns: createSqlTurnJournalStore(context),
    async close() {
      if (closed) return;
      closed = true;
      db.close();
    },
  };
}

/** Applies the migrations newer than `user_version`, each with its version bump in one transaction. */
function migrate(db: Database.Database, list: readonly SqliteMigration[]): void {
  list.forEach((migration, index) => {
    if (migration.version !== index + 1) throw new ControlPlaneError('internal', `migration "${migration.name}" has version ${migration.version}; versions must be 1, 2, 3... in list order`);
  });
  const current = db.pragma('user_version', { simple: true }) as number;
  const newest = list.at(-1)?.version ?? 0;
  if (current > newest) {
    throw new ControlPlaneError('unavailable', `the store is at schema version ${current}, newer than this program's ${newest}; use a newer controller`);
  }
  for (const migration of list) {
    if (migration.version <= current) continue;
    db.transaction(() => {
      db.exec(migration.sql);
      db.pragma(`user_version = ${migration.version}`);
    }).immediate();
  }
}

/** Statements kept prepared at most; past it the cache starts again (only lists of new lengths add any). */
const STATEMENT_CACHE = 500;

/**
 * The store's scripts on one better-sqlite3 connection: each runs synchronously inside one
 * transaction (BEGIN IMMEDIATE for writes, so a check and the write it guards see no other writer),
 * every step on a prepared statement cached by its SQL. Kysely only builds and compiles here; its
 * executor (async, one promise per query) is never used.
 */
function sqliteStoreContext(db: Database.Database, now: () => Date, newId: () => string): StoreContext {
  const builder = new Kysely<StoreDatabase>({
    dialect: {
      createAdapter: () => new SqliteAdapter(),
      createDriver: () => new DummyDriver(),
      createIntrospector: (kysely) => new SqliteIntrospector(kysely),
      createQueryCompiler: () => new SqliteQueryCompiler(),
    },
  });
  const statements = new Map<string, Database.Statement>();
  const step = (compiled: CompiledQuery): SqlResult<unknown> => {
    let statement = statements.get(compiled.sql);
    if (!statement) {
      if (statements.size >= STATEMENT_CACHE) statements.clear();
      statement = db.prepare(compiled.sql);
      statements.set(compiled.sql, statement);
    }
    let parameters = compiled.parameters;
    // better-sqlite3 binds no booleans: SQLite keeps them as 0 and 1 (copied only when there is one).
    if (parameters.some((value) => typeof value === 'boolean')) parameters = parameters.map((value) => (typeof value === 'boolean' ? Number(value) : value));
    if (statement.reader) {
      const rows = statement.all(...parameters);
      return { rows, changes: rows.length };
    }
    return { rows: [], changes: statement.run(...parameters).changes };
  };
  const drive = (script: () => Script<unknown>): unknown => {
    const steps = script();
    let next = steps.next();
    while (!next.done) {
      next = steps.next(step(next.value));
    }
    return next.value;
  };
  const transaction = db.transaction(drive);
  return {
    dialect: 'sqlite',
    db: builder,
    transaction: async <T>(script: () => Script<T>) => transaction.immediate(script) as T,
    // A deferred transaction: one snapshot, whatever another process writes meanwhile.
    read: async <T>(script: () => Script<T>) => transaction.deferred(script) as T,
    now,
    newId,
  };
}
