import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { catchUp, parseScheduleTiming } from '../../../../controller/control-plane/domain/schedules/schedule-timing.js';
import { Scheduler, type Firing } from '../../../../controller/control-plane/domain/schedules/scheduler.js';
import type { ScheduleJobHooks } from '../../../../controller/control-plane/grpc/schedule-job-control-handlers.js';
import { askControlPlane as ask, tempStore } from '../../../fixtures/ask-control-plane.js';

const T0 = Date.parse('2026-11-30T21:00:00.000Z');
const minute = 60_000;

describe('parseScheduleTiming', () => {
  it('takes a cron expression in an IANA zone, or a one-off time, and refuses the rest with what to change', () => {
    expect(parseScheduleTiming({ cron: '0 9 * * 1-5', timeZone: 'Europe/Paris' }, T0)).toEqual({ kind: 'cron', cron: '0 9 * * 1-5', timeZone: 'Europe/Paris' });
    expect(parseScheduleTiming({ at: '2026-12-01T09:00:00', timeZone: 'Europe/Paris' }, T0)).toMatchObject({
      kind: 'at',
      atMs: Date.parse('2026-12-01T08:00:00Z'),
    });
    expect(parseScheduleTiming({ at: '2026-12-01T09:00:00.250+01:00' }, T0)).toMatchObject({ atMs: Date.parse('2026-12-01T08:00:00.250Z') });
    expect(parseScheduleTiming({ at: '2026-12-01T09:00:00.25', timeZone: 'America/New_York' }, T0)).toMatchObject({ atMs: Date.parse('2026-12-01T14:00:00.250Z') });
    expect(() => parseScheduleTiming({ cron: '61 * * * *' }, T0)).toThrow(/not a cron expression.*minute/);
    expect(() => parseScheduleTiming({ cron: '* * * * *', at: '2026-12-01T09:00:00Z' }, T0)).toThrow(/exactly one of `cron`/);
    expect(() => parseScheduleTiming({}, T0)).toThrow(/exactly one of `cron`/);
    expect(() => parseScheduleTiming({ cron: '* * * * *', timeZone: 'Mars/Olympus' }, T0)).toThrow(/"Mars\/Olympus" is not an IANA time zone/);
    expect(() => parseScheduleTiming({ at: '2026-11-30T20:00:00Z' }, T0)).toThrow(/is in the past/);
    expect(() => parseScheduleTiming({ at: 'tomorrow at nine' }, T0)).toThrow(/not an ISO 8601 time/);
  });

  it('folds firings that fell due while down into one, counting the others as missed', () => {
    const timing = parseScheduleTiming({ cron: '* * * * *' }, T0);
    // Due at T0+1min; the controller comes back at T0+10.5min: firings at +1..+10 fell due.
    expect(catchUp(timing, T0 + minute, T0 + 10.5 * minute)).toEqual({ missed: 9, nextFireAt: T0 + 11 * minute });
    expect(catchUp(timing, T0 + minute, T0 + minute)).toEqual({ missed: 0, nextFireAt: T0 + 2 * minute });
  });
});

describe('Scheduler over the SQLite store', () => {
  let db: ReturnType<typeof tempStore>;
  beforeEach(() => {
    db = tempStore();
  });
  afterEach(() => db.remove());

  const at = (clock: () => number) => ({ schedulesAndJobs: { clock } });

  it('claims a due one-off firing once: a second scheduler over the same file (a restart) finds nothing to fire', async () => {
    let now = T0;
    const first = await db.open();
    const created = await ask(first, 'agent-a', 'createSchedule', { agentId: '', prompt: 'Say hello', cron: '', at: new Date(T0 + 5_000).toISOString(), timeZone: '' }, at(() => now));
    expect(created.schedule).toMatchObject({ agentId: 'agent-a', timeZone: 'UTC', nextFireAt: new Date(T0 + 5_000).toISOString(), firedCount: 0 });
    const fired: Firing[] = [];
    const scheduler = new Scheduler({ schedules: first.schedules, onFired: (firing) => fired.push(firing), clock: () => now });
    expect(await scheduler.fireDue()).toEqual([]);
    now = T0 + 6_000;
    await scheduler.fireDue();
    expect(fired).toHaveLength(1);
    expect(fired[0]).toMatchObject({ fireAt: T0 + 5_000, claimedAt: T0 + 6_000, missed: 0 });
    expect(fired[0]!.job).toMatchObject({ agentId: 'agent-a', prompt: 'Say hello', status: 'queued', canSpawnJobs: true });
    await first.close();

    const second = await db.open();
    const again = new Scheduler({ schedules: second.schedules, onFired: (firing) => fired.push(firing), clock: () => now + minute });
    expect(await again.fireDue()).toEqual([]);
    const [schedule] = (await ask(second, 'agent-a', 'listSchedules', { agentId: '' })).schedules;
    expect(schedule).toMatchObject({ firedCount: 1, missedCount: 0, nextFireAt: '', lastFiredAt: new Date(T0 + 6_000).toISOString() });
    expect(await second.jobs.list('agent-a', 10)).toHaveLength(1);
    await second.close();
  });

  it('a claim that lost the race (the schedule moved on) is refused by the store', async () => {
    const store = await db.open();
    const { schedule } = await ask(store, 'agent-a', 'createSchedule', { agentId: '', prompt: 'tick', cron: '* * * * *', at: '', timeZone: 'UTC' }, at(() => T0));
    const fireAt = T0 + minute;
    const claim = { scheduleId: schedule!.scheduleId, fireAt, nextFireAt: fireAt + minute, missed: 0, now: fireAt, maxActiveJobsPerAgent: 20 };
    expect(await store.schedules.claimFiring({ ...claim, jobId: 'job_1' })).toBeDefined();
    expect(await store.schedules.claimFiring({ ...claim, jobId: 'job_2' })).toBeUndefined();
    expect((await store.jobs.list(undefined, 10)).map((job) => job.jobId)).toEqual(['job_1']);
    await store.close();
  });

  it("fires only the schedules of the agents it is given: another agent's due schedule stays for a controller that runs it", async () => {
    const store = await db.open();
    for (const agent of ['agent-a', 'agent-b']) {
      await ask(store, agent, 'createSchedule', { agentId: '', prompt: `for ${agent}`, cron: '', at: new Date(T0 + 1_000).toISOString(), timeZone: 'UTC' }, at(() => T0));
    }
    const fired = await new Scheduler({ schedules: store.schedules, agentIds: ['agent-a'], onFired: () => {}, clock: () => T0 + 2_000 }).fireDue();
    expect(fired.map((firing) => firing.job.prompt)).toEqual(['for agent-a']);
    expect(await store.schedules.nextDueAt(['agent-b'])).toBe(T0 + 1_000);
    expect(await store.schedules.nextDueAt(['agent-a'])).toBeUndefined();
    await store.close();
  });

  it("counts a firing as missed, queueing nothing, while its agent's job queue is full", async () => {
    let now = T0;
    const store = await db.open();
    await ask(store, 'agent-a', 'createSchedule', { agentId: '', prompt: 'tick', cron: '* * * * *', at: '', timeZone: 'UTC' }, at(() => now));
    const scheduler = new Scheduler({ schedules: store.schedules, onFired: () => {}, clock: () => now, maxActiveJobsPerAgent: 1 });
    now = T0 + minute;
    expect(await scheduler.fireDue()).toHaveLength(1);
    now = T0 + 2 * minute;
    expect(await scheduler.fireDue()).toEqual([]);
    const [schedule] = await store.schedules.list('agent-a', 10);
    expect(schedule).toMatchObject({ firedCount: 1, missedCount: 1, nextFireAt: T0 + 3 * minute });
    expect(await store.jobs.list('agent-a', 10)).toHaveLength(1);
    await store.close();
  });

  it('records firings missed while down and runs one catch-up firing', async () => {
    let now = T0;
    const store = await db.open();
    await ask(store, 'agent-a', 'createSchedule', { agentId: '', prompt: 'tick', cron: '* * * * *', at: '', timeZone: 'UTC' }, at(() => now));
    now = T0 + 10.5 * minute;
    const fired = await new Scheduler({ schedules: store.schedules, onFired: () => {}, clock: () => now }).fireDue();
    expect(fired).toHaveLength(1);
    expect(fired[0]).toMatchObject({ fireAt: T0 + minute, missed: 9 });
    const [schedule] = await store.schedules.list('agent-a', 10);
    expect(schedule).toMatchObject({ firedCount: 1, missedCount: 9, nextFireAt: T0 + 11 * minute });
    await store.close();
  });
});

describe('schedule and job control handlers', () => {
  let db: ReturnType<typeof tempStore>;
  beforeEach(() => {
    db = tempStore();
  });
  afterEach(() => db.remove());

  it("keeps one agent's schedules and jobs invisible and untouchable to another", async () => {
    const store = await db.open();
    const { schedule } = await ask(store, 'agent-a', 'createSchedule', { agentId: '', prompt: 'p', cron: '0 9 * * *', at: '', timeZone: 'UTC' });
    const { job } = await ask(store, 'agent-a', 'startJob', { agentId: '', prompt: 'do it' });
    expect((await ask(store, 'agent-b', 'listSchedules', { agentId: '' })).schedules).toEqual([]);
    expect((await ask(store, 'agent-b', 'listJobs', { agentId: '', limit: 0 })).jobs).toEqual([]);
    await expect(ask(store, 'agent-b', 'deleteSchedule', { agentId: '', scheduleId: schedule!.scheduleId })).rejects.toMatchObject({ code: 'not_found' });
    await expect(ask(store, 'agent-b', 'showJob', { agentId: '', jobId: job!.jobId })).rejects.toMatchObject({ code: 'not_found' });
    await expect(ask(store, 'agent-b', 'cancelJob', { agentId: '', jobId: job!.jobId, reason: '' })).rejects.toMatchObject({ code: 'not_found' });
    await expect(ask(store, 'agent-b', 'listJobs', { agentId: 'agent-a', limit: 0 })).rejects.toMatchObject({ code: 'permission_denied' });
    await expect(ask(store, 'agent-b', 'deleteSchedule', { agentId: 'agent-a', scheduleId: schedule!.scheduleId })).rejects.toMatchObject({ code: 'permission_denied' });
    // Still there and untouched for its owner; an operator (no acting agent) sees every agent's.
    expect((await ask(store, 'agent-a', 'showJob', { agentId: '', jobId: job!.jobId })).job).toMatchObject({ state: 1 });
    expect((await ask(store, 'agent-a', 'listSchedules', { agentId: '' })).schedules).toHaveLength(1);
    expect((await ask(store, undefined, 'listSchedules', { agentId: '' })).schedules).toHaveLength(1);
    await store.close();
  });

  it('bounds schedules per agent, active jobs per agent and prompt size', async () => {
    const store = await db.open();
    const hooks = { schedulesAndJobs: { limits: { maxSchedulesPerAgent: 2, maxActiveJobsPerAgent: 1, maxPromptChars: 20 } } satisfies ScheduleJobHooks };
    const create = () => ask(store, 'agent-a', 'createSchedule', { agentId: '', prompt: 'p', cron: '0 9 * * *', at: '', timeZone: 'UTC' }, hooks);
    await create();
    await create();
    await expect(create()).rejects.toMatchObject({ code: 'limit_exceeded', message: expect.stringMatching(/at most 2/) });
    await ask(store, 'agent-a', 'startJob', { agentId: '', prompt: 'one' }, hooks);
    await expect(ask(store, 'agent-a', 'startJob', { agentId: '', prompt: 'two' }, hooks)).rejects.toMatchObject({ code: 'limit_exceeded' });
    await expect(ask(store, 'agent-b', 'startJob', { agentId: '', prompt: 'x'.repeat(21) }, hooks)).rejects.toMatchObject({
      code: 'invalid_request',
      message: expect.stringMatching(/21 characters; at most 20/),
    });
    await expect(ask(store, undefined, 'startJob', { agentId: '', prompt: 'who?' }, hooks)).rejects.toMatchObject({ code: 'invalid_request', message: expect.stringMatching(/agent_id is required/) });
    await expect(ask(store, 'agent-a', 'createSchedule', { agentId: '', prompt: 'p', cron: 'every day', at: '', timeZone: 'UTC' })).rejects.toMatchObject({
      code: 'invalid_request',
      message: expect.stringMatching(/not a cron expression/),
    });
    await store.close();
  });
});
