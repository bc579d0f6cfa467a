import { CompiledQuery, type Transaction } from 'kysely';
import PgBoss from 'pg-boss';
import type { PostgresDatabase } from './postgres-schema.js';

/** The pg-boss queue whose jobs are background-job turns (one per queued job, a schedule firing's included). */
export const JOB_TURN_QUEUE = 'tools-runtime-job-turns';

/** Options of the claims. */
export interface PgBossJobClaimsOptions {
  url: string;
  /** How long a claim lives without being completed before pg-boss expires it and another controller may run the job (default 900 s). */
  expireInSeconds?: number;
  /** How often pg-boss looks for expired claims (default: a third of the expiry, between 1 and 60 s). */
  maintenanceIntervalSeconds?: number;
}

/** One claimed job turn. */
export interface JobTurnClaim {
  /** pg-boss's id of the claim. */
  id: string;
  jobId: string;
}

/**
 * Background-job turns as pg-boss jobs, so that work is claimed, not assigned: each queued job is
 * one pg-boss job (sent in the same transaction as the job's row), claimed with pg-boss's SKIP
 * LOCKED fetch by whichever controller asks first, completed when its turn is recorded, handed back
 * (retried at once) when a controller stops or cannot run it, and expired by pg-boss when a
 * controller dies holding it, after which another controller claims it again. Every pg-boss job has
 * a singleton key (the job, or a schedule firing's (schedule, fire time)), in a `short` queue, so a
 * key is never queued twice.
 */
export class PgBossJobClaims {
  readonly #boss: PgBoss;
  readonly #expireInSeconds: number;

  private constructor(boss: PgBoss, expireInSeconds: number) {
    this.#boss = boss;
    this.#expireInSeconds = expireInSeconds;
  }

  /**
   * Starts pg-boss on the database (its own schema `pgboss`, migrated by pg-boss under its own lock)
   * and creates the queue when missing.
   *
   * @throws Error from pg-boss when the database cannot be reached or migrated.
   */
  static async start(options: PgBossJobClaimsOptions): Promise<PgBossJobClaims> {
    const expireInSeconds = options.expireInSeconds ?? 900;
    const boss = new PgBoss({
      connectionString: options.url,
      max: 3,
      schedule: false,
      supervise: true,
      migrate: true,
      maintenanceIntervalSeconds: options.maintenanceIntervalSeconds ?? Math.min(60, Math.max(1, Math.floor(expireInSeconds / 3))),
      monitorStateIntervalSeconds: 3600,
    });
    // pg-boss reports background failures (a lost connection during maintenance) as events; the
    // next claim or send reports its own error to the caller.
    boss.on('error', () => undefined);
    await boss.start();
    await boss.createQueue(JOB_TURN_QUEUE, { name: JOB_TURN_QUEUE, policy: 'short', retryLimit: 1_000_000, retryDelay: 1, expireInSeconds });
    return new PgBossJobClaims(boss, expireInSeconds);
  }

  /** Queues a job's turn inside the caller's transaction; false when its singleton key is already queued. */
  async enqueue(trx: Transaction<PostgresDatabase>, input: { jobId: string; singletonKey: string }): Promise<boolean> {
    const db = {
      executeSql: async (text: string, values: unknown[]) => ({ rows: (await trx.executeQuery(CompiledQuery.raw(text, values))).rows as unknown[] }),
    };
    const id = await this.#boss.send(JOB_TURN_QUEUE, { jobId: input.jobId }, { singletonKey: input.singletonKey, expireInSeconds: this.#expireInSeconds, db });
    return id !== null;
  }

  /** Claims the next job turn, or undefined when none is queued. */
  async fetch(): Promise<JobTurnClaim | undefined> {
    const [job] = await this.#boss.fetch<{ jobId: string }>(JOB_TURN_QUEUE, { batchSize: 1 });
    return job ? { id: job.id, jobId: job.data.jobId } : undefined;
  }

  /** Ends a claim for good (the job was recorded, or no longer needs a turn). */
  async complete(claimId: string): Promise<void> {
    await this.#boss.complete(JOB_TURN_QUEUE, claimId);
  }

  /** Gives a claim back: the job turn becomes claimable again after pg-boss's retry delay (1 s). */
  async handBack(claimIds: string[]): Promise<void> {
    if (claimIds.length > 0) await this.#boss.fail(JOB_TURN_QUEUE, claimIds);
  }

  /** Stops pg-boss and closes its pool. */
  async stop(): Promise<void> {
    await this.#boss.stop({ graceful: false, wait: true, timeout: 5_000 });
  }
}
