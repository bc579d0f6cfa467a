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
import { ControlPlaneError } from '../domain/control-plane-error.js';
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
 * A query built and compiled once, then bound to new values on each call. Building and compiling a
 * Kysely query costs about twice what running it costs on SQLite; the claim and commit paths use
 * this.
 *
 * `build` runs once, with a stand-in for each named parameter (a string that marks where the value
 * goes), never with the values. So the rule: **a parameter may only be placed in the query as a
 * value** (`where('c', '=', p.x)`, `set({ c: p.x })`, `${p.x}` inside `sql`), one scalar each (a
 * list travels as one parameter: see `listParameter`). A builder must not look at a parameter's
 * value: branch on it (`p.limit > 0 ? ...`), put it in the SQL text (`sql.raw`, `sql.lit`,
 * `sql.ref`), or make a new value of it (`` `%${p.name}%` ``, `p.n + 1`): the query would be built
 * for the stand-in, not for the value, and go wrong silently. A query whose shape depends on a value
 * is built per call, or prepared once per shape (as the ready query is, per limit).
 *
 * What can be checked is checked, once, when the query is first built: a stand-in in the SQL text,
 * a stand-in inside a larger value, or a parameter read but not placed as a value (it was looked at,
 * not bound) throws; so does binding without a value for a parameter the query uses.
 * `store-context.test.ts` plants each mistake.
 *
 * @throws ControlPlaneError `internal` when `build` breaks the rule above, or a call lacks a parameter.
 */
export function prepare<P extends object, R>(build: (parameters: P) => Compilable<R>): (parameters: P) => CompiledQuery<R> {
  let template: { compiled: CompiledQuery<R>; slots: Array<keyof P | undefined> } | undefined;
  return (values) => {
    if (!template) template = compileTemplate(build);
    const { compiled: base, slots } = template;
    const parameters = base.parameters.slice();
    for (let index = 0; index < slots.length; index++) {
      const slot = slots[index];
      if (slot === undefined) continue;
      if (!(slot in values)) throw new ControlPlaneError('internal', `prepared query bound without its parameter "${String(slot)}": ${base.sql}`);
      parameters[index] = values[slot];
    }
    return { query: base.query, queryId: base.queryId, sql: base.sql, parameters };
  };
}

function compileTemplate<P extends object, R>(build: (parameters: P) => Compilable<R>): { compiled: CompiledQuery<R>; slots: Array<keyof P | undefined> } {
  const read = new Set<string>();
  const names = new Proxy(
    {},
    {
      get: (_, name) => {
        read.add(String(name));
        return `${SLOT}${String(name)}`;
      },
    },
  ) as P;
  const built = build(names).compile();
  const misuse = (what: string) => new ControlPlaneError('internal', `prepared query misuses a parameter: ${what} (a parameter may only be placed as a value; see prepare()): ${built.sql.replaceAll(SLOT, ':')}`);
  if (built.sql.includes(SLOT)) throw misuse('a parameter went into the SQL text');
  const slots = built.parameters.map((value) => {
    if (typeof value !== 'string' || !value.includes(SLOT)) return undefined;
    if (!value.startsWith(SLOT) || value.indexOf(SLOT, 1) !== -1) throw misuse(`a parameter was made into a new value (${JSON.stringify(value.replaceAll(SLOT, ':'))})`);
    return value.slice(SLOT.length) as keyof P;
  });
  const placed = new Set(slots.filter((slot) => slot !== undefined).map(String));
  const unplaced = [...read].filter((name) => !placed.has(name));
  if (unplaced.length > 0) throw misuse(`"${unplaced.join('", "')}" was read while building but not placed as a value (a builder must not branch on a parameter)`);
  return { compiled: built, slots };
}
