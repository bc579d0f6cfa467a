// The schedule and job handlers' options as types only, so the handler context (control-handler.ts)
// can name them without importing the handlers.

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

/** What a `serve` process lends the schedule and job handlers: its runners, limits and clock. */
export interface ScheduleJobHooks {
  limits?: Partial<ScheduleJobLimits>;
  clock?: () => number;
  /** A schedule was created or deleted: the scheduler looks again. */
  onScheduleChanged?: () => void;
  /** A job was queued: the job runner looks again. */
  onJobQueued?: () => void;
  /** A job was cancelled in the store: its turn, if it runs here, is aborted. */
  onJobCancelled?: (jobId: string, reason: string) => void;
}
