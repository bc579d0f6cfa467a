// The fleet simulation, small: 3 serve processes on one PostgreSQL, 30 agents over 2 sidecars,
// jobs, one-off schedules and workflows; one controller SIGKILLed midway, another SIGTERMed and
// started again. Whatever the timing, nothing is lost, fired twice or committed twice.
import { describe, expect, it } from 'vitest';
import { runFleet } from '../../../bench/fleet/run-fleet.js';
import { requirePostgres } from '../../fixtures/postgres-cluster.js';

describe('fleet simulation', requirePostgres('the fleet simulation test'), () => {
  it('three controllers sharing PostgreSQL finish every workflow, job and schedule through a SIGKILL and a restart', async () => {
    const report = await runFleet({ controllers: 3, agents: 30, sidecars: 2, scheduleEvery: 3, workflowEvery: 5, chaos: true, timeoutMs: 240_000 });
    expect(report.killed).toMatch(/SIGKILLed/);
    expect(report.restarted).toMatch(/started again/);
    expect(report.workflows).toEqual({ total: 6, succeeded: 6 });
    expect(report.tasksCommittedTwice).toBe(0);
    expect(report.schedules).toEqual({ total: 10, fired: 10, firedTwice: 0 });
    expect(report.jobs).toMatchObject({ total: 40, succeeded: 40, lost: 0 });
    // Every succeeded job is attributed to one of the controllers this test started.
    expect(Object.keys(report.spread).every((label) => label.startsWith('controller '))).toBe(true);
    expect(Object.values(report.spread).reduce((sum, n) => sum + n, 0)).toBe(40);
    // Each of the 12 workflow tasks was committed by one attempt of one of these controllers.
    expect(Object.keys(report.taskSpread).every((label) => label.startsWith('controller '))).toBe(true);
    expect(Object.values(report.taskSpread).reduce((sum, n) => sum + n, 0)).toBe(12);
  }, 300_000);
});
