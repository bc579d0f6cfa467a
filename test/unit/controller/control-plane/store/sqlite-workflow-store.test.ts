import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isControlPlaneError } from '../../../../../controller/control-plane/control-plane-error.js';
import type { ControlPlaneStore } from '../../../../../controller/control-plane/store/control-plane-store.js';
import { openSqliteStore, STORE_FILE_NAME } from '../../../../../controller/control-plane/store/sqlite/open-sqlite-store.js';
import { migrations } from '../../../../../controller/control-plane/store/sqlite/migrations.js';
import type { WorkflowDefinition } from '../../../../../controller/control-plane/store/workflow-store.js';

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

  it('commits a task exactly once, and keeps the persisted schema and result across a reopen', async () => {
    const run = await store.workflows.createRun({ agentId: 'agent-1', definition, maxRunningPerAgent: 5 });
    expect(run.tasks.map((task) => [task.taskId, task.state])).toEqual([['a', 'pending'], ['b', 'pending']]);
    const attempt = await store.workflows.startAttempt({ runId: run.runId, taskId: 'a' });
    expect(attempt).toBe(1);
    expect(await store.workflows.startAttempt({ runId: run.runId, taskId: 'a' })).toBeUndefined();
    expect(await store.workflows.commitResult({ runId: run.runId, taskId: 'a', attempt: 1, resultJson: '{"n":1}' })).toEqual({ committed: true });
    expect(await store.workflows.commitResult({ runId: run.runId, taskId: 'a', attempt: 1, resultJson: '{"n":2}' })).toEqual({
      committed: false,
      reason: 'already_committed',
    });
    await store.close();
    store = await openSqliteStore({ dataDir });
    const again = await store.workflows.getRun(run.runId);
    expect(again?.tasks[0]).toMatchObject({ state: 'committed', resultJson: '{"n":1}', resultSchemaJson: JSON.stringify(schema) });
    expect((await store.workflows.listAttempts(run.runId)).map((a) => [a.taskId, a.attempt, a.outcome])).toEqual([['a', 1, 'committed']]);
  });

  it('counts failed attempts against max_attempts, but not interrupted ones', async () => {
    const run = await store.workflows.createRun({ agentId: 'agent-1', definition, maxRunningPerAgent: 5 });
    const first = await store.workflows.startAttempt({ runId: run.runId, taskId: 'a' });
    expect(await store.workflows.endAttempt({ runId: run.runId, taskId: 'a', attempt: first!, outcome: 'interrupted', error: 'stopped' })).toBe('pending');
    const second = await store.workflows.startAttempt({ runId: run.runId, taskId: 'a' });
    expect(await store.workflows.endAttempt({ runId: run.runId, taskId: 'a', attempt: second!, outcome: 'failed', error: 'no submission' })).toBe('pending');
    const third = await store.workflows.startAttempt({ runId: run.runId, taskId: 'a' });
    expect(await store.workflows.endAttempt({ runId: run.runId, taskId: 'a', attempt: third!, outcome: 'failed', error: 'still none' })).toBe('failed');
    const stored = await store.workflows.getRun(run.runId);
    expect(stored?.tasks[0]).toMatchObject({ attempts: 3, failedAttempts: 2, error: 'still none', state: 'failed' });
  });

  it('finishing a run skips pending tasks, cancels running ones and refuses later commits', async () => {
    const run = await store.workflows.createRun({ agentId: 'agent-1', definition, maxRunningPerAgent: 5 });
    await store.workflows.startAttempt({ runId: run.runId, taskId: 'a' });
    const finished = await store.workflows.finishRun({ runId: run.runId, state: 'cancelled', error: 'user said stop' });
    expect(finished).toMatchObject({ state: 'cancelled', error: 'user said stop' });
    expect(finished?.tasks.map((task) => task.state)).toEqual(['cancelled', 'skipped']);
    expect(await store.workflows.commitResult({ runId: run.runId, taskId: 'a', attempt: 1, resultJson: '{}' })).toEqual({ committed: false, reason: 'not_running' });
    expect((await store.workflows.listAttempts(run.runId))[0]?.outcome).toBe('cancelled');
  });

  it('refuses a run past the per-agent limit, counting only that agent', async () => {
    await store.workflows.createRun({ agentId: 'agent-1', definition, maxRunningPerAgent: 1 });
    await store.workflows.createRun({ agentId: 'agent-2', definition, maxRunningPerAgent: 1 });
    const refused = await store.workflows.createRun({ agentId: 'agent-1', definition, maxRunningPerAgent: 1 }).catch((error: unknown) => error);
    expect(isControlPlaneError(refused, 'limit_exceeded')).toBe(true);
    expect((await store.workflows.listRuns({ agentId: 'agent-1', limit: 10 })).length).toBe(1);
  });

  it('lets another runner claim a run only once its lease ran out, and interrupts what was running', async () => {
    const run = await store.workflows.createRun({ agentId: 'agent-1', definition, maxRunningPerAgent: 5, owner: 'runner-1', leaseMs: 10_000 });
    await store.workflows.startAttempt({ runId: run.runId, taskId: 'a' });
    expect(await store.workflows.claimRuns({ owner: 'runner-2', leaseMs: 10_000 })).toEqual([]);
    clock += 5_000;
    expect(await store.workflows.renewLeases({ owner: 'runner-1', leaseMs: 10_000, runIds: [run.runId] })).toEqual([run.runId]);
    clock += 9_000;
    expect(await store.workflows.claimRuns({ owner: 'runner-2', leaseMs: 10_000 })).toEqual([]);
    clock += 2_000;
    expect(await store.workflows.claimRuns({ owner: 'runner-2', leaseMs: 10_000 })).toEqual([run.runId]);
    const claimed = await store.workflows.getRun(run.runId);
    expect(claimed).toMatchObject({ owner: 'runner-2' });
    expect(claimed?.tasks[0]).toMatchObject({ state: 'pending', attempts: 1, failedAttempts: 0 });
    expect((await store.workflows.listAttempts(run.runId))[0]?.outcome).toBe('interrupted');
    expect(await store.workflows.renewLeases({ owner: 'runner-1', leaseMs: 10_000, runIds: [run.runId] })).toEqual([]);
    // An owner named as gone is taken over at once.
    expect(await store.workflows.claimRuns({ owner: 'runner-3', leaseMs: 10_000, takeOverFrom: ['runner-2'] })).toEqual([run.runId]);
  });
});
