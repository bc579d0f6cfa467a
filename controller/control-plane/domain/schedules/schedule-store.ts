import type { JobRecord } from '../jobs/job-store.js';

/** A schedule as the store keeps it. Times are epoch milliseconds. */
export interface ScheduleRecord {
  scheduleId: string;
  agentId: string;
  /** The prompt of the text turn each firing starts. */
  prompt: string;
  /** Exactly one of `cron` and `at` is set. */
  cron?: string;
  /** The one-off time as given (ISO 8601). */
  at?: string;
  timeZone: string;
  /** The next firing; undefined when none is left (a one-off that fired). */
  nextFireAt?: number;
  lastFiredAt?: number;
  firedCount: number;
  /** Firings that fell due while no controller ran and were folded into one catch-up firing. */
  missedCount: number;
  createdAt: number;
}

/** What `create` stores. */
export interface NewSchedule {
  scheduleId: string;
  agentId: string;
  prompt: string;
  cron?: string;
  at?: string;
  timeZone: string;
  nextFireAt: number;
  createdAt: number;
}

/** A firing to claim: the schedule's due time, and what the schedule becomes once it fired. */
export interface FiringClaim {
  scheduleId: string;
  /** The `nextFireAt` the scheduler saw due; the claim fails when it changed meanwhile. */
  fireAt: number;
  /** The firing after this one (undefined when none is left). */
  nextFireAt: number | undefined;
  /** Later firings that were also due and are folded into this one. */
  missed: number;
  now: number;
  /** The background job that runs the firing's text turn. */
  jobId: string;
  /**
   * When the agent already has this many jobs queued or running, the firing queues no job: it is
   * counted as missed (the schedule still advances), so a fast schedule cannot grow the queue.
   */
  maxActiveJobsPerAgent: number;
}

/**
 * The schedules part of the control-plane store. Every method is async so that a server database
 * can implement it; every state change is one transaction.
 */
export interface ScheduleStore {
  /**
   * Stores a new schedule.
   *
   * @throws ControlPlaneError `limit_exceeded` when the agent already has `maxPerAgent` schedules
   *   with a firing left (one-off schedules that fired do not count).
   */
  create(schedule: NewSchedule, limits: { maxPerAgent: number }): Promise<ScheduleRecord>;
  /** One agent's schedules (every agent's when `agentId` is undefined), oldest first. */
  list(agentId: string | undefined, limit: number): Promise<ScheduleRecord[]>;
  get(scheduleId: string): Promise<ScheduleRecord | undefined>;
  /** Deletes the schedule and returns it as it was; undefined when there is none. Its firings' jobs are kept. */
  delete(scheduleId: string): Promise<ScheduleRecord | undefined>;
  /** The earliest `nextFireAt` of the schedules of `agentIds` (every agent's when undefined), or undefined when none is left. */
  nextDueAt(agentIds?: readonly string[]): Promise<number | undefined>;
  /** Schedules of `agentIds` (every agent's when undefined) due at `now` (nextFireAt <= now), earliest first, at most `limit`. */
  listDue(now: number, limit: number, agentIds?: readonly string[]): Promise<ScheduleRecord[]>;
  /**
   * Claims one firing, in one transaction: records the (schedule, fire time) firing (unique, so a
   * firing is claimed at most once whatever restarts or races happen), advances the schedule, and
   * queues the background job that runs the firing's turn. Undefined when it was claimed already,
   * the schedule moved on or was deleted, or the agent's job queue was full (then the firing is
   * recorded and counted as missed).
   */
  claimFiring(claim: FiringClaim): Promise<JobRecord | undefined>;
}
