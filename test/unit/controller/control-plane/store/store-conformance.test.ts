import { beforeEach, describe, expect, it } from 'vitest';
import { isControlPlaneError } from '../../../../../controller/control-plane/domain/control-plane-error.js';
import { Scheduler, type Firing } from '../../../../../controller/control-plane/domain/schedules/scheduler.js';
import type { ControlPlaneStore } from '../../../../../controller/control-plane/domain/control-plane-store.js';
import { askControlPlane as ask } from '../../../../fixtures/ask-control-plane.js';
import { eventually, postgresBackend, sqliteBackend, useStoreSuite } from '../../../../fixtures/store-backends.js';

const T0 = Date.parse('2026-11-30T21:00:00.000Z');

const minute = 60_000;
const OWNER = 'host:1234:runner';

// Every store test, once per backend (the workflow part is in workflow-store-conformance.test.ts): the same behaviour is the contract, whichever database holds it.
for (const backend of [sqliteBackend(), postgresBackend('the ControlPlaneStore conformance suite')]) {
  describe(`ControlPlaneStore conformance: ${backend.name}`, backend.suiteOptions, () => {
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

    describe('schedules', () => {
      it('claims a due one-off firing once: a second scheduler on the same store (a restart) finds nothing to fire', async () => {
        let nowMs = T0;
        const hooks = { schedulesAndJobs: { clock: () => nowMs } };
        const created = await ask(store, 'agent-a', 'createSchedule', { agentId: '', prompt: 'Say hello', cron: '', at: new Date(T0 + 5_000).toISOString(), timeZone: '' }, hooks);
        expect(created.schedule).toMatchObject({ agentId: 'agent-a', timeZone: 'UTC', nextFireAt: new Date(T0 + 5_000).toISOString(), firedCount: 0 });
        const fired: Firing[] = [];
        const scheduler = new Scheduler({ schedules: store.schedules, onFired: (firing) => fired.push(firing), clock: () => nowMs });
        expect(await scheduler.fireDue()).toEqual([]);
        nowMs = T0 + 6_000;
        await scheduler.fireDue();
        expect(fired).toHaveLength(1);
        expect(fired[0]!.job).toMatchObject({ agentId: 'agent-a', prompt: 'Say hello', status: 'queued', canSpawnJobs: true });
        store = await suite.reopen();
        expect(await new Scheduler({ schedules: store.schedules, onFired: (firing) => fired.push(firing), clock: () => nowMs + minute }).fireDue()).toEqual([]);
        const [schedule] = (await ask(store, 'agent-a', 'listSchedules', { agentId: '' })).schedules;
        expect(schedule).toMatchObject({ firedCount: 1, missedCount: 0, nextFireAt: '', lastFiredAt: new Date(T0 + 6_000).toISOString() });
        expect(await store.jobs.list('agent-a', 10)).toHaveLength(1);
        expect(await store.schedules.nextDueAt()).toBeUndefined();
      });

      it('fires a (schedule, fire time) once when two controllers claim it together', async () => {
        const other = await second();
        const { schedule } = await ask(store, 'agent-a', 'createSchedule', { agentId: '', prompt: 'tick', cron: '* * * * *', at: '', timeZone: 'UTC' }, { schedulesAndJobs: { clock: () => T0 } });
        const fireAt = T0 + minute;
        expect(await store.schedules.nextDueAt()).toBe(fireAt);
        expect((await store.schedules.listDue(fireAt, 10)).map((due) => due.scheduleId)).toEqual([schedule!.scheduleId]);
        const claim = { scheduleId: schedule!.scheduleId, fireAt, nextFireAt: fireAt + minute, missed: 0, now: fireAt, maxActiveJobsPerAgent: 20 };
        const claims = await Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 ? other : store).schedules.claimFiring({ ...claim, jobId: `job_${i}` })));
        expect(claims.filter(Boolean)).toHaveLength(1);
        expect(await store.jobs.list(undefined, 10)).toHaveLength(1);
        expect(await store.schedules.get(schedule!.scheduleId)).toMatchObject({ firedCount: 1, nextFireAt: fireAt + minute });
      });

      it('records firings missed while down and runs one catch-up firing', async () => {
        let nowMs = T0;
        await ask(store, 'agent-a', 'createSchedule', { agentId: '', prompt: 'tick', cron: '* * * * *', at: '', timeZone: 'UTC' }, { schedulesAndJobs: { clock: () => nowMs } });
        nowMs = T0 + 10.5 * minute;
        const fired = await new Scheduler({ schedules: store.schedules, onFired: () => {}, clock: () => nowMs }).fireDue();
        expect(fired).toHaveLength(1);
        expect(fired[0]).toMatchObject({ fireAt: T0 + minute, missed: 9 });
        expect((await store.schedules.list('agent-a', 10))[0]).toMatchObject({ firedCount: 1, missedCount: 9, nextFireAt: T0 + 11 * minute });
      });

      it("a firing that finds the agent's job queue full queues nothing and counts as missed", async () => {
        const { schedule } = await ask(store, 'agent-a', 'createSchedule', { agentId: '', prompt: 'tick', cron: '* * * * *', at: '', timeZone: 'UTC' }, { schedulesAndJobs: { clock: () => T0 } });
        await store.jobs.insert({ jobId: 'busy', agentId: 'agent-a', prompt: 'busy', canSpawnJobs: false, createdAt: T0 }, { maxQueuedPerAgent: 5 });
        const claim = { scheduleId: schedule!.scheduleId, fireAt: T0 + minute, nextFireAt: T0 + 2 * minute, missed: 0, now: T0 + minute, jobId: 'job_full', maxActiveJobsPerAgent: 1 };
        expect(await store.schedules.claimFiring(claim)).toBeUndefined();
        expect(await store.schedules.get(schedule!.scheduleId)).toMatchObject({ firedCount: 0, missedCount: 1, nextFireAt: T0 + 2 * minute });
        expect(await store.jobs.get('job_full')).toBeUndefined();
        // The next firing, with room again, queues its job.
        expect(await store.schedules.claimFiring({ ...claim, fireAt: T0 + 2 * minute, nextFireAt: T0 + 3 * minute, maxActiveJobsPerAgent: 5, jobId: 'job_ok' })).toMatchObject({ jobId: 'job_ok' });
        expect(await store.schedules.nextDueAt(['agent-b'])).toBeUndefined();
        expect(await store.schedules.nextDueAt(['agent-a'])).toBe(T0 + 3 * minute);
        expect(await store.schedules.listDue(T0 + 3 * minute, 10, ['agent-b'])).toEqual([]);
      });

      // Issue 34: a firing counted its agent's active jobs without the lock that insert and claimNext
      // take, so two controllers firing two schedules of one agent together both passed the limit.
      it("counts the agent's active jobs under its lock: two firings of one agent together never pass the limit", async () => {
        const other = await second();
        for (let round = 0; round < 8; round++) {
          const ids: string[] = [];
          for (const n of [0, 1]) {
            const { schedule } = await ask(store, 'agent-a', 'createSchedule', { agentId: '', prompt: `r${round}s${n}`, cron: '* * * * *', at: '', timeZone: 'UTC' }, { schedulesAndJobs: { clock: () => T0 } });
            ids.push(schedule!.scheduleId);
          }
          const fired = await Promise.all(
            ids.map((scheduleId, n) =>
              (n ? other : store).schedules.claimFiring({ scheduleId, fireAt: T0 + minute, nextFireAt: undefined, missed: 0, now: T0 + minute, jobId: `job_${round}_${n}`, maxActiveJobsPerAgent: round + 1 }),
            ),
          );
          expect(fired.filter(Boolean)).toHaveLength(1);
          expect((await store.jobs.list('agent-a', 100)).length).toBe(round + 1);
        }
      });

      it('deletes a schedule and keeps the jobs its firings queued', async () => {
        const { schedule } = await ask(store, 'agent-a', 'createSchedule', { agentId: '', prompt: 'tick', cron: '* * * * *', at: '', timeZone: 'UTC' }, { schedulesAndJobs: { clock: () => T0 } });
        await store.schedules.claimFiring({ scheduleId: schedule!.scheduleId, fireAt: T0 + minute, nextFireAt: T0 + 2 * minute, missed: 0, now: T0 + minute, jobId: 'job_1', maxActiveJobsPerAgent: 20 });
        expect(await store.schedules.delete(schedule!.scheduleId)).toMatchObject({ scheduleId: schedule!.scheduleId, firedCount: 1 });
        expect(await store.schedules.delete(schedule!.scheduleId)).toBeUndefined();
        expect(await store.schedules.get(schedule!.scheduleId)).toBeUndefined();
        expect(await store.jobs.get('job_1')).toMatchObject({ scheduleId: schedule!.scheduleId, status: 'queued' });
      });
    });

    describe('approvals', () => {
      const waiting = (callId: string, expiresInMs = 60_000) => ({
        agentId: 'agent-a',
        turnId: 'turn-1',
        callId,
        toolName: 'run_command',
        namespace: '',
        label: 'Running `rm -rf build`',
        parametersJson: '{"command":"rm -rf build"}',
        readOnly: false,
        destructive: true,
        expiresAt: new Date(T0 + expiresInMs),
      });

      it('keeps a pending approval until the first decision, which two controllers cannot both make', async () => {
        const other = await second();
        const created = await store.approvals.create(waiting('c1'));
        expect(created).toMatchObject({ status: 'pending', destructive: true, readOnly: false, reason: '', createdAt: new Date(T0) });
        expect((await other.approvals.list({ pendingOnly: true })).map((a) => a.approvalId)).toEqual([created.approvalId]);
        const decisions = await Promise.allSettled([
          store.approvals.decide(created.approvalId, { approved: true, reason: 'fine' }),
          other.approvals.decide(created.approvalId, { approved: false, reason: 'no' }),
        ]);
        expect(decisions.filter((d) => d.status === 'fulfilled')).toHaveLength(1);
        const refused = decisions.find((d) => d.status === 'rejected') as PromiseRejectedResult;
        expect(isControlPlaneError(refused.reason, 'invalid_request')).toBe(true);
        expect((refused.reason as Error).message).toMatch(/no longer pending: it is (approved|denied)/);
        expect(await store.approvals.list({ pendingOnly: true })).toEqual([]);
        await expect(store.approvals.decide('appr-none', { approved: true })).rejects.toMatchObject({ controlCode: 'not_found' });
      });

      it('expires a pending approval past its time for every reader, and a withdrawn one is not decided later', async () => {
        const soon = await store.approvals.create(waiting('c2', 1_000));
        const later = await store.approvals.create(waiting('c3'));
        clock += 2_000;
        expect(await store.approvals.get(soon.approvalId)).toMatchObject({ status: 'expired', reason: 'nobody decided before it expired', decidedAt: new Date(T0 + 1_000) });
        await store.approvals.withdraw(later.approvalId, 'the call ended first');
        expect(await store.approvals.get(later.approvalId)).toMatchObject({ status: 'expired', reason: 'the call ended first' });
        await expect(store.approvals.decide(later.approvalId, { approved: true })).rejects.toThrow(/no longer pending: it is expired \(the call ended first\)/);
        expect((await store.approvals.list({ agentId: 'agent-a' })).map((a) => a.callId)).toEqual(['c3', 'c2']);
        expect(await store.approvals.list({ agentId: 'agent-b' })).toEqual([]);
      });
    });

    describe('jobs', () => {
      const job = (jobId: string, agentId: string, createdAt = T0) => ({ jobId, agentId, prompt: `do ${jobId}`, canSpawnJobs: false, createdAt });

      it('claims the oldest queued job within the per-agent cap, finishes, cancels and requeues', async () => {
        for (const [id, agent] of [['j1', 'a'], ['j2', 'a'], ['j3', 'b']] as const) await store.jobs.insert(job(id, agent), { maxQueuedPerAgent: 5 });
        const claim = () => store.jobs.claimNext({ agentIds: ['a', 'b'], maxRunningPerAgent: 1, now: T0 + 1, owner: OWNER });
        expect(await claim()).toMatchObject({ jobId: 'j1', status: 'running', attempts: 1, startedAt: T0 + 1 });
        expect(await claim()).toMatchObject({ jobId: 'j3' });
        expect(await claim()).toBeUndefined();
        expect(await store.jobs.finish('j1', { status: 'succeeded', finalText: 'done', error: '', now: T0 + 2 })).toBe(true);
        expect(await store.jobs.finish('j1', { status: 'failed', finalText: '', error: 'late', now: T0 + 3 })).toBe(false);
        expect(await store.jobs.get('j1')).toMatchObject({ status: 'succeeded', finalText: 'done', finishedAt: T0 + 2, canSpawnJobs: false });
        expect(await store.jobs.cancel('j2', 'not needed', T0 + 4)).toMatchObject({ status: 'cancelled', error: 'not needed' });
        expect(await store.jobs.cancel('j1', 'too late', T0 + 4)).toMatchObject({ status: 'succeeded' });
        expect(await store.jobs.cancel('nope', 'x', T0)).toBeUndefined();
        expect((await store.jobs.list(undefined, 10)).map((j) => j.jobId)).toEqual(['j3', 'j2', 'j1']);
        expect((await store.jobs.list('a', 1)).map((j) => j.jobId)).toEqual(['j2']);
        // A controller that stops with j3 running: after its restart j3 runs again, as a second attempt
        // (SQLite requeues it at start; PostgreSQL's store handed its claim back at close).
        store = await suite.reopen();
        // The runner that held it is gone (SQLite: requeued at start; PostgreSQL: its claim was also handed back at close).
        expect(await store.jobs.runningOwners(['a', 'b'])).toEqual([OWNER]);
        expect(await store.jobs.requeueRunning({ agentIds: ['a', 'b'], owners: [] })).toBe(0);
        expect(await store.jobs.requeueRunning({ agentIds: ['a', 'b'], owners: [OWNER] })).toBe(1);
        const again = await eventually(() => store.jobs.claimNext({ agentIds: ['a', 'b'], maxRunningPerAgent: 1, now: T0 + 5, owner: OWNER }));
        expect(again).toMatchObject({ jobId: 'j3', status: 'running', attempts: 2 });
      });

      it('gives each queued job to one controller when several claim together', async () => {
        const other = await second();
        for (let i = 0; i < 8; i++) await store.jobs.insert(job(`j${i}`, `agent-${i}`), { maxQueuedPerAgent: 5 });
        const agentIds = Array.from({ length: 8 }, (_, i) => `agent-${i}`);
        const claims = await Promise.all(Array.from({ length: 12 }, (_, i) => (i % 2 ? other : store).jobs.claimNext({ agentIds, maxRunningPerAgent: 1, now: T0, owner: OWNER })));
        const ids = claims.filter((claim) => claim !== undefined).map((claim) => claim.jobId);
        expect(new Set(ids).size).toBe(ids.length);
        // Whatever lost a race now, the rest is still there to claim: nothing is lost.
        while (ids.length < 8) {
          const more = await eventually(() => store.jobs.claimNext({ agentIds, maxRunningPerAgent: 1, now: T0, owner: OWNER }));
          if (!more) break;
          ids.push(more.jobId);
        }
        expect(ids.sort()).toEqual(Array.from({ length: 8 }, (_, i) => `j${i}`).sort());
      });

      it('a claim held by a controller that died runs out, and another controller runs the job again; the late runner records nothing', async () => {
        const dying = await second();
        const survivor = await second();
        await dying.jobs.insert(job('j-orphan', 'a'), { maxQueuedPerAgent: 5 });
        expect(await dying.jobs.claimNext({ agentIds: ['a'], maxRunningPerAgent: 2, now: T0, owner: 'dying', leaseMs: 2_000 })).toMatchObject({ jobId: 'j-orphan', attempts: 1 });
        // The dying controller never renews, finishes nor closes; its claim is not free before it runs out.
        expect(await survivor.jobs.claimNext({ agentIds: ['a'], maxRunningPerAgent: 2, now: T0 + 1_999, owner: 'survivor' })).toBeUndefined();
        const again = await survivor.jobs.claimNext({ agentIds: ['a'], maxRunningPerAgent: 2, now: T0 + 2_000, owner: 'survivor', leaseMs: 2_000 });
        expect(again).toMatchObject({ jobId: 'j-orphan', status: 'running', attempts: 2 });
        expect(await dying.jobs.renewClaims({ owner: 'dying', jobIds: ['j-orphan'], leaseMs: 2_000, now: T0 + 2_001 })).toEqual([]);
        expect(await dying.jobs.finish('j-orphan', { status: 'failed', finalText: '', error: 'late', now: T0 + 3, owner: 'dying' })).toBe(false);
        expect(await survivor.jobs.finish('j-orphan', { status: 'succeeded', finalText: 'ok', error: '', now: T0 + 3, owner: 'survivor' })).toBe(true);
        // Recorded once: the finished job is not claimable again.
        expect(await store.jobs.claimNext({ agentIds: ['a'], maxRunningPerAgent: 2, now: T0 + 60_000, owner: OWNER })).toBeUndefined();
        expect(await store.jobs.get('j-orphan')).toMatchObject({ status: 'succeeded', attempts: 2, finalText: 'ok' });
      });

      // Issue 34: on PostgreSQL a pg-boss claim expired whatever its controller did, and the running
      // row was claimed again beside the live turn. A live runner renews its claim: never claimed again.
      it('never claims again a running job whose runner renews its claim', async () => {
        const other = await second();
        await store.jobs.insert(job('j-live', 'a'), { maxQueuedPerAgent: 5 });
        expect(await store.jobs.claimNext({ agentIds: ['a'], maxRunningPerAgent: 2, now: T0, owner: 'live', leaseMs: 2_000 })).toMatchObject({ jobId: 'j-live' });
        for (let at = T0 + 1_000; at <= T0 + 10_000; at += 1_000) {
          expect(await store.jobs.renewClaims({ owner: 'live', jobIds: ['j-live', 'j-none'], leaseMs: 2_000, now: at })).toEqual(['j-live']);
          expect(await other.jobs.claimNext({ agentIds: ['a'], maxRunningPerAgent: 2, now: at + 1_500, owner: 'other' })).toBeUndefined();
        }
        expect(await store.jobs.get('j-live')).toMatchObject({ status: 'running', attempts: 1 });
        // A cancelled job is no longer held: its runner learns it at the next renewal.
        await other.jobs.cancel('j-live', 'stop', T0 + 11_000);
        expect(await store.jobs.renewClaims({ owner: 'live', jobIds: ['j-live'], leaseMs: 2_000, now: T0 + 11_000 })).toEqual([]);
      });

      it('keeps the per-agent running limit when controllers claim together', async () => {
        const other = await second();
        for (let i = 0; i < 6; i++) await store.jobs.insert(job(`j${i}`, 'a'), { maxQueuedPerAgent: 10 });
        const claims = await Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 ? other : store).jobs.claimNext({ agentIds: ['a'], maxRunningPerAgent: 2, now: T0, owner: `r${i}` })));
        expect(claims.filter(Boolean)).toHaveLength(2);
      });

      it("claims a lone agent's job within one round of claims, however many jobs another agent queued", async () => {
        for (let i = 0; i < 200; i++) await store.jobs.insert(job(`flood-${i}`, 'flood'), { maxQueuedPerAgent: 1_000 });
        await store.jobs.insert(job('lone', 'lone'), { maxQueuedPerAgent: 5 });
        const agentIds = ['flood', 'lone'];
        // One round: claims until none is left to claim, as the job runner does at each poll.
        const round: string[] = [];
        for (let claimed; (claimed = await store.jobs.claimNext({ agentIds, maxRunningPerAgent: 2, now: T0, owner: OWNER })); ) round.push(claimed.jobId);
        expect(round).toEqual(['flood-0', 'flood-1', 'lone']);
      });

      it('claims for thousands of agents in one query and makes nothing per agent', async () => {
        const agentIds = Array.from({ length: 5_000 }, (_, i) => `agent-${i}`);
        expect(await store.jobs.claimNext({ agentIds, maxRunningPerAgent: 2, now: T0, owner: OWNER })).toBeUndefined();
        await store.jobs.insert(job('late', 'agent-4999'), { maxQueuedPerAgent: 5 });
        expect(await store.jobs.claimNext({ agentIds, maxRunningPerAgent: 2, now: T0, owner: OWNER })).toMatchObject({ jobId: 'late' });
        expect(await store.jobs.runningOwners(agentIds)).toEqual([OWNER]);
      });

      it("keeps one agent's schedules and jobs invisible and untouchable to another, and bounds them per agent", async () => {
        const { schedule } = await ask(store, 'agent-a', 'createSchedule', { agentId: '', prompt: 'p', cron: '0 9 * * *', at: '', timeZone: 'UTC' });
        const started = await ask(store, 'agent-a', 'startJob', { agentId: '', prompt: 'do it' });
        expect((await ask(store, 'agent-b', 'listSchedules', { agentId: '' })).schedules).toEqual([]);
        expect((await ask(store, 'agent-b', 'listJobs', { agentId: '', limit: 0 })).jobs).toEqual([]);
        await expect(ask(store, 'agent-b', 'deleteSchedule', { agentId: '', scheduleId: schedule!.scheduleId })).rejects.toMatchObject({ code: 'not_found' });
        await expect(ask(store, 'agent-b', 'showJob', { agentId: '', jobId: started.job!.jobId })).rejects.toMatchObject({ code: 'not_found' });
        const hooks = { schedulesAndJobs: { limits: { maxSchedulesPerAgent: 2, maxActiveJobsPerAgent: 1, maxPromptChars: 20 } } };
        await ask(store, 'agent-a', 'createSchedule', { agentId: '', prompt: 'p', cron: '0 9 * * *', at: '', timeZone: 'UTC' }, hooks);
        await expect(ask(store, 'agent-a', 'createSchedule', { agentId: '', prompt: 'p', cron: '0 9 * * *', at: '', timeZone: 'UTC' }, hooks)).rejects.toMatchObject({ code: 'limit_exceeded' });
        await expect(ask(store, 'agent-a', 'startJob', { agentId: '', prompt: 'two' }, hooks)).rejects.toMatchObject({ code: 'limit_exceeded' });
        expect((await ask(store, undefined, 'listSchedules', { agentId: '' })).schedules).toHaveLength(2);
      });
    });
  });
}
