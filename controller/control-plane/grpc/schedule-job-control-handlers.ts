import { randomUUID } from 'node:crypto';
import { JobState, type Job, type Schedule } from '../../../src/gen/toolruntime/v1/control_plane.js';
import type { ControlContext, ControlHandlers } from './control-handler.js';
import type { ScheduleJobHooks, ScheduleJobLimits } from './schedule-job-hooks.js';
import { ControlPlaneError } from '../domain/control-plane-error.js';
import { nextFireAfter, parseScheduleTiming, type ScheduleTiming } from '../domain/schedules/schedule-timing.js';
import type { JobRecord, JobStatus } from '../domain/jobs/job-store.js';
import type { ScheduleRecord } from '../domain/schedules/schedule-store.js';

export type { ScheduleJobHooks, ScheduleJobLimits } from './schedule-job-hooks.js';

/** The defaults of `ScheduleJobLimits`. */
export const DEFAULT_SCHEDULE_JOB_LIMITS: ScheduleJobLimits = {
  maxSchedulesPerAgent: 50,
  maxActiveJobsPerAgent: 20,
  maxPromptChars: 8_000,
  maxListLimit: 200,
};

/**
 * The schedule and job operations of the control plane (`schedule_*`, `job_*` tools and their
 * ControlPlaneService RPCs), for `answerControlRequest`'s table. The request's `agent_id` is the
 * agent acted for (a turn's own; empty only for an operator, who then sees every agent's). Each
 * throws ControlPlaneError `invalid_request` (bad input, with what to change), `not_found` (no such
 * schedule or job for this agent: another agent's is invisible) or `limit_exceeded`.
 */
export const scheduleJobControlHandlers: ControlHandlers = {
  async createSchedule(request, context) {
    const hooks = hooksOf(context);
    const agentId = requiredAgent(request.agentId);
    const now = clock(hooks);
    const prompt = checkPrompt(hooks, request.prompt);
    const timing = parseScheduleTiming({ cron: request.cron, at: request.at, timeZone: request.timeZone }, now);
    const schedule = await context.store.schedules.create(
      {
        scheduleId: `sch_${randomUUID()}`,
        agentId,
        prompt,
        ...(timing.kind === 'cron' ? { cron: timing.cron } : { at: timing.at }),
        timeZone: timing.timeZone,
        nextFireAt: firstFire(timing, now),
        createdAt: now,
      },
      { maxPerAgent: limits(hooks).maxSchedulesPerAgent },
    );
    hooks.onScheduleChanged?.();
    return { $case: 'createSchedule', value: { schedule: toProtoSchedule(schedule) } };
  },
  async listSchedules(request, context) {
    const schedules = await context.store.schedules.list(request.agentId || undefined, limits(hooksOf(context)).maxListLimit);
    return { $case: 'listSchedules', value: { schedules: schedules.map(toProtoSchedule) } };
  },
  async deleteSchedule(request, context) {
    const found = request.scheduleId.trim() === '' ? undefined : await context.store.schedules.get(request.scheduleId.trim());
    if (!found || (request.agentId !== '' && found.agentId !== request.agentId)) throw notFound('schedule', request.scheduleId, 'schedule_list');
    const deleted = await context.store.schedules.delete(found.scheduleId);
    if (!deleted) throw notFound('schedule', request.scheduleId, 'schedule_list');
    hooksOf(context).onScheduleChanged?.();
    return { $case: 'deleteSchedule', value: { schedule: toProtoSchedule(deleted) } };
  },
  async startJob(request, context) {
    const hooks = hooksOf(context);
    const agentId = requiredAgent(request.agentId);
    const prompt = checkPrompt(hooks, request.prompt);
    const job = await context.store.jobs.insert(
      // A job's own turn may not start jobs: it gets no job tools.
      { jobId: `job_${randomUUID()}`, agentId, prompt, canSpawnJobs: false, createdAt: clock(hooks) },
      { maxQueuedPerAgent: limits(hooks).maxActiveJobsPerAgent },
    );
    hooks.onJobQueued?.();
    return { $case: 'startJob', value: { job: toProtoJob(job) } };
  },
  async listJobs(request, context) {
    const max = limits(hooksOf(context)).maxListLimit;
    const jobs = await context.store.jobs.list(request.agentId || undefined, Math.min(request.limit > 0 ? request.limit : 50, max));
    return { $case: 'listJobs', value: { jobs: jobs.map(toProtoJob) } };
  },
  async showJob(request, context) {
    return { $case: 'showJob', value: { job: toProtoJob(await ownJob(context, request.agentId, request.jobId)) } };
  },
  async cancelJob(request, context) {
    const hooks = hooksOf(context);
    const job = await ownJob(context, request.agentId, request.jobId);
    const reason = request.reason.trim().slice(0, 500) || 'cancelled by request';
    const cancelled = (await context.store.jobs.cancel(job.jobId, `cancelled: ${reason}`, clock(hooks))) ?? job;
    if (job.status === 'queued' || job.status === 'running') hooks.onJobCancelled?.(job.jobId, reason);
    return { $case: 'cancelJob', value: { job: toProtoJob(cancelled) } };
  },
};

/** The schedule as ControlPlaneService and the tools show it. */
export function toProtoSchedule(schedule: ScheduleRecord): Schedule {
  return {
    scheduleId: schedule.scheduleId,
    agentId: schedule.agentId,
    prompt: schedule.prompt,
    cron: schedule.cron ?? '',
    at: schedule.at ?? '',
    timeZone: schedule.timeZone,
    nextFireAt: iso(schedule.nextFireAt),
    lastFiredAt: iso(schedule.lastFiredAt),
    firedCount: schedule.firedCount,
    missedCount: schedule.missedCount,
    createdAt: iso(schedule.createdAt),
  };
}

const jobStates: Record<JobStatus, JobState> = {
  queued: JobState.JOB_STATE_QUEUED,
  running: JobState.JOB_STATE_RUNNING,
  succeeded: JobState.JOB_STATE_SUCCEEDED,
  failed: JobState.JOB_STATE_FAILED,
  cancelled: JobState.JOB_STATE_CANCELLED,
};

/** The job as ControlPlaneService and the tools show it. */
export function toProtoJob(job: JobRecord): Job {
  return {
    jobId: job.jobId,
    agentId: job.agentId,
    prompt: job.prompt,
    state: jobStates[job.status],
    finalText: job.finalText,
    error: job.error,
    createdAt: iso(job.createdAt),
    startedAt: iso(job.startedAt),
    finishedAt: iso(job.finishedAt),
  };
}

const iso = (ms: number | undefined) => (ms === undefined ? '' : new Date(ms).toISOString());

const hooksOf = (context: ControlContext): ScheduleJobHooks => context.hooks.schedulesAndJobs ?? {};
const clock = (hooks: ScheduleJobHooks) => (hooks.clock ?? Date.now)();
const limits = (hooks: ScheduleJobHooks): ScheduleJobLimits => ({ ...DEFAULT_SCHEDULE_JOB_LIMITS, ...hooks.limits });

function requiredAgent(agentId: string): string {
  if (agentId.trim() === '') throw new ControlPlaneError('invalid_request', 'agent_id is required: name the agent to act for');
  return agentId.trim();
}

function checkPrompt(hooks: ScheduleJobHooks, prompt: string): string {
  const trimmed = prompt.trim();
  if (trimmed === '') throw new ControlPlaneError('invalid_request', 'the prompt is empty: say what the turn should do');
  const max = limits(hooks).maxPromptChars;
  if (trimmed.length > max) throw new ControlPlaneError('invalid_request', `the prompt has ${trimmed.length} characters; at most ${max} are allowed`);
  return trimmed;
}

async function ownJob(context: ControlContext, agentId: string, jobId: string): Promise<JobRecord> {
  const job = jobId.trim() === '' ? undefined : await context.store.jobs.get(jobId.trim());
  if (!job || (agentId !== '' && job.agentId !== agentId)) throw notFound('job', jobId, 'job_list');
  return job;
}

function notFound(kind: string, id: string, listTool: string): ControlPlaneError {
  return new ControlPlaneError('not_found', `no ${kind} "${id}" for this agent; ${listTool} shows the ones there are`);
}

function firstFire(timing: ScheduleTiming, now: number): number {
  if (timing.kind === 'at') return timing.atMs;
  const next = nextFireAfter(timing, now);
  // parseScheduleTiming checked that the expression fires; this is for a clock that moved since.
  if (next === undefined) throw new ControlPlaneError('invalid_request', `the cron expression "${timing.cron}" never fires`);
  return next;
}
