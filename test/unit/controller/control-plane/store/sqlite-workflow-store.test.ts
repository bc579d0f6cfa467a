import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ControlPlaneStore } from '../../../../../controller/control-plane/domain/control-plane-store.js';
import { openSqliteStore, STORE_FILE_NAME } from '../../../../../controller/control-plane/store/sqlite/open-sqlite-store.js';
import { migrations } from '../../../../../controller/control-plane/store/sqlite/migrations.js';
import type { WorkflowDefinition } from '../../../../../controller/control-plane/domain/workflows/workflow-store.js';

const schema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] };
const definition: WorkflowDefinition = {
  name: 'two',
  maxParallel: 2,
  tasks: [
    { id: 'a', prompt: 'first', resultSchema: schema, dependsOn: [], maxAttempts: 2 },
    { id: 'b', prompt: 'second', resultSchema: schema, dependsOn: ['a'], maxAttempts: 2 },
  ],
};

describe('the SQLite workflow store', () => {
  let dataDir: string;
  let store: ControlPlaneStore;
  let clock = 1_000_000;
  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'store-'));
    clock = Date.parse('2026-11-30T20:00:00.000Z');
    store = await openSqliteStore({ dataDir, now: () => new Date(clock) });
  });
  afterEach(async () => {
    await store.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('migrates a new file to the newest version, in WAL mode', () => {
    const db = new Database(join(dataDir, STORE_FILE_NAME), { readonly: true });
    try {
      expect(db.pragma('user_version', { simple: true })).toBe(migrations.at(-1)!.version);
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    } finally {
      db.close();
    }
  });

  it('refuses a file written by a newer schema version', async () => {
    await store.close();
    const db = new Database(join(dataDir, STORE_FILE_NAME));
    db.pragma('user_version = 999');
    db.close();
    await expect(openSqliteStore({ dataDir })).rejects.toThrow(/schema version 999, newer than/);
    await expect(openSqliteStore({ dataDir, migrations: [{ version: 2, name: 'out of order', sql: 'SELECT 1' }] })).rejects.toThrow(/versions must be 1, 2, 3/);
    const reset = new Database(join(dataDir, STORE_FILE_NAME));
    reset.pragma(`user_version = ${migrations.at(-1)!.version}`);
    reset.close();
    store = await openSqliteStore({ dataDir });
  });

  it('upgrades a store written before task claims (schema 3): its running run keeps its tasks and they become claimable', async () => {
    await store.close();
    await rm(dataDir, { recursive: true, force: true });
    await mkdir(dataDir, { recursive: true });
    // A file as the previous release left it: schema 3, a running run leased to a runner, a as running.
    const old = new Database(join(dataDir, STORE_FILE_NAME));
    for (const migration of migrations.slice(0, 3)) old.exec(migration.sql);
    old.pragma('user_version = 3');
    old.prepare("INSERT INTO workflow_runs (run_id, agent_id, name, state, max_parallel, created_at, owner, lease_until) VALUES ('r', 'agent-1', 'two', 'running', 2, '2026-11-30T19:00:00.000Z', 'gone:1:x', 0)").run();
    const insertTask = old.prepare("INSERT INTO workflow_tasks (run_id, task_id, position, prompt, result_schema_json, depends_on_json, max_attempts, state, attempts) VALUES ('r', ?, ?, 'p', '{}', ?, 2, ?, ?)");
    insertTask.run('a', 0, '[]', 'running', 1);
    insertTask.run('b', 1, '["a"]', 'pending', 0);
    old.prepare("INSERT INTO workflow_attempts (run_id, task_id, attempt, started_at) VALUES ('r', 'a', 1, '2026-11-30T19:00:00.000Z')").run();
    old.close();
    store = await openSqliteStore({ dataDir, now: () => new Date(clock) });
    expect((await store.workflows.getRun('r'))?.tasks.map((task) => task.state)).toEqual(['running', 'pending']);
    // The old runner's attempt has no claim: it is interrupted and a claimed again as attempt 2.
    expect(await store.workflows.claimTask({ owner: 'r1', leaseMs: 1_000 })).toMatchObject({ runId: 'r', taskId: 'a', attempt: 2 });
    expect((await store.workflows.listAttempts('r')).map((a) => [a.attempt, a.outcome])).toEqual([[1, 'interrupted'], [2, undefined]]);
  });
});
