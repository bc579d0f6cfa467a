import { errorMessage, silentLogger, type Logger } from '../../../../src/index.js';
import type { JobRecord, JobStore } from './job-store.js';
import { deadLocalOwners, newRunnerOwner } from '../workflows/runner-owner.js';

/** How a job's turn ended, as the runner records it. */
export interface JobTurnOutcome {
  status: 'succeeded' | 'failed';
  finalText: string;
  error: string;
}

/**
 * Runs one job's text turn. Must settle soon after `signal` aborts (cancel or shutdown). It never
 * needs to touch the store: the runner records the outcome.
 */
export type RunJobTurn = (job: JobRecord, signal: AbortSignal) => Promise<JobTurnOutcome>;

/** Options of the job runner. */
export interface JobRunnerOptions {
  jobs: JobStore;
  /** The agents this runner runs jobs for (the ones it has a sidecar for). */
  agentIds: string[];
  runTurn: RunJobTurn;
  /** Jobs of one agent running at once (default 2); more wait queued. */
  maxRunningPerAgent?: number;
  /** The longest sleep between store checks, so jobs queued or cancelled by another process are seen (default 1 s, at most a third of `leaseMs`). */
  pollMs?: number;
  /**
   * How long a claim on a job lasts unrenewed (default 30 s). The runner renews its claims at every
   * poll; a turn whose claim it could not renew in time is aborted before the claim runs out, so
   * another controller that takes the job over never runs it beside this one.
   */
  leaseMs?: number;
  /** This runner's id in the store (default `host:pid:random`, so a runner on this host sees when its process is gone). */
  owner?: string;
  clock?: () => number;
  logger?: Logger;
}

/** The default cap on one agent's running jobs. */
export const DEFAULT_MAX_RUNNING_JOBS_PER_AGENT = 2;

/** The default life of a job's claim between renewals. */
export const DEFAULT_JOB_LEASE_MS = 30_000;

/** One job whose turn runs here. */
interface RunningJob {
  controller: AbortController;
  done: Promise<void>;
  /** Until when this runner's claim holds for sure (the last renewal's start + the lease). */
  heldUntil: number;
  /** Aborts the turn before `heldUntil` unless a renewal moves it. */
  timer?: NodeJS.Timeout;
  /** Set when the claim is no longer this runner's for sure: the turn is aborted and records nothing. */
  lost?: boolean;
}

/**
 * Runs queued background jobs, each as one text turn, at most `maxRunningPerAgent` per agent. A job
 * is claimed in the store (queued → running, with a lease) before its turn starts, the claim renewed
 * at every poll while it runs, and its outcome recorded when the turn ends. Cancelling a job in the
 * store (here or from another process) aborts its turn at once (here) or within `pollMs` (another
 * process). A turn whose claim was taken over, or could not be renewed before it ran out, is aborted
 * and records nothing: a job never runs twice at once. `start()` puts jobs left running by a stopped
 * or killed controller back in the queue: they run again (at-least-once execution).
 */
export class JobRunner {
  readonly #options: JobRunnerOptions;
  readonly #clock: () => number;
  readonly #owner: string;
  readonly #running = new Map<string, RunningJob>();
  readonly #leaseMs: number;
  readonly #pollMs: number;
  #loop: Promise<void> | undefined;
  #closed = false;
  #wake: (() => void) | undefined;

  constructor(options: JobRunnerOptions) {
    this.#options = options;
    this.#clock = options.clock ?? Date.now;
    this.#owner = options.owner ?? newRunnerOwner();
    this.#leaseMs = options.leaseMs ?? DEFAULT_JOB_LEASE_MS;
    this.#pollMs = Math.max(20, Math.min(options.pollMs ?? 1_000, Math.floor(this.#leaseMs / 3)));
  }

  /**
   * Requeues the jobs of its agents that a runner now gone left running (a stopped or killed
   * controller on this host, or one that recorded no owner), then starts the loop, which does the
   * same at every poll. Jobs held by a live runner, or by one on another host, are left alone.
   * Resolves once started.
   */
  async start(): Promise<{ resumed: number }> {
    if (this.#loop) return { resumed: 0 };
    const resumed = await this.#requeueOrphans();
    this.#loop = this.#run();
    return { resumed };
  }

  async #requeueOrphans(): Promise<number> {
    const { jobs, agentIds } = this.#options;
    const gone = deadLocalOwners((await jobs.runningOwners(agentIds)).filter((owner) => owner !== this.#owner));
    if (gone.length === 0) return 0;
    const resumed = await jobs.requeueRunning({ agentIds, owners: gone });
    if (resumed > 0) this.#options.logger?.info('resuming background jobs a stopped controller left running', { count: resumed });
    return resumed;
  }

  /** Looks for queued work now (a job was queued in this process). */
  wake(): void {
    this.#wake?.();
  }

  /** Aborts the job's turn when it runs here (after the store recorded its cancel). */
  abort(jobId: string, reason: string): void {
    this.#running.get(jobId)?.controller.abort(new Error(reason));
  }

  /** Jobs whose turns run in this process now. */
  get runningCount(): number {
    return this.#running.size;
  }

  /**
   * Stops claiming jobs, lets running turns finish for up to `graceMs` (default 10 s), then aborts
   * the rest and waits (bounded by `abortGraceMs`, default 5 s) for them to settle. Jobs aborted
   * this way stay `running` in the store, so the next `start()` runs them again.
   */
  async close(options: { graceMs?: number; abortGraceMs?: number } = {}): Promise<void> {
    this.#closed = true;
    this.#wake?.();
    await this.#loop;
    const all = () => Promise.all([...this.#running.values()].map((entry) => entry.done));
    if (!(await settlesWithin(all(), options.graceMs ?? 10_000))) {
      for (const entry of this.#running.values()) entry.controller.abort(new Error('the controller is shutting down'));
      await settlesWithin(all(), options.abortGraceMs ?? 5_000);
    }
  }

  async #run(): Promise<void> {
    const logger = this.#options.logger ?? silentLogger;
    const pollMs = this.#pollMs;
    while (!this.#closed) {
      try {
        await this.#renewClaims();
        await this.#requeueOrphans();
        await this.#claimAll();
      } catch (error) {
        logger.error('the job runner could not read the store; retrying', { error: errorMessage(error) });
      }
      if (this.#closed) break;
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.#wake = undefined;
          resolve();
        };
        const timer = setTimeout(done, pollMs);
        this.#wake = done;
      });
    }
  }

  async #claimAll(): Promise<void> {
    const { jobs, agentIds, maxRunningPerAgent = DEFAULT_MAX_RUNNING_JOBS_PER_AGENT } = this.#options;
    while (!this.#closed) {
      const now = this.#clock();
      const job = await jobs.claimNext({ agentIds, maxRunningPerAgent, now, owner: this.#owner, leaseMs: this.#leaseMs });
      if (!job) return;
      // A job claimed again while its earlier turn still winds down here: that turn lost its claim and records nothing.
      this.#lose(this.#running.get(job.jobId), 'the job was claimed again');
      const entry: RunningJob = { controller: new AbortController(), done: Promise.resolve(), heldUntil: now + this.#leaseMs };
      this.#running.set(job.jobId, entry);
      this.#guard(job.jobId, entry);
      entry.done = this.#runJob(job, entry).finally(() => {
        clearTimeout(entry.timer);
        // Only this turn's own entry: a later claim of the same job has its own.
        if (this.#running.get(job.jobId) === entry) this.#running.delete(job.jobId);
        this.wake();
      });
    }
  }

  /**
   * Aborts the turn a margin before its claim would run out unrenewed (a fifth of the lease, at most
   * 2 s): past that, another controller may take the job over.
   */
  #guard(jobId: string, entry: RunningJob): void {
    clearTimeout(entry.timer);
    const margin = Math.min(2_000, Math.floor(this.#leaseMs / 5));
    entry.timer = setTimeout(() => {
      if (entry.controller.signal.aborted) return;
      (this.#options.logger ?? silentLogger).warn('a job turn is stopped: its claim could not be renewed before it ran out; another controller runs the job again', { jobId });
      this.#lose(entry, `the job's claim could not be renewed within its ${this.#leaseMs} ms lease; the turn is stopped so that no other controller runs it at the same time`);
    }, Math.max(0, entry.heldUntil - margin - this.#clock()));
    entry.timer.unref?.();
  }

  /**
   * Renews the claims of the jobs running here (one statement for all of them) and aborts the turns
   * whose claim is gone: cancelled or finished elsewhere, or taken over.
   */
  async #renewClaims(): Promise<void> {
    const entries = [...this.#running].filter(([, entry]) => !entry.controller.signal.aborted);
    if (entries.length === 0) return;
    const now = this.#clock();
    const held = new Set(await this.#options.jobs.renewClaims({ owner: this.#owner, jobIds: entries.map(([jobId]) => jobId), leaseMs: this.#leaseMs, now }));
    for (const [jobId, entry] of entries) {
      if (held.has(jobId)) {
        entry.heldUntil = now + this.#leaseMs;
        this.#guard(jobId, entry);
        continue;
      }
      const job = await this.#options.jobs.get(jobId);
      if (job?.status === 'running') this.#lose(entry, 'the job was taken over by another controller');
      else entry.controller.abort(new Error(job?.error || 'the job was cancelled'));
    }
  }

  #lose(entry: RunningJob | undefined, reason: string): void {
    if (!entry || entry.controller.signal.aborted) return;
    entry.lost = true;
    entry.controller.abort(new Error(reason));
  }

  async #runJob(job: JobRecord, entry: RunningJob): Promise<void> {
    const { controller } = entry;
    const logger = this.#options.logger ?? silentLogger;
    logger.info('job started', { jobId: job.jobId, agentId: job.agentId, attempt: job.attempts });
    let outcome: JobTurnOutcome;
    try {
      outcome = await this.#options.runTurn(job, controller.signal);
    } catch (error) {
      outcome = { status: 'failed', finalText: '', error: errorMessage(error) };
    }
    if (this.#closed && controller.signal.aborted) {
      // Shut down under it: leave it running in the store, so the next start runs it again.
      logger.info('job interrupted by shutdown; it runs again at the next start', { jobId: job.jobId });
      return;
    }
    if (entry.lost) {
      // The claim is (or may soon be) another runner's: whatever this turn did, it records nothing.
      logger.warn('job turn stopped: its claim is no longer this runner\'s', { jobId: job.jobId, reason: errorMessage(controller.signal.reason) });
      return;
    }
    const recorded = await this.#options.jobs.finish(job.jobId, { ...outcome, now: this.#clock(), owner: this.#owner }).catch((error: unknown) => {
      logger.error('could not record a job outcome', { jobId: job.jobId, error: errorMessage(error) });
      return false;
    });
    logger.info('job finished', { jobId: job.jobId, status: recorded ? outcome.status : 'cancelled', ...(outcome.error ? { error: outcome.error } : {}) });
  }
}

async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const settled = await Promise.race([
    promise.then(() => true, () => true),
    new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms))),
  ]);
  clearTimeout(timer);
  return settled;
}
