import { randomUUID } from 'node:crypto';
import { ToolRuntimeError } from '../../src/index.js';
import {
  JobState,
  type ControlReply,
  type ControlRequest,
  type Job,
  type Schedule,
} from '../../src/gen/toolruntime/v1/control_plane.js';
import { nextFireAfter, parseScheduleTiming, type ScheduleTiming } from './schedules/schedule-timing.js';
import type { JobRecord, JobStatus, JobStore } from './store/job-store.js';
import type { ScheduleRecord, ScheduleStore } from './store/schedule-store.js';

/** Bounds on what agents (and operators) may ask of the schedules and jobs. */
export interface ScheduleJobLimits {
  /** Schedules one agent may have (default 50). */
  maxSchedulesPerAgent: number;
  /** Jobs one agent may have queued or running (default 20). */
  maxActiveJobsPerAgent: number;
  /** Characters in a schedule's or job's prompt (default 8,000). */
  maxPromptChars: number;
  /** Most rows a list returns (default 200; a request's `limit` 0 means 50). */
  maxListLimit: number;
}

/** The defaults of `ScheduleJobLimits`. */
export const DEFAULT_SCHEDULE_JOB_LIMITS: ScheduleJobLimits = {
  maxSchedulesPerAgent: 50,
  maxActiveJobsPerAgent: 20,
  maxPromptChars: 8_000,
  maxListLimit: 200,
};

/** What the schedule and job handlers work with; the hooks are a `serve` process's runners. */
export interface ScheduleJobContext {
  schedules: ScheduleStore;
  jobs: JobStore;
  limits?: Partial<ScheduleJobLimits>;
  clock?: () => number;
  /** A schedule was created or deleted: the scheduler looks again. */
  onScheduleChanged?: () => void;
  /** A job was queued: the job runner looks again. */
  onJobQueued?: () => void;
  /** A job was cancelled in the store: its turn, if it runs here, is aborted. */
  onJobCancelled?: (jobId: string, reason: string) => void;
}

/**
 * Who asks: the agent whose turn sent the request (it sees and touches only its own schedules and
 * jobs), or `undefined` for an operator (ControlPlaneService), who names the agent in the request.
 */
export type ActingAgent = string | undefined;

type ScheduleJobCase = 'createSchedule' | 'listSchedules' | 'deleteSchedule' | 'startJob' | 'listJobs' | 'showJob' | 'cancelJob';
type RequestOf<C extends ScheduleJobCase> = Extract<NonNullable<ControlRequest['request']>, { $case: C }>['value'];
type ReplyOf<C extends ScheduleJobCase> = Extract<NonNullable<ControlReply['reply']>, { $case: C }>['value'];

/** One handler per schedule and job operation, keyed like `ControlRequest.request.$case`. */
export type ScheduleJobHandlers = {
  [C in ScheduleJobCase]: (context: ScheduleJobContext, acting: ActingAgent, request: RequestOf<C>) => Promise<ReplyOf<C>>;
};

/**
 * The schedule and job operations of the control plane (`schedule_*`, `job_*` tools and their
 * ControlPlaneService RPCs). Each throws ToolRuntimeError `invalid_request` (bad input, with what
 * to change), `not_found` (no such schedule or job for this agent: another agent's is invisible),
 * `permission_denied` (a turn naming another agent) or `limit_exceeded`; the caller turns it into
 * a ControlError or a gRPC status.
 */
export const scheduleJobHandlers: ScheduleJobHandlers = {
  async createSchedule(context, acting, request) {
    const agentId = agentFor(acting, request.agentId, true)!;
    const now = (context.clock ?? Date.now)();
    const prompt = checkPrompt(context, request.prompt);
    const timing = parseScheduleTiming({ cron: request.cron, at: request.at, timeZone: request.timeZone }, now);
    const schedule = await context.schedules.create(
      {
        scheduleId: `sch_${randomUUID()}`,
        agentId,
        prompt,
        ...(timing.kind === 'cron' ? { cron: timing.cron } : { at: timing.at }),
        timeZone: timing.timeZone,
        nextFireAt: firstFire(timing, now),
        createdAt: now,
      },
      { maxPerAgent: limits(context).maxSchedulesPerAgent },
    );
    context.onScheduleChanged?.();
    return { schedule: toProtoSchedule(schedule) };
  },
  async listSchedules(context, acting, request) {
    const agentId = agentFor(acting, request.agentId, false);
    const schedules = await context.schedules.list(agentId, limits(context).maxListLimit);
    return { schedules: schedules.map(toProtoSchedule) };
  },
  async deleteSchedule(context, acting, request) {
    const agentId = agentFor(acting, request.agentId, false);
    const found = await context.schedules.get(request.scheduleId);
    if (!found || (agentId !== undefined && found.agentId !== agentId)) throw notFound('schedule', request.scheduleId, 'schedule_list');
    const deleted = await context.schedules.delete(found.scheduleId);
    if (!deleted) throw notFound('schedule', request.scheduleId, 'schedule_list');
    context.onScheduleChanged?.();
    return { schedule: toProtoSchedule(deleted) };
  },
  async startJob(context, acting, request) {
    const agentId = agentFor(acting, request.agentId, true)!;
    const prompt = checkPrompt(context, request.prompt);
    const job = await context.jobs.insert(
      // A job's own turn may not start jobs: no job tools there.
      { jobId: `job_${randomUUID()}`, agentId, prompt, canSpawnJobs: false, createdAt: (context.clock ?? Date.now)() },
      { maxQueuedPerAgent: limits(context).maxActiveJobsPerAgent },
    );
    context.onJobQueued?.();
    return { job: toProtoJob(job) };
  },
  async listJobs(context, acting, request) {
    const agentId = agentFor(acting, request.agentId, false);
    const jobs = await context.jobs.list(agentId, listLimit(context, request.limit));
    return { jobs: jobs.map(toProtoJob) };
  },
  async showJob(context, acting, request) {
    return { job: toProtoJob(await ownJob(context, acting, request.agentId, request.jobId)) };
  },
  async cancelJob(context, acting, request) {
    const job = await ownJob(context, acting, request.agentId, request.jobId);
    const reason = request.reason.trim().slice(0, 500) || 'cancelled';
    const now = (context.clock ?? Date.now)();
    const cancelled = (await context.jobs.cancel(job.jobId, `cancelled: ${reason}`, now)) ?? job;
    if (job.status === 'queued' || job.status === 'running') context.onJobCancelled?.(job.jobId, reason);
    return { job: toProtoJob(cancelled) };
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

const limits = (context: ScheduleJobContext): ScheduleJobLimits => ({ ...DEFAULT_SCHEDULE_JOB_LIMITS, ...context.limits });

function listLimit(context: ScheduleJobContext, requested: number): number {
  return Math.min(requested > 0 ? requested : 50, limits(context).maxListLimit);
}

/** The agent a request acts for; `required` for operations that create something. */
function agentFor(acting: ActingAgent, requested: string, required: boolean): string | undefined {
  const named = requested.trim();
  if (acting !== undefined) {
    if (named !== '' && named !== acting) {
      throw new ToolRuntimeError('permission_denied', `this turn acts for agent ${acting} and cannot act for agent ${named}; leave agent_id empty`);
    }
    return acting;
  }
  if (named === '' && required) throw new ToolRuntimeError('invalid_request', 'agent_id is required: name the agent to act for');
  return named === '' ? undefined : named;
}

function checkPrompt(context: ScheduleJobContext, prompt: string): string {
  const trimmed = prompt.trim();
  if (trimmed === '') throw new ToolRuntimeError('invalid_request', 'the prompt is empty: say what the turn should do');
  const max = limits(context).maxPromptChars;
  if (trimmed.length > max) throw new ToolRuntimeError('invalid_request', `the prompt has ${trimmed.length} characters; at most ${max} are allowed`);
  return trimmed;
}

async function ownJob(context: ScheduleJobContext, acting: ActingAgent, requested: string, jobId: string): Promise<JobRecord> {
  const agentId = agentFor(acting, requested, false);
  const job = jobId.trim() === '' ? undefined : await context.jobs.get(jobId.trim());
  if (!job || (agentId !== undefined && job.agentId !== agentId)) throw notFound('job', jobId, 'job_list');
  return job;
}

function notFound(kind: string, id: string, listTool: string): ToolRuntimeError {
  return new ToolRuntimeError('not_found', `no ${kind} "${id}" for this agent; ${listTool} shows the ones there are`);
}

function firstFire(timing: ScheduleTiming, now: number): number {
  if (timing.kind === 'at') return timing.atMs;
  const next = nextFireAfter(timing, now);
  // parseScheduleTiming checked that the expression fires; this is for a clock that moved since.
  if (next === undefined) throw new ToolRuntimeError('invalid_request', `the cron expression "${timing.cron}" never fires`);
  return next;
}
