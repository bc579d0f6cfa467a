import { randomUUID } from 'node:crypto';
import { errorMessage, silentLogger, type Logger } from '../../../../src/index.js';
import type { JobRecord } from '../jobs/job-store.js';
import type { ScheduleRecord, ScheduleStore } from './schedule-store.js';
import { catchUp, type ScheduleTiming } from './schedule-timing.js';

/** One claimed firing, handed to `onFired`. */
export interface Firing {
  scheduleId: string;
  /** When it was due (epoch ms). */
  fireAt: number;
  /** When it was claimed (epoch ms): `claimedAt - fireAt` is its lateness. */
  claimedAt: number;
  /** Later firings folded into this one (missed while no controller ran). */
  missed: number;
  /** The queued background job that runs the firing's turn. */
  job: JobRecord;
}

/** Options of the scheduler. */
export interface SchedulerOptions {
  schedules: ScheduleStore;
  /** Only these agents' schedules fire here (the ones this process can run turns for); every agent's when absent. */
  agentIds?: readonly string[];
  /** Called once per claimed firing (after its claim is committed); typically wakes the job runner. */
  onFired: (firing: Firing) => void;
  /** The longest sleep between store checks, so schedules written by another process are seen (default 1 s). */
  pollMs?: number;
  /** A firing finding this many of its agent's jobs queued or running is counted as missed (default 20). */
  maxActiveJobsPerAgent?: number;
  /** Firings claimed per store query (default 100). */
  batchSize?: number;
  clock?: () => number;
  newJobId?: () => string;
  logger?: Logger;
}

/** The timing of a stored schedule. */
export function scheduleTiming(schedule: ScheduleRecord): ScheduleTiming {
  if (schedule.cron !== undefined) return { kind: 'cron', cron: schedule.cron, timeZone: schedule.timeZone };
  return { kind: 'at', at: schedule.at ?? '', timeZone: schedule.timeZone, atMs: schedule.nextFireAt ?? 0 };
}

/**
 * Fires due schedules: sleeps until the earliest `nextFireAt` in the store (at most `pollMs`),
 * claims each due firing in the store (one transaction: the unique firing row, the schedule
 * advanced, its job queued) and only then hands it to `onFired`. A firing that another process
 * claimed, or that a restart already claimed, is never handed out again. When several firings of a
 * cron schedule fell due (the controller was down), one catch-up firing runs and the others are
 * counted as missed. Store errors are logged and retried after `pollMs`; they never stop the loop.
 */
export class Scheduler {
  readonly #options: SchedulerOptions;
  readonly #clock: () => number;
  #running: Promise<void> | undefined;
  #closed = false;
  #wake: (() => void) | undefined;

  constructor(options: SchedulerOptions) {
    this.#options = options;
    this.#clock = options.clock ?? Date.now;
  }

  /** Starts the loop (idempotent). */
  start(): void {
    this.#running ??= this.#loop();
  }

  /** Checks the store now (a schedule was created or deleted in this process). */
  wake(): void {
    this.#wake?.();
  }

  /** Claims every firing due now; returns them (the loop calls it; tests may too). */
  async fireDue(): Promise<Firing[]> {
    const { schedules, batchSize = 100, newJobId = () => `job_${randomUUID()}` } = this.#options;
    const fired: Firing[] = [];
    for (;;) {
      const now = this.#clock();
      const due = await schedules.listDue(now, batchSize, this.#options.agentIds);
      for (const schedule of due) {
        if (this.#closed || schedule.nextFireAt === undefined) continue;
        const fireAt = schedule.nextFireAt;
        const { missed, nextFireAt } = catchUp(scheduleTiming(schedule), fireAt, now);
        const job = await schedules.claimFiring({
          scheduleId: schedule.scheduleId,
          fireAt,
          nextFireAt,
          missed,
          now,
          jobId: newJobId(),
          maxActiveJobsPerAgent: this.#options.maxActiveJobsPerAgent ?? 20,
        });
        if (!job) continue;
        const firing: Firing = { scheduleId: schedule.scheduleId, fireAt, claimedAt: now, missed, job };
        fired.push(firing);
        this.#options.logger?.info('schedule fired', { scheduleId: schedule.scheduleId, agentId: schedule.agentId, fireAt: new Date(fireAt).toISOString(), lateMs: now - fireAt, missed, jobId: job.jobId });
        this.#options.onFired(firing);
      }
      if (due.length < batchSize || this.#closed) return fired;
    }
  }

  /** Stops the loop; resolves when it has stopped. Firings already handed out are the job runner's. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#wake?.();
    await this.#running;
  }

  async #loop(): Promise<void> {
    const logger = this.#options.logger ?? silentLogger;
    const pollMs = this.#options.pollMs ?? 1_000;
    while (!this.#closed) {
      let delay = pollMs;
      try {
        await this.fireDue();
        const next = await this.#options.schedules.nextDueAt(this.#options.agentIds);
        if (next !== undefined) delay = Math.min(pollMs, Math.max(0, next - this.#clock()));
      } catch (error) {
        logger.error('the scheduler could not read the store; retrying', { error: errorMessage(error) });
      }
      if (this.#closed) break;
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.#wake = undefined;
          resolve();
        };
        const timer = setTimeout(done, delay);
        this.#wake = done;
      });
    }
  }
}
