// How the store's logic is written once for both databases. Each operation is a script: a generator
// that yields the queries it needs (built with Kysely, compiled for the store's dialect) and gets each
// one's result back. A runner per database drives it inside one transaction:
// - SQLite runs it synchronously on better-sqlite3, inside `BEGIN IMMEDIATE`: no other query of the
//   process can slip in between two steps, so no lock or queue is needed, and each step is a cached
//   prepared statement (sqlite/sqlite-runner.ts);
// - PostgreSQL awaits each step on a transaction of its pool, where row locks (`lockRun`) and
//   advisory locks (`lockKey`) keep controllers apart (postgres/open-postgres-store.ts).
// An async store written against Kysely's executor made SQLite's claim 2-3x slower than the store
// it replaced (a per-step promise, a mutex so lone queries could not run inside a transaction,
// Kysely's executor): the `store:` rows of `npm run bench -- workflows` compare the two.
import { sql, type CompiledQuery, type Compilable, type Kysely, type RawBuilder } from 'kysely';
import type { StoreDatabase } from './store-schema.js';

/** What a statement gives back to a script: its rows (RETURNING's included) and how many rows it changed. */
export interface SqlResult<R> {
  rows: R[];
  changes: number;
}

/** A script: yields compiled queries and returns the operation's result. */
export type Script<T> = Generator<CompiledQuery, T, unknown>;

/** What every part of the store is made with. */
export interface StoreContext {
  readonly dialect: 'sqlite' | 'postgres';
  /** Builds and compiles queries for the dialect; scripts never run a query through it. */
  readonly db: Kysely<StoreDatabase>;
  /** Runs `script` as one transaction that may write (IMMEDIATE on SQLite). */
  transaction<T>(script: () => Script<T>): Promise<T>;
  /** Runs a script that only reads: one snapshot on SQLite, plain queries on PostgreSQL. */
  read<T>(script: () => Script<T>): Promise<T>;
  now(): Date;
  newId(): string;
}

const compiled = <R>(statement: CompiledQuery<R> | Compilable<R>): CompiledQuery<R> => ('compile' in statement ? statement.compile() : statement);

// Each helper yields the query itself (no inner generator): a claim or a commit takes about ten
// steps, and a generator per step was a fifth of the store's own time on SQLite.

/** The rows of one query. */
export function* rows<R>(statement: CompiledQuery<R> | Compilable<R>): Script<R[]> {
  return ((yield compiled(statement)) as SqlResult<R>).rows;
}

/** The first row of one query. */
export function* first<R>(statement: CompiledQuery<R> | Compilable<R>): Script<R | undefined> {
  return ((yield compiled(statement)) as SqlResult<R>).rows[0];
}

/** How many rows one statement changed. */
export function* changes(statement: CompiledQuery | Compilable<unknown>): Script<number> {
  return ((yield compiled(statement)) as SqlResult<unknown>).changes;
}

/**
 * Serialises the bookkeeping of `key` (an agent's jobs, its schedules, its runs) across controllers
 * for the rest of the transaction: a transaction-scoped advisory lock on PostgreSQL; nothing on
 * SQLite, whose transactions began IMMEDIATE and so hold the database's one write lock.
 */
export function* lockKey(context: StoreContext, key: string): Script<void> {
  if (context.dialect === 'postgres') yield sql`SELECT pg_advisory_xact_lock(hashtext(${key}))`.compile(context.db);
}

/** `SELECT ... FOR UPDATE` on PostgreSQL; the query as it is on SQLite (see `lockKey`). */
export function forUpdate<Q extends { forUpdate(): Q }>(context: StoreContext, select: Q): Q {
  return context.dialect === 'postgres' ? select.forUpdate() : select;
}

/**
 * `SELECT ... FOR UPDATE SKIP LOCKED` on PostgreSQL: a row another controller's claim transaction
 * holds is passed over, not waited for. The query as it is on SQLite (see `lockKey`).
 */
export function skipLocked<Q extends { forUpdate(): Q; skipLocked(): Q }>(context: StoreContext, select: Q): Q {
  return context.dialect === 'postgres' ? select.forUpdate().skipLocked() : select;
}

/** A list of ids as one parameter, so a statement is prepared once whatever the list's length: a text[] on PostgreSQL, JSON text on SQLite (see `inList`). */
export function listParameter(context: StoreContext, values: readonly string[]): string | string[] {
  return context.dialect === 'postgres' ? [...values] : JSON.stringify(values);
}

/** `column` is one of the list bound as `parameter` (made by `listParameter`): `= ANY($n::text[])` on PostgreSQL, `IN (SELECT value FROM json_each(?))` on SQLite. */
export function inList(context: StoreContext, column: string, parameter: unknown): RawBuilder<boolean> {
  return context.dialect === 'postgres' ? sql<boolean>`${sql.ref(column)} = ANY(${parameter}::text[])` : sql<boolean>`${sql.ref(column)} IN (SELECT value FROM json_each(${parameter}))`;
}

/**
 * The order rows of `workflow_runs` and `workflow_attempts` were inserted in: `seq` on PostgreSQL;
 * on SQLite, whose tables of schema 1 have no `seq`, the rowid (the same order).
 */
export function insertionOrder(context: StoreContext): RawBuilder<number> {
  return context.dialect === 'postgres' ? sql<number>`seq` : sql<number>`rowid`;
}

const SLOT = '\u0000store-parameter:';

/**
 * A query built and compiled once, then bound to new values on each call: `build` gets a stand-in
 * for each named parameter (a scalar, never a list: `in` takes lists, so a list travels as one JSON
 * parameter or the query is built per call). Building and compiling a Kysely query costs about
 * twice what running it costs on SQLite; the claim and commit paths use this.
 */
export function prepare<P extends object, R>(build: (parameters: P) => Compilable<R>): (parameters: P) => CompiledQuery<R> {
  let template: { compiled: CompiledQuery<R>; slots: Array<keyof P | undefined> } | undefined;
  return (values) => {
    if (!template) {
      const names = new Proxy({}, { get: (_, name) => `${SLOT}${String(name)}` }) as P;
      const built = build(names).compile();
      const slots = built.parameters.map((value) => (typeof value === 'string' && value.startsWith(SLOT) ? (value.slice(SLOT.length) as keyof P) : undefined));
      template = { compiled: built, slots };
    }
    const { compiled: base, slots } = template;
    const parameters = base.parameters.slice();
    for (let index = 0; index < slots.length; index++) {
      const slot = slots[index];
      if (slot !== undefined) parameters[index] = values[slot];
    }
    return { query: base.query, queryId: base.queryId, sql: base.sql, parameters };
  };
}
