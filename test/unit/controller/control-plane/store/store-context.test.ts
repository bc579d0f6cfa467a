// Issue 36: prepare() fills parameters by swapping stand-in strings, so a builder that looks at a
// parameter's value goes wrong silently. The rule is written on prepare(); this plants each mistake
// the first build can see and checks it is refused, and that a query keeping the rule binds right.
import { DummyDriver, Kysely, SqliteAdapter, SqliteIntrospector, SqliteQueryCompiler, sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { prepare } from '../../../../../controller/control-plane/store/store-context.js';
import type { StoreDatabase } from '../../../../../controller/control-plane/store/store-schema.js';

const db = new Kysely<StoreDatabase>({
  dialect: {
    createAdapter: () => new SqliteAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (kysely) => new SqliteIntrospector(kysely),
    createQueryCompiler: () => new SqliteQueryCompiler(),
  },
});

describe('prepare()', () => {
  it('builds once and binds each call its own values, wherever a parameter is placed', () => {
    let builds = 0;
    const query = prepare((p: { agentId: string; limit: number; error: string }) => {
      builds++;
      return db.updateTable('jobs').set({ error: p.error }).where('agent_id', '=', p.agentId).where(sql<boolean>`seq < ${p.limit}`);
    });
    expect(query({ agentId: 'a', limit: 3, error: 'x' }).parameters).toEqual(['x', 'a', 3]);
    expect(query({ agentId: 'b', limit: 7, error: 'y' }).parameters).toEqual(['y', 'b', 7]);
    expect(builds).toBe(1);
  });

  it('refuses a builder that branches on a parameter', () => {
    const query = prepare((p: { agentId: string | null }) => (p.agentId === null ? db.selectFrom('jobs').selectAll() : db.selectFrom('jobs').selectAll().where('job_id', '=', 'fixed')));
    expect(() => query({ agentId: null })).toThrow(/"agentId" was read while building but not placed as a value/);
  });

  it('refuses a parameter put into the SQL text', () => {
    const query = prepare((p: { column: string }) => db.selectFrom('jobs').select(sql.ref(p.column).as('v')));
    expect(() => query({ column: 'status' })).toThrow(/a parameter went into the SQL text/);
  });

  it('refuses a parameter made into a new value', () => {
    const query = prepare((p: { text: string }) => db.selectFrom('jobs').selectAll().where('prompt', 'like', `%${p.text}%`));
    expect(() => query({ text: 'x' })).toThrow(/a parameter was made into a new value \("%:text%"\)/);
  });

  it('refuses a call without a value for a parameter the query uses', () => {
    const query = prepare((p: { jobId: string }) => db.selectFrom('jobs').selectAll().where('job_id', '=', p.jobId));
    expect(() => query({} as { jobId: string })).toThrow(/bound without its parameter "jobId"/);
  });
});
