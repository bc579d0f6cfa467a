import { CompiledQuery, type Transaction } from 'kysely';
import pg from 'pg';
import PgBoss from 'pg-boss';
import type { PostgresDatabase } from './postgres-schema.js';

/** The pg-boss queue whose jobs are background-job turns (one per queued job, a schedule firing's included). */
export const JOB_TURN_QUEUE = 'tools-runtime-job-turns';
/** The pg-boss queue whose jobs are workflow task attempts (one per queued or running attempt). */
export const TASK_ATTEMPT_QUEUE = 'tools-runtime-task-attempts';

/** Options of the claims. */
export interface PgBossClaimsOptions {
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

/** One claimed workflow task attempt. */
export interface TaskAttemptClaim {
  /** pg-boss's id of the claim (the same id across pg-boss's retries of it). */
  id: string;
  runId: string;
  taskId: string;
}

/**
 * How long a queued pg-boss job is kept before pg-boss archives it unclaimed (its default is 14
 * days). A queued job turn or task attempt is the only record that work is waiting, so it must not
 * age out while, say, no controller serves its agent: ten years.
 */
const QUEUED_RETENTION_DAYS = 3650;

/**
 * The advisory lock a controller holds while it creates pg-boss queues. pg-boss serialises only its
 * own schema install: two `pgboss.create_queue` calls at once deadlock (each inserts its queue row,
 * then adds a foreign key to the queue table, which waits for the other's insert), so controllers
 * started together on a fresh database failed about one start in nine. Distinct from the store's
 * migration lock.
 */
const QUEUE_CREATION_LOCK = 0x746f6f71; // 'tooq'
/** How long creating queues waits for another controller's creation (it takes milliseconds). */
const QUEUE_LOCK_TIMEOUT = '60s';
/** Tries of one queue creation that PostgreSQL ends as a deadlock victim (SQLSTATE 40P01). */
const DEADLOCK_TRIES = 5;

/** Runs pg-boss's SQL inside the caller's Kysely transaction. */
function inTransaction(trx: Transaction<PostgresDatabase>) {
  return { executeSql: async (text: string, values: unknown[]) => ({ rows: (await trx.executeQuery(CompiledQuery.raw(text, values))).rows as unknown[] }) };
}

/**
 * The control plane's work as pg-boss jobs, so that work is claimed, not assigned. Workflow task
 * attempts: each queued attempt is one pg-boss job, sent in the transaction that made the task
 * ready, fetched (SKIP LOCKED) by whichever controller asks first, completed or cancelled in the
 * transaction that ends the attempt, and expired by pg-boss when its controller dies, after which
 * another controller fetches it again and runs a new attempt. Background-job turns: each queued job is
 * one pg-boss job (sent in the same transaction as the job's row), claimed with pg-boss's SKIP
 * LOCKED fetch by whichever controller asks first, completed when its turn is recorded, handed back
 * (retried at once) when a controller stops or cannot run it, and expired by pg-boss when a
 * controller dies holding it, after which another controller claims it again. Every pg-boss job has
 * a singleton key (the job, or a schedule firing's (schedule, fire time)), in a `short` queue, so a
 * key is never queued twice.
 */
export class PgBossClaims {
  readonly #boss: PgBoss;
  readonly #expireInSeconds: number;
  readonly #url: string;
  /** Queues known to exist (queues are never deleted), or being created by this process. */
  readonly #queues = new Map<string, Promise<void>>();

  private constructor(boss: PgBoss, expireInSeconds: number, url: string) {
    this.#boss = boss;
    this.#expireInSeconds = expireInSeconds;
    this.#url = url;
  }

  /**
   * Starts pg-boss on the database (its own schema `pgboss`, migrated by pg-boss under its own lock)
   * and creates the queues when missing (under an advisory lock, so controllers started together do
   * not deadlock).
   *
   * @throws Error from pg-boss when the database cannot be reached or migrated, or the queues
   *   cannot be created within 60 s.
   */
  static async start(options: PgBossClaimsOptions): Promise<PgBossClaims> {
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
    const claims = new PgBossClaims(boss, expireInSeconds, options.url);
    try {
      await claims.#ensureQueues([JOB_TURN_QUEUE, TASK_ATTEMPT_QUEUE]);
    } catch (cause) {
      await claims.stop().catch(() => undefined);
      throw cause;
    }
    return claims;
  }

  /**
   * Creates the queues that do not exist yet. The advisory lock is the fix for controllers started
   * together (a retry alone would redo the DDL under contention each time); the bounded retry on a
   * deadlock covers creations by processes that do not take the lock (an older controller during a
   * rolling upgrade) and pg-boss's own maintenance.
   */
  async #ensureQueues(names: readonly string[]): Promise<void> {
    await Promise.all(
      names.map((name) => {
        let known = this.#queues.get(name);
        if (!known) {
          known = this.#createQueue(name);
          this.#queues.set(name, known);
          // A failed creation is tried again by the next caller.
          known.catch(() => this.#queues.delete(name));
        }
        return known;
      }),
    );
  }

  async #createQueue(name: string): Promise<void> {
    if (await this.#boss.getQueue(name)) return;
    // The lock lives on a session of its own: pg-boss runs createQueue on its pool, and the session
    // ending (also when this process dies) releases it.
    const lock = new pg.Client({ connectionString: this.#url, connectionTimeoutMillis: 15_000 });
    lock.on('error', () => undefined); // a lost session fails the query below
    await lock.connect();
    try {
      await lock.query(`SET lock_timeout = '${QUEUE_LOCK_TIMEOUT}'`);
      await lock.query('SELECT pg_advisory_lock($1)', [QUEUE_CREATION_LOCK]);
      for (let attempt = 1; ; attempt++) {
        try {
          await this.#boss.createQueue(name, { name, policy: 'short', retryLimit: 1_000_000, retryDelay: 1, expireInSeconds: this.#expireInSeconds });
          return;
        } catch (error) {
          if ((error as { code?: unknown }).code !== '40P01' || attempt >= DEADLOCK_TRIES) throw error;
          await new Promise((resolve) => setTimeout(resolve, 50 * attempt + Math.random() * 50));
        }
      }
    } finally {
      await lock.end().catch(() => undefined);
    }
  }

  /** Queues a job's turn inside the caller's transaction; false when its singleton key is already queued. */
  async enqueue(trx: Transaction<PostgresDatabase>, input: { jobId: string; singletonKey: string }): Promise<boolean> {
    const id = await this.#boss.send(JOB_TURN_QUEUE, { jobId: input.jobId }, { singletonKey: input.singletonKey, expireInSeconds: this.#expireInSeconds, retentionDays: QUEUED_RETENTION_DAYS, db: inTransaction(trx) });
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

  /** How long a claim lives before pg-boss expires it (s). */
  get expireInSeconds(): number {
    return this.#expireInSeconds;
  }

  /**
   * Queues a task's next attempt inside the caller's transaction and returns the claim's id.
   *
   * @throws Error when the task already has a queued attempt (its singleton key): the store's
   *   bookkeeping would be wrong.
   */
  async enqueueTask(trx: Transaction<PostgresDatabase>, input: { runId: string; taskId: string }): Promise<string> {
    const id = await this.#boss.send(TASK_ATTEMPT_QUEUE, { runId: input.runId, taskId: input.taskId }, {
      singletonKey: `task:${input.runId}:${input.taskId}`,
      expireInSeconds: this.#expireInSeconds,
      retentionDays: QUEUED_RETENTION_DAYS,
      db: inTransaction(trx),
    });
    if (id === null) throw new Error(`task ${input.taskId} of run ${input.runId} already has a queued attempt`);
    return id;
  }

  /** Claims the next queued task attempt, or undefined when none is queued. */
  async fetchTask(): Promise<TaskAttemptClaim | undefined> {
    const [job] = await this.#boss.fetch<{ runId: string; taskId: string }>(TASK_ATTEMPT_QUEUE, { batchSize: 1 });
    return job ? { id: job.id, runId: job.data.runId, taskId: job.data.taskId } : undefined;
  }

  /** Ends task attempt claims for good, inside the caller's transaction (queued ones are cancelled, active ones completed). */
  async endTasks(trx: Transaction<PostgresDatabase>, claimIds: string[]): Promise<void> {
    if (claimIds.length === 0) return;
    const db = inTransaction(trx);
    // (pg-boss 10's complete() takes an id list only without options at run time, so one call per id.)
    for (const id of claimIds) await this.#boss.complete(TASK_ATTEMPT_QUEUE, id, {}, { db });
    await this.#boss.cancel(TASK_ATTEMPT_QUEUE, claimIds, { db });
  }

  /** Gives task attempt claims back: claimable again after pg-boss's retry delay (1 s). */
  async handBackTasks(claimIds: string[]): Promise<void> {
    if (claimIds.length > 0) await this.#boss.fail(TASK_ATTEMPT_QUEUE, claimIds);
  }

  /** Stops pg-boss and closes its pool. */
  async stop(): Promise<void> {
    await this.#boss.stop({ graceful: false, wait: true, timeout: 5_000 });
  }
}
