/** Where a background job is in its life. */
export type JobStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled';

/** A background job as the store keeps it. Times are epoch milliseconds. */
export interface JobRecord {
  jobId: string;
  agentId: string;
  prompt: string;
  status: JobStatus;
  /** The job turn's final answer, once it finished. */
  finalText: string;
  /** Why it failed or was cancelled. */
  error: string;
  /** Whether the job's turn may start jobs itself: false for `job_start` jobs, true for a schedule's firing. */
  canSpawnJobs: boolean;
  /** The schedule whose firing queued it, if any. */
  scheduleId?: string;
  /** Turns started for it (more than one when a restart resumed it). */
  attempts: number;
  createdAt: number;
  startedAt?: number;
  finishedAt?: number;
}

/** What `insert` stores. */
export interface NewJob {
  jobId: string;
  agentId: string;
  prompt: string;
  canSpawnJobs: boolean;
  createdAt: number;
}

/** How a job's turn ended. */
export interface JobEnding {
  status: 'succeeded' | 'failed';
  finalText: string;
  error: string;
  now: number;
  /** The runner that ran the turn: recorded only while it still holds the job's claim (not when another runner took the job over). */
  owner?: string;
}

/**
 * The background jobs part of the control-plane store. Every method is async so that a server
 * database can implement it; every state change is one transaction.
 */
export interface JobStore {
  /**
   * Queues a new job.
   *
   * @throws ControlPlaneError `limit_exceeded` when the agent already has `maxQueuedPerAgent` jobs
   *   queued or running.
   */
  insert(job: NewJob, limits: { maxQueuedPerAgent: number }): Promise<JobRecord>;
  get(jobId: string): Promise<JobRecord | undefined>;
  /** One agent's jobs (every agent's when `agentId` is undefined), newest first, at most `limit`. */
  list(agentId: string | undefined, limit: number): Promise<JobRecord[]>;
  /**
   * Takes the oldest queued job of one of `agentIds` whose agent runs fewer than
   * `maxRunningPerAgent` jobs, marks it running for `owner` (attempts + 1) with a claim that lasts
   * `leaseMs` from `now` unless renewed, and returns it; undefined when none. A running job whose
   * claim ran out unrenewed (its runner died on another host) is taken first, as a new attempt. One
   * indexed query finds it whatever the number of agents; controllers claiming together never take
   * the same job (SKIP LOCKED on PostgreSQL).
   */
  claimNext(options: { agentIds: string[]; maxRunningPerAgent: number; now: number; owner: string; leaseMs?: number }): Promise<JobRecord | undefined>;
  /**
   * Extends `owner`'s claims on `jobIds` to `now + leaseMs` (one statement) and returns the ids it
   * still holds: a job not returned was cancelled, finished or taken over, and its turn must stop.
   */
  renewClaims(input: { owner: string; jobIds: readonly string[]; leaseMs: number; now: number }): Promise<string[]>;
  /** Records how a running job's turn ended; false (nothing changed) when it is no longer running (or, with `owner`, no longer that runner's). */
  finish(jobId: string, ending: JobEnding): Promise<boolean>;
  /**
   * Cancels a queued or running job and returns it; a finished job is returned unchanged, an
   * unknown one as undefined.
   */
  cancel(jobId: string, reason: string, now: number): Promise<JobRecord | undefined>;
  /** The runners (owners) that have jobs of `agentIds` running. */
  runningOwners(agentIds: string[]): Promise<string[]>;
  /**
   * Puts running jobs of `agentIds` back in the queue when their owner is one of `owners` (runners
   * that stopped or died) or unknown; returns how many.
   */
  requeueRunning(options: { agentIds: string[]; owners: string[] }): Promise<number>;
}
