import { beforeEach, describe, expect, it } from 'vitest';
import { isControlPlaneError } from '../../../../../controller/control-plane/domain/control-plane-error.js';
import type { ControlPlaneStore } from '../../../../../controller/control-plane/domain/control-plane-store.js';
import type { TaskClaim, WorkflowDefinition } from '../../../../../controller/control-plane/domain/workflows/workflow-store.js';
import { eventually, postgresBackend, sqliteBackend, useStoreSuite } from '../../../../fixtures/store-backends.js';

const schema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] };
const task = (id: string, dependsOn: string[] = [], maxAttempts = 2) => ({ id, prompt: `do ${id}`, resultSchema: schema, dependsOn, maxAttempts });
/** a, then b once a is committed. */
const chain: WorkflowDefinition = { name: 'chain', maxParallel: 2, tasks: [task('a'), task('b', ['a'])] };
const wide = (count: number, maxParallel: number): WorkflowDefinition => ({ name: 'wide', maxParallel, tasks: Array.from({ length: count }, (_, i) => task(`t${i}`)) });
const T0 = Date.parse('2026-11-30T21:00:00.000Z');
const LEASE = 10_000;


// The workflow part of the store contract, once per backend. Work is claimed, not assigned: on both
// databases a claim is a lease on the task's row that its runner renews; the behaviour below is the same.
for (const backend of [sqliteBackend(), postgresBackend('the workflow store conformance suite')]) {
  describe(`WorkflowStore conformance: ${backend.name}`, backend.suiteOptions, () => {
    let clock = T0;
    const now = () => new Date(clock);
    const suite = useStoreSuite(backend, now, () => {
      clock = T0;
    });
    const second = () => suite.second();
    let store: ControlPlaneStore;
    beforeEach(() => {
      store = suite.store;
    });
    const claim = (on: ControlPlaneStore, owner: string, scope: { runIds?: string[]; agentIds?: string[]; takeOverFrom?: string[] } = {}) =>
      on.workflows.claimTask({ owner, leaseMs: LEASE, ...scope });

    it('claims a ready task, commits it exactly once, then its dependent, and keeps all of it across a reopen', async () => {
      const run = await store.workflows.createRun({ agentId: 'agent-1', definition: chain, maxRunningPerAgent: 5 });
      expect(run.tasks.map((t) => [t.taskId, t.state])).toEqual([['a', 'pending'], ['b', 'pending']]);
      const first = await claim(store, 'r1');
      expect(first).toMatchObject({ runId: run.runId, taskId: 'a', agentId: 'agent-1', attempt: 1 });
      // b waits for a.
      expect(await claim(store, 'r1')).toBeUndefined();
      expect((await store.workflows.getRun(run.runId))?.tasks[0]).toMatchObject({ state: 'running', owner: 'r1' });
      expect(await store.workflows.claimOwners()).toEqual(['r1']);
      expect(await store.workflows.commitResult({ ...first!, resultJson: '{"n":1}' })).toEqual({ committed: true, taskState: 'committed', runState: 'running' });
      expect(await store.workflows.commitResult({ ...first!, resultJson: '{"n":2}' })).toMatchObject({ committed: false, reason: 'already_committed' });
      const next = await eventually(() => claim(store, 'r2'));
      expect(next).toMatchObject({ taskId: 'b', attempt: 1 });
      store = await suite.reopen();
      const again = await store.workflows.getRun(run.runId);
      expect(again?.tasks[0]).toMatchObject({ state: 'committed', resultJson: '{"n":1}', resultSchemaJson: JSON.stringify(schema) });
      expect(again?.tasks[0]).not.toHaveProperty('owner');
      expect(again?.tasks[1]).toMatchObject({ state: 'running', owner: 'r2', dependsOn: ['a'] });
      expect((await store.workflows.listAttempts(run.runId)).map((a) => [a.taskId, a.attempt, a.outcome, a.owner])).toEqual([
        ['a', 1, 'committed', 'r1'],
        ['b', 1, undefined, 'r2'],
      ]);
    });

    it('ends the run as succeeded in the transaction that commits its last task', async () => {
      const run = await store.workflows.createRun({ agentId: 'agent-1', definition: chain, maxRunningPerAgent: 5 });
      const a = await claim(store, 'r1');
      await store.workflows.commitResult({ ...a!, resultJson: '{"n":1}' });
      const b = await eventually(() => claim(store, 'r1'));
      clock += 1_000;
      expect(await store.workflows.commitResult({ ...b!, resultJson: '{"n":2}' })).toMatchObject({ committed: true, runState: 'succeeded' });
      expect(await store.workflows.getRun(run.runId)).toMatchObject({ state: 'succeeded', finishedAt: new Date(T0 + 1_000).toISOString() });
      expect(await claim(store, 'r1')).toBeUndefined();
    });

    it('commits once when two controllers race to commit the same task', async () => {
      const other = await second();
      await store.workflows.createRun({ agentId: 'agent-1', definition: chain, maxRunningPerAgent: 5 });
      const a = await claim(store, 'r1');
      const outcomes = await Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 ? other : store).workflows.commitResult({ ...a!, resultJson: `{"n":${i}}` })));
      expect(outcomes.filter((outcome) => outcome.committed)).toHaveLength(1);
      expect(outcomes.filter((outcome) => !outcome.committed && outcome.reason === 'already_committed')).toHaveLength(5);
    });

    it('counts failed attempts against max_attempts but not interrupted ones, and the last failure fails the run', async () => {
      const run = await store.workflows.createRun({ agentId: 'agent-1', definition: chain, maxRunningPerAgent: 5 });
      const first = await claim(store, 'r1');
      expect(await store.workflows.endAttempt({ ...first!, outcome: 'interrupted', error: 'stopped' })).toEqual({ taskState: 'pending', runState: 'running' });
      const secondAttempt = await eventually(() => claim(store, 'r1'));
      expect(secondAttempt).toMatchObject({ taskId: 'a', attempt: 2 });
      expect(await store.workflows.endAttempt({ ...secondAttempt!, outcome: 'failed', error: 'no submission' })).toEqual({ taskState: 'pending', runState: 'running' });
      const third = await eventually(() => claim(store, 'r1'));
      expect(third).toMatchObject({ taskId: 'a', attempt: 3 });
      const ended = await store.workflows.endAttempt({ ...third!, outcome: 'failed', error: 'still none' });
      expect(ended).toMatchObject({ taskState: 'failed', runState: 'failed' });
      expect(ended.runError).toMatch(/task "a" failed after 2 attempts: still none/);
      // Ending an attempt twice changes nothing.
      expect(await store.workflows.endAttempt({ ...third!, outcome: 'failed', error: 'again' })).toMatchObject({ taskState: 'failed', runState: 'failed' });
      const stored = await store.workflows.getRun(run.runId);
      expect(stored?.tasks.map((t) => t.state)).toEqual(['failed', 'skipped']);
      expect(stored?.tasks[0]).toMatchObject({ attempts: 3, failedAttempts: 2, error: 'still none' });
      expect(await claim(store, 'r1')).toBeUndefined();
    });

    it('finishing a run skips pending tasks, cancels running ones, drops their claims and refuses later commits', async () => {
      const run = await store.workflows.createRun({ agentId: 'agent-1', definition: chain, maxRunningPerAgent: 5 });
      const a = await claim(store, 'r1');
      clock += 1_000;
      const finished = await store.workflows.finishRun({ runId: run.runId, state: 'cancelled', error: 'user said stop' });
      expect(finished).toMatchObject({ state: 'cancelled', error: 'user said stop', finishedAt: new Date(T0 + 1_000).toISOString() });
      expect(finished?.tasks.map((t) => t.state)).toEqual(['cancelled', 'skipped']);
      expect(await store.workflows.renewClaims({ owner: 'r1', leaseMs: LEASE, claims: [a!] })).toEqual([]);
      expect(await store.workflows.commitResult({ ...a!, resultJson: '{"n":1}' })).toMatchObject({ committed: false, reason: 'not_running', runState: 'cancelled' });
      expect((await store.workflows.listAttempts(run.runId))[0]?.outcome).toBe('cancelled');
      expect(await store.workflows.claimOwners()).toEqual([]);
      expect(await store.workflows.finishRun({ runId: 'no-such-run', state: 'failed' })).toBeUndefined();
    });

    it("keeps at most max_parallel of a run's tasks running, over every controller", async () => {
      const other = await second();
      const run = await store.workflows.createRun({ agentId: 'agent-1', definition: wide(5, 2), maxRunningPerAgent: 5 });
      const first = await Promise.all([claim(store, 'r1'), claim(other, 'r2'), claim(store, 'r1'), claim(other, 'r2')]);
      const taken = first.filter((c): c is TaskClaim => c !== undefined);
      expect(taken).toHaveLength(2);
      expect(new Set(taken.map((c) => c.taskId)).size).toBe(2);
      await store.workflows.commitResult({ ...taken[0]!, resultJson: '{"n":0}' });
      const third = await eventually(() => claim(other, 'r2'));
      expect(third?.runId).toBe(run.runId);
      expect(taken.map((c) => c.taskId)).not.toContain(third?.taskId);
      expect(await claim(store, 'r1')).toBeUndefined();
    });

    it('gives each ready task to exactly one of two controllers claiming together', async () => {
      const other = await second();
      await store.workflows.createRun({ agentId: 'agent-1', definition: wide(6, 6), maxRunningPerAgent: 5 });
      await store.workflows.createRun({ agentId: 'agent-2', definition: wide(4, 4), maxRunningPerAgent: 5 });
      const claims = await Promise.all(Array.from({ length: 14 }, (_, i) => claim(i % 2 ? other : store, i % 2 ? 'r2' : 'r1')));
      const taken = claims.filter((c): c is TaskClaim => c !== undefined);
      const keys = taken.map((c) => `${c.runId}/${c.taskId}`);
      expect(new Set(keys).size).toBe(keys.length);
      // Some may have been fetched but not yet claimable again in this instant; none is claimed twice, and all are claimed in the end.
      while (keys.length < 10) {
        const more = await eventually(() => claim(store, 'r1'));
        if (!more) break;
        keys.push(`${more.runId}/${more.taskId}`);
      }
      expect(new Set(keys).size).toBe(10);
    });

    it("claims only in the runner's scope: the runs it was given, or its agents' runs", async () => {
      const run = await store.workflows.createRun({ agentId: 'agent-1', definition: chain, maxRunningPerAgent: 5 });
      expect(await claim(store, 'r1', { agentIds: ['agent-2'] })).toBeUndefined();
      expect(await claim(store, 'r1', { runIds: ['some-other-run'] })).toBeUndefined();
      expect(await claim(store, 'r1', { runIds: [] })).toBeUndefined();
      expect(await claim(store, 'r1', { agentIds: ['agent-1'], runIds: [run.runId] })).toMatchObject({ taskId: 'a', attempt: 1 });
    });

    it('takes over the attempt of an owner named as gone; the late runner is told, and the task still commits once', async () => {
      const run = await store.workflows.createRun({ agentId: 'agent-1', definition: chain, maxRunningPerAgent: 5 });
      const old = await claim(store, 'r1');
      expect(await claim(store, 'r2')).toBeUndefined();
      const taken = await eventually(() => claim(store, 'r2', { takeOverFrom: ['r1'] }));
      expect(taken).toMatchObject({ taskId: 'a', attempt: 2 });
      expect((await store.workflows.listAttempts(run.runId)).map((a) => [a.attempt, a.outcome, a.owner])).toEqual([
        [1, 'interrupted', 'r1'],
        [2, undefined, 'r2'],
      ]);
      expect(await store.workflows.renewClaims({ owner: 'r1', leaseMs: LEASE, claims: [old!] })).toEqual([]);
      expect(await store.workflows.renewClaims({ owner: 'r2', leaseMs: LEASE, claims: [taken!] })).toEqual([taken]);
      // The late runner's attempt ending changes nothing; whichever commits first wins, once.
      expect(await store.workflows.endAttempt({ ...old!, outcome: 'failed', error: 'late' })).toMatchObject({ taskState: 'running' });
      expect(await store.workflows.commitResult({ ...taken!, resultJson: '{"n":2}' })).toMatchObject({ committed: true });
      expect(await store.workflows.commitResult({ ...old!, resultJson: '{"n":1}' })).toMatchObject({ committed: false, reason: 'already_committed' });
      expect((await store.workflows.getRun(run.runId))?.tasks[0]).toMatchObject({ state: 'committed', resultJson: '{"n":2}', failedAttempts: 0 });
    });

    it('lets another runner claim a task once its lease ran out unrenewed, and never while its runner renews it', async () => {
      const run = await store.workflows.createRun({ agentId: 'agent-1', definition: chain, maxRunningPerAgent: 5 });
      const other = await second();
      const held = await claim(store, 'r1');
      clock += 5_000;
      expect(await store.workflows.renewClaims({ owner: 'r1', leaseMs: LEASE, claims: [held!] })).toEqual([held]);
      clock += 9_000;
      expect(await claim(other, 'r2')).toBeUndefined();
      clock += 2_000;
      expect(await claim(other, 'r2')).toMatchObject({ taskId: 'a', attempt: 2 });
      expect((await store.workflows.getRun(run.runId))?.tasks[0]).toMatchObject({ state: 'running', owner: 'r2', attempts: 2, failedAttempts: 0 });
      expect(await store.workflows.renewClaims({ owner: 'r1', leaseMs: LEASE, claims: [held!] })).toEqual([]);
      expect((await store.workflows.listAttempts(run.runId)).map((a) => [a.attempt, a.outcome, a.owner])).toEqual([
        [1, 'interrupted', 'r1'],
        [2, undefined, 'r2'],
      ]);
    });

    it('keeps max_parallel when controllers claim one run together, and claims across many runs of many agents', async () => {
      const other = await second();
      const run = await store.workflows.createRun({ agentId: 'agent-1', definition: wide(6, 2), maxRunningPerAgent: 5 });
      const claims = await Promise.all(Array.from({ length: 6 }, (_, i) => claim(i % 2 ? other : store, `r${i}`)));
      expect(claims.filter(Boolean)).toHaveLength(2);
      expect((await store.workflows.getRun(run.runId))?.tasks.filter((t) => t.state === 'running')).toHaveLength(2);
      for (let i = 0; i < 30; i++) await store.workflows.createRun({ agentId: `agent-x${i}`, definition: wide(1, 1), maxRunningPerAgent: 5 });
      const agentIds = Array.from({ length: 30 }, (_, i) => `agent-x${i}`);
      const taken = new Set<string>();
      for (let i = 0; i < 30; i++) taken.add((await claim(i % 2 ? other : store, 'r9', { agentIds }))!.runId);
      expect(taken.size).toBe(30);
      expect(await claim(store, 'r9', { agentIds })).toBeUndefined();
    });

    it('refuses a run past the per-agent limit, counting only that agent, even when controllers race', async () => {
      const other = await second();
      const attempts = await Promise.allSettled(
        Array.from({ length: 4 }, (_, i) => (i % 2 ? other : store).workflows.createRun({ agentId: 'agent-1', definition: chain, maxRunningPerAgent: 2 })),
      );
      expect(attempts.filter((a) => a.status === 'fulfilled')).toHaveLength(2);
      expect(attempts.filter((a) => a.status === 'rejected' && isControlPlaneError(a.reason, 'limit_exceeded'))).toHaveLength(2);
      await store.workflows.createRun({ agentId: 'agent-2', definition: chain, maxRunningPerAgent: 2 });
      expect((await store.workflows.listRuns({ agentId: 'agent-1', limit: 10 })).length).toBe(2);
      expect((await store.workflows.listRuns({ limit: 10 })).length).toBe(3);
      expect((await store.workflows.listRuns({ state: 'succeeded', limit: 10 })).length).toBe(0);
    });

    it('lists runs newest first', async () => {
      const first = await store.workflows.createRun({ agentId: 'agent-1', definition: chain, maxRunningPerAgent: 5 });
      clock += 1;
      const later = await store.workflows.createRun({ agentId: 'agent-1', definition: chain, maxRunningPerAgent: 5 });
      expect((await store.workflows.listRuns({ agentId: 'agent-1', limit: 10 })).map((run) => run.runId)).toEqual([later.runId, first.runId]);
      expect((await store.workflows.listRuns({ agentId: 'agent-1', limit: 1 })).map((run) => run.runId)).toEqual([later.runId]);
    });
  });
}
