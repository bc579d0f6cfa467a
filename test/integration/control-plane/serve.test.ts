import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobState, type Job } from '../../../src/gen/toolruntime/v1/control_plane.js';
import { startScriptedAgentModel, type ScriptedAgentModel } from '../../fakes/scripted-agent-model.js';
import { askControlPlane, tempStore } from '../../fixtures/ask-control-plane.js';
import { controlPlaneClient, generatedToken, until } from '../../fixtures/control-plane-client.js';
import { startServe as startServeProcess } from '../../fixtures/start-serve.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';

const dir = mkdtempSync(join(tmpdir(), 'serve-test-'));
let sidecar: StartedSidecar;
let model: ScriptedAgentModel;
const started: StartedSidecar[] = [];

beforeAll(async () => {
  sidecar = await startSidecar({ args: ['--listen', '127.0.0.1:0', '--workspace', dir, '--state-dir', join(dir, 'sidecar-state')] });
  model = await startScriptedAgentModel();
}, 60_000);
afterAll(async () => {
  for (const serve of started) await serve.stop('SIGKILL');
  await sidecar?.stop();
  await model?.close();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

let counter = 0;
/** An agents file where agent-a and agent-b share the test's sidecar (turns carry their agent id). */
function agentsFile(extra: Record<string, unknown> = {}): string {
  const path = join(dir, `agents-${++counter}.json`);
  writeFileSync(path, JSON.stringify({ 'agent-a': { address: sidecar.address }, 'agent-b': { address: sidecar.address }, ...extra }));
  return path;
}

/** Starts `controller serve` as a real child process on the test's scripted model. */
async function startServe(options: { dataDir: string; agents: string; args?: string[] }): Promise<StartedSidecar> {
  const serve = await startServeProcess({
    args: ['--listen', '127.0.0.1:0', '--data-dir', options.dataDir, '--agents', options.agents, '--base-url', model.baseURL, ...(options.args ?? [])],
    env: { OPENAI_API_KEY: '', OPENAI_BASE_URL: '' },
  });
  started.push(serve);
  dataDirs.set(serve, options.dataDir);
  return serve;
}

const dataDirs = new WeakMap<StartedSidecar, string>();
/** An operator's client of a serve started without --token-file: the token it generated, read as `approvals` reads it. */
const clientOf = (serve: StartedSidecar) => controlPlaneClient(serve.address, generatedToken(dataDirs.get(serve)!, serve.address));

const soon = (ms: number) => new Date(Date.now() + ms).toISOString();
const jobsWith = (jobs: Job[], text: string) => jobs.filter((job) => job.prompt.includes(text));

describe('controller serve', () => {
  it('serves ControlPlaneService behind its token: refused without, start/list/show/cancel with it; SIGTERM exits 0', async () => {
    const dataDir = join(dir, 'data-token');
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, 'sesame-1234\n');
    const workspace = mkdtempSync(join(dir, 'spawned-'));
    const agents = agentsFile({ 'agent-w': { workspace, stateDir: join(workspace, '.state') } });
    const serve = await startServe({ dataDir, agents, args: ['--token-file', tokenFile] });
    const anonymous = controlPlaneClient(serve.address);
    const wrong = controlPlaneClient(serve.address, 'guess');
    const client = controlPlaneClient(serve.address, 'sesame-1234');
    try {
      await expect(anonymous.listJobs({})).rejects.toMatchObject({ code: 16 });
      await expect(wrong.startJob({ agentId: 'agent-a', prompt: 'sneaky' })).rejects.toMatchObject({ code: 16 });

      const quick = (await client.startJob({ agentId: 'agent-a', prompt: 'quick job' })).job!;
      expect(quick).toMatchObject({ agentId: 'agent-a', prompt: 'quick job' });
      const done = await until(() => client.showJob({ agentId: 'agent-a', jobId: quick.jobId }), (r) => r.job!.state === JobState.JOB_STATE_SUCCEEDED, 'the quick job');
      expect(done.job).toMatchObject({ finalText: 'done: quick job', error: '' });
      expect(done.job!.startedAt).not.toBe('');
      expect(done.job!.finishedAt).not.toBe('');
      // The spawned sidecar of agent-w runs its jobs too.
      const spawned = (await client.startJob({ agentId: 'agent-w', prompt: 'job on the spawned sidecar' })).job!;
      await until(() => client.showJob({ agentId: 'agent-w', jobId: spawned.jobId }), (r) => r.job!.state === JobState.JOB_STATE_SUCCEEDED, 'the agent-w job');

      const slow = (await client.startJob({ agentId: 'agent-a', prompt: 'slow job HANG-UNTIL-RELEASED' })).job!;
      await model.waitForTurns('slow job', 1);
      const cancelled = await client.cancelJob({ agentId: 'agent-a', jobId: slow.jobId, reason: 'changed my mind' });
      expect(cancelled.job).toMatchObject({ state: JobState.JOB_STATE_CANCELLED, error: 'cancelled: changed my mind' });
      const listed = (await client.listJobs({ agentId: 'agent-a' })).jobs;
      expect(listed.map((job) => job.jobId)).toEqual([slow.jobId, quick.jobId]);
      await expect(client.showJob({ agentId: 'agent-b', jobId: quick.jobId })).rejects.toMatchObject({ code: 5 });
      await expect(client.startJob({ agentId: 'nobody', prompt: 'x' })).rejects.toMatchObject({ code: 3, details: expect.stringContaining('not in this controller') });

      const schedule = (await client.createSchedule({ agentId: 'agent-a', prompt: 'every morning', cron: '0 9 * * *', timeZone: 'Europe/Paris' })).schedule!;
      expect(schedule).toMatchObject({ cron: '0 9 * * *', timeZone: 'Europe/Paris', firedCount: 0 });
      expect(Date.parse(schedule.nextFireAt)).toBeGreaterThan(Date.now());
      expect((await client.listSchedules({ agentId: 'agent-a' })).schedules.map((s) => s.scheduleId)).toEqual([schedule.scheduleId]);
      await expect(client.createSchedule({ agentId: 'agent-a', prompt: 'p', cron: '0 9 * * *', at: soon(60_000) })).rejects.toMatchObject({ code: 3 });
      expect((await client.deleteSchedule({ agentId: 'agent-a', scheduleId: schedule.scheduleId })).schedule!.scheduleId).toBe(schedule.scheduleId);
      await expect(client.deleteSchedule({ agentId: 'agent-a', scheduleId: schedule.scheduleId })).rejects.toMatchObject({ code: 5 });
      // The cancelled job stays cancelled: its aborted turn did not overwrite it.
      expect((await client.showJob({ agentId: 'agent-a', jobId: slow.jobId })).job!.state).toBe(JobState.JOB_STATE_CANCELLED);
    } finally {
      for (const c of [anonymous, wrong, client]) c.close();
    }
    expect(await serve.stop('SIGTERM')).toBe(0);
  }, 120_000);

  it('fires a schedule exactly once across a SIGKILL and a restart; a firing interrupted mid-turn resumes as the same job', async () => {
    const dataDir = join(dir, 'data-restart');
    const agents = agentsFile();
    const first = await startServe({ dataDir, agents });
    let client = clientOf(first);
    const once = (await client.createSchedule({ agentId: 'agent-a', prompt: 'scheduled-once', at: soon(1_500) })).schedule!;
    await until(() => client.listJobs({ agentId: 'agent-a' }), (r) => jobsWith(r.jobs, 'scheduled-once').some((job) => job.state === JobState.JOB_STATE_SUCCEEDED), 'the firing to finish');
    const hanging = (await client.createSchedule({ agentId: 'agent-a', prompt: 'scheduled-hang HANG-UNTIL-RELEASED', at: soon(1_000) })).schedule!;
    await model.waitForTurns('scheduled-hang', 1);
    client.close();
    await first.stop('SIGKILL');
    model.release();

    const second = await startServe({ dataDir, agents });
    client = clientOf(second);
    try {
      // A barrier: a later schedule fires only after every earlier due one was looked at.
      await client.createSchedule({ agentId: 'agent-a', prompt: 'barrier-after-restart', at: soon(1_500) });
      await model.waitForTurns('barrier-after-restart', 1);
      const jobs = await until(() => client.listJobs({ agentId: 'agent-a' }), (r) => jobsWith(r.jobs, 'scheduled-hang').every((job) => job.state === JobState.JOB_STATE_SUCCEEDED), 'the resumed firing');
      expect(model.turnsWith('scheduled-once')).toHaveLength(1);
      expect(jobsWith(jobs.jobs, 'scheduled-once')).toHaveLength(1);
      // The interrupted firing ran again as the same job; the schedule still fired once.
      expect(jobsWith(jobs.jobs, 'scheduled-hang')).toHaveLength(1);
      expect(model.turnsWith('scheduled-hang')).toHaveLength(2);
      const schedules = (await client.listSchedules({ agentId: 'agent-a' })).schedules;
      for (const id of [once.scheduleId, hanging.scheduleId]) {
        expect(schedules.find((s) => s.scheduleId === id)).toMatchObject({ firedCount: 1, missedCount: 0, nextFireAt: '' });
      }
    } finally {
      client.close();
    }
    expect(await second.stop('SIGTERM')).toBe(0);
  }, 120_000);

  it('records firings missed while no controller ran and runs one catch-up firing', async () => {
    const data = tempStore();
    const store = await data.open();
    const tenDaysAgo = Date.now() - 10 * 24 * 3_600_000;
    await askControlPlane(store, 'agent-a', 'createSchedule', { agentId: '', prompt: 'missed-daily', cron: '0 3 * * *', at: '', timeZone: 'UTC' }, { schedulesAndJobs: { clock: () => tenDaysAgo } });
    await store.close();
    const serve = await startServe({ dataDir: data.dataDir, agents: agentsFile() });
    const client = clientOf(serve);
    try {
      await model.waitForTurns('missed-daily', 1);
      const [schedule] = (await until(() => client.listSchedules({ agentId: 'agent-a' }), (r) => r.schedules[0]?.firedCount === 1, 'the catch-up firing')).schedules;
      // Ten daily firings fell due in those ten days (eleven if 03:00 UTC passed while serve started);
      // one ran, the rest are missed.
      expect(schedule!.missedCount).toBeGreaterThanOrEqual(9);
      expect(schedule!.missedCount).toBeLessThanOrEqual(10);
      expect(Date.parse(schedule!.nextFireAt)).toBeGreaterThan(Date.now());
      await client.createSchedule({ agentId: 'agent-a', prompt: 'barrier-after-catch-up', at: soon(1_500) });
      await model.waitForTurns('barrier-after-catch-up', 1);
      expect(model.turnsWith('missed-daily')).toHaveLength(1);
    } finally {
      client.close();
    }
    expect(await serve.stop('SIGTERM')).toBe(0);
    data.remove();
  }, 120_000);

  it('a job cannot start a job (its turn has no job tools); a scheduled turn can', async () => {
    const serve = await startServe({ dataDir: join(dir, 'data-spawn'), agents: agentsFile() });
    const client = clientOf(serve);
    try {
      const job = (await client.startJob({ agentId: 'agent-a', prompt: 'spawn-attempt\nCALL job_start {"prompt":"child of a job"}' })).job!;
      const done = await until(() => client.showJob({ agentId: 'agent-a', jobId: job.jobId }), (r) => r.job!.state === JobState.JOB_STATE_SUCCEEDED, 'the spawning job');
      const [first] = model.turnsWith('spawn-attempt');
      expect(first!.tools).not.toContain('job_start');
      expect(first!.tools).toContain('schedule_create');
      expect(done.job!.finalText).toMatch(/unknown_tool|no tool/i);

      await client.createSchedule({ agentId: 'agent-a', prompt: 'scheduled-spawner\nCALL job_start {"prompt":"child of a schedule"}', at: soon(1_000) });
      const { jobs } = await until(
        () => client.listJobs({ agentId: 'agent-a' }),
        (r) => r.jobs.some((j) => j.prompt === 'child of a schedule' && j.state === JobState.JOB_STATE_SUCCEEDED),
        'the job the scheduled turn started',
      );
      expect(model.turnsWith('scheduled-spawner')[0]!.tools).toContain('job_start');
      expect(jobs.filter((j) => j.prompt === 'child of a job')).toEqual([]);
      expect(jobs.filter((j) => j.prompt === 'child of a schedule')).toHaveLength(1);
    } finally {
      client.close();
    }
    expect(await serve.stop('SIGTERM')).toBe(0);
  }, 120_000);

  it("keeps another agent's workflow, schedule and job invisible and untouchable to this agent's tools; a job turn is bounded", async () => {
    // The probe calls destructive tools (job_cancel, schedule_delete, workflow_cancel): no operator here to approve them.
    const serve = await startServe({ dataDir: join(dir, 'data-isolation'), agents: agentsFile(), args: ['--grace-ms', '200', '--job-timeout-ms', '8000', '--approve', 'never'] });
    const client = clientOf(serve);
    try {
      const schedule = (await client.createSchedule({ agentId: 'agent-a', prompt: 'a-daily', cron: '0 3 * * *' })).schedule!;
      const job = (await client.startJob({ agentId: 'agent-a', prompt: 'a-job HANG-FOREVER' })).job!;
      const schema = JSON.stringify({ type: 'object', properties: { task: { type: 'string' } }, required: ['task'], additionalProperties: false });
      const run = (await client.startWorkflow({ agentId: 'agent-a', definition: { name: 'a-flow', maxParallel: 1, tasks: [{ id: 't1', prompt: 'a-flow-task', resultSchemaJson: schema, dependsOn: [], maxAttempts: 1 }] } })).run!;
      const probe = [
        'isolation-probe',
        'CALL schedule_list {}',
        'CALL job_list {}',
        'CALL workflow_list {}',
        `CALL job_show {"job_id":"${job.jobId}"}`,
        `CALL job_cancel {"job_id":"${job.jobId}"}`,
        `CALL schedule_delete {"schedule_id":"${schedule.scheduleId}"}`,
        `CALL workflow_show {"run_id":"${run.runId}"}`,
        `CALL workflow_cancel {"run_id":"${run.runId}"}`,
      ].join('\n');
      // A scheduled turn of agent-b: it has every control-plane tool (a job's own turn has no job tools).
      await client.createSchedule({ agentId: 'agent-b', prompt: probe, at: soon(1_000) });
      await until(() => client.listJobs({ agentId: 'agent-b' }), (r) => r.jobs[0]?.state === JobState.JOB_STATE_SUCCEEDED, 'the probing turn');
      const answer = model.seen.find((request) => request.continuation && request.prompt.startsWith('isolation-probe'))!;
      const [scheduleList, jobList, workflowList, ...refusals] = answer.outputs;
      // agent-b's lists show its own probe schedule and job (whose prompt names agent-a's ids), never agent-a's.
      expect(scheduleList).toContain('isolation-probe');
      expect(scheduleList).not.toContain('a-daily');
      expect(jobList).not.toContain('a-job');
      expect(workflowList).not.toContain('a-flow');
      expect(refusals).toHaveLength(5);
      for (const refusal of refusals) expect(refusal).toContain('not_found');
      // Untouched for its owner.
      expect((await client.listSchedules({ agentId: 'agent-a' })).schedules.map((s) => s.scheduleId)).toEqual([schedule.scheduleId]);
      expect((await client.showJob({ agentId: 'agent-a', jobId: job.jobId })).job!.state).not.toBe(JobState.JOB_STATE_CANCELLED);
      expect((await client.showWorkflow({ agentId: 'agent-a', runId: run.runId })).run!.state).not.toBe(4);
      // A turn that never ends is bounded: the job fails with the reason.
      const timedOut = await until(() => client.showJob({ agentId: 'agent-a', jobId: job.jobId }), (r) => r.job!.state === JobState.JOB_STATE_FAILED, 'the endless job to time out');
      expect(timedOut.job!.error).toContain('ran past its 8000 ms bound');
    } finally {
      client.close();
    }
    expect(await serve.stop('SIGTERM')).toBe(0);
  }, 120_000);

  it('on SIGTERM lets running turns go after the grace, exits 0, and runs them again at the next start', async () => {
    const dataDir = join(dir, 'data-sigterm');
    const agents = agentsFile();
    const first = await startServe({ dataDir, agents, args: ['--grace-ms', '300'] });
    let client = clientOf(first);
    const job = (await client.startJob({ agentId: 'agent-b', prompt: 'graceful HANG-ONCE' })).job!;
    await model.waitForTurns('graceful', 1);
    client.close();
    expect(await first.stop('SIGTERM')).toBe(0);
    const second = await startServe({ dataDir, agents });
    client = clientOf(second);
    try {
      const done = await until(() => client.showJob({ agentId: 'agent-b', jobId: job.jobId }), (r) => r.job!.state === JobState.JOB_STATE_SUCCEEDED, 'the resumed job');
      expect(done.job!.finalText).toBe('done: graceful HANG-ONCE');
      expect(model.turnsWith('graceful')).toHaveLength(2);
    } finally {
      client.close();
    }
    expect(await second.stop('SIGTERM')).toBe(0);
  }, 120_000);

  it('resumes a workflow after the controller is SIGKILLed mid-run: it finishes, no task is committed twice, no committed task runs again', async () => {
    const dataDir = join(dir, 'data-workflow');
    const agents = agentsFile();
    const first = await startServe({ dataDir, agents });
    let client = clientOf(first);
    const schema = JSON.stringify({ type: 'object', properties: { task: { type: 'string' } }, required: ['task'], additionalProperties: false });
    const task = (id: string, prompt: string, dependsOn: string[] = []) => ({ id, prompt, resultSchemaJson: schema, dependsOn, maxAttempts: 2 });
    const run = (
      await client.startWorkflow({
        agentId: 'agent-a',
        definition: { name: 'killed-mid-run', maxParallel: 1, tasks: [task('t1', 'wf-kill-t1'), task('t2', 'wf-kill-t2 HANG-ONCE', ['t1'])] },
      })
    ).run!;
    // t2 starts only once t1 is committed; its first turn never answers.
    await model.waitForTurns('wf-kill-t2', 1);
    const before = (await client.showWorkflow({ agentId: 'agent-a', runId: run.runId })).run!;
    expect(before.tasks.find((t) => t.taskId === 't1')).toMatchObject({ state: 3, attempts: 1 });
    const t1Result = before.tasks.find((t) => t.taskId === 't1')!.resultJson;
    client.close();
    await first.stop('SIGKILL');

    const second = await startServe({ dataDir, agents });
    client = clientOf(second);
    try {
      const after = (await until(() => client.showWorkflow({ agentId: 'agent-a', runId: run.runId }), (r) => r.run!.state !== 1, 'the resumed run to finish')).run!;
      expect(after.state).toBe(2);
      expect(after.tasks.find((t) => t.taskId === 't1')).toMatchObject({ state: 3, attempts: 1, resultJson: t1Result });
      expect(after.tasks.find((t) => t.taskId === 't2')).toMatchObject({ state: 3, attempts: 2 });
      expect(JSON.parse(after.tasks.find((t) => t.taskId === 't2')!.resultJson)).toEqual({ task: 'wf-kill-t2 HANG-ONCE' });
      // Task turns by their own prompt (t2's prompt also quotes t1's committed result).
      const taskTurns = (prompt: string) => model.seen.filter((request) => !request.continuation && request.prompt.startsWith(prompt));
      expect(taskTurns('wf-kill-t1')).toHaveLength(1);
      // The re-run of t2 is a fresh task turn that still sees t1's committed result.
      const t2Turns = taskTurns('wf-kill-t2');
      expect(t2Turns).toHaveLength(2);
      expect(t2Turns[1]!.prompt).toContain('wf-kill-t1');
    } finally {
      client.close();
    }
    expect(await second.stop('SIGTERM')).toBe(0);
  }, 120_000);
});
