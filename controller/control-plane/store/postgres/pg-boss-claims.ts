import { CompiledQuery, type Transaction } from 'kysely';
import pg from 'pg';
import PgBoss from 'pg-boss';
import type { StoreDatabase } from '../store-schema.js';

import { createHash } from 'node:crypto';

/**
 * The prefix of the pg-boss queues whose jobs are background-job turns: one queue per agent
 * (`tools-runtime-job-turns.AGENT`), so a controller fetches only the turns of agents it serves.
 * The bare name is the queue every agent shared before (still drained: see `fetchLegacy`).
 */
export const JOB_TURN_QUEUE = 'tools-runtime-job-turns';
/** The prefix of the per-agent pg-boss queues of workflow task attempts (and the old shared queue's name). */
export const TASK_ATTEMPT_QUEUE = 'tools-runtime-task-attempts';

/**
 * The queue of `agentId`'s work of one kind. An agents file's ids (letters, digits, `.`, `_`, `-`,
 * at most 128) are used as they are; any other id by a hash of it, after `~`, which no plain id has.
 */
export function agentQueue(prefix: typeof JOB_TURN_QUEUE | typeof TASK_ATTEMPT_QUEUE, agentId: string): string {
  return /^[A-Za-z0-9._-]{1,128}$/.test(agentId) ? `${prefix}.${agentId}` : `${prefix}.~${createHash('sha256').update(agentId).digest('hex').slice(0, 32)}`;
}

/** Options of the claims. */
export interface PgBossClaimsOptions {
  url: string;
  /** How long a claim lives without being completed before pg-boss expires it and another controller may run the job (default 900 s). */
  expireInSeconds?: number;
  /** How often pg-boss looks for expired claims (default: a third of the expiry, between 1 and 60 s). */
  maintenanceIntervalSeconds?: number;
  /** Called with each failure pg-boss reports as an event (a lost connection during maintenance); the default drops them. */
  onError?: (error: unknown) => void;
}

/** A claim's pg-boss job: its id and its queue (pg-boss addresses a job by both). */
export interface QueuedJob {
  /** pg-boss's id of the claim (the same id across pg-boss's retries of it). */
  id: string;
  queue: string;
}

/** One claimed job turn. */
export interface JobTurnClaim extends QueuedJob {
  jobId: string;
}

/** One claimed workflow task attempt. */
export interface TaskAttemptClaim extends QueuedJob {
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
function inTransaction(trx: Transaction<StoreDatabase>) {
  return { executeSql: async (text: string, values: unknown[]) => ({ rows: (await trx.executeQuery(CompiledQuery.raw(text, values))).rows as unknown[] }) };
}

/**
 * The control plane's work as pg-boss jobs, so that work is claimed, not assigned. Each agent has
 * its own queues, so a controller fetches only work it can serve: on one shared queue every
 * controller fetched other agents' work and handed it back, and as pg-boss counts each hand-back
 * as a retry, work for an agent no controller served ran out of retries and was stuck for good. Workflow task
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
  /** This process's queue creations, one batch after another (see `#ensureQueues`). */
  #creations: Promise<void> = Promise.resolve();
  /** The batch that has not started yet, and the names it will create. */
  #nextBatch: Promise<void> | undefined;
  readonly #waiting = new Set<string>();
  /** Queues seen to exist (created here or by another controller); queues are never deleted. */
  readonly #existing = new Set<string>();
  /** The old shared queues that exist on this database (created by an earlier version), still to be drained. */
  readonly #legacy = new Set<string>();
  /** Where the next fetch over several queues starts, so one busy agent does not starve the others. */
  #turn = 0;

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
    // pg-boss reports background failures (a lost connection during maintenance) as events; without
    // a listener they would crash the process. The next claim or send reports its own error to its caller.
    boss.on('error', options.onError ?? (() => undefined));
    await boss.start();
    const claims = new PgBossClaims(boss, expireInSeconds, options.url);
    try {
      for (const legacy of [JOB_TURN_QUEUE, TASK_ATTEMPT_QUEUE]) if (await boss.getQueue(legacy)) claims.#legacy.add(legacy);
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
   * rolling upgrade) and pg-boss's own maintenance. The names missing at one call are created as one
   * batch, and this process's batches one after another: each batch holds one session for the lock,
   * where one per queue, all at once, ran a controller serving 120 agents out of PostgreSQL's
   * connections ("sorry, too many clients already").
   */
  async #ensureQueues(names: readonly string[]): Promise<void> {
    const missing = names.filter((name) => !this.#queues.has(name));
    if (missing.length > 0) {
      // Names asked for while a batch waits for its turn join it: a burst of calls (each agent's
      // first job) makes one batch, not one each.
      if (!this.#nextBatch) {
        const batch = this.#creations.then(() => {
          const batchNames = [...this.#waiting];
          this.#waiting.clear();
          this.#nextBatch = undefined;
          return this.#createQueues(batchNames);
        });
        this.#nextBatch = batch;
        this.#creations = batch.catch(() => undefined);
      }
      const batch = this.#nextBatch;
      for (const name of missing) {
        this.#waiting.add(name);
        this.#queues.set(name, batch);
      }
      // A failed creation is tried again by the next caller.
      batch.catch(() => {
        for (const name of missing) if (this.#queues.get(name) === batch) this.#queues.delete(name);
      });
    }
    await Promise.all(names.map((name) => this.#queues.get(name)));
  }

  async #createQueues(names: readonly string[]): Promise<void> {
    await this.#lookUp(names);
    const absent = names.filter((name) => !this.#existing.has(name));
    if (absent.length === 0) return;
    // The lock lives on a session of its own: pg-boss runs createQueue on its pool, and the session
    // ending (also when this process dies) releases it.
    const lock = new pg.Client({ connectionString: this.#url, connectionTimeoutMillis: 15_000 });
    lock.on('error', () => undefined); // a lost session fails the query below
    await lock.connect();
    try {
      await lock.query(`SET lock_timeout = '${QUEUE_LOCK_TIMEOUT}'`);
      await lock.query('SELECT pg_advisory_lock($1)', [QUEUE_CREATION_LOCK]);
      for (const name of absent) {
        // Another controller may have created it while this one waited for the lock.
        if (await this.#boss.getQueue(name)) {
          this.#existing.add(name);
          continue;
        }
        for (let attempt = 1; ; attempt++) {
          try {
            await this.#boss.createQueue(name, { name, policy: 'short', retryLimit: 1_000_000, retryDelay: 1, expireInSeconds: this.#expireInSeconds });
            this.#existing.add(name);
            break;
          } catch (error) {
            if ((error as { code?: unknown }).code !== '40P01' || attempt >= DEADLOCK_TRIES) throw error;
            await new Promise((resolve) => setTimeout(resolve, 50 * attempt + Math.random() * 50));
          }
        }
      }
    } finally {
      await lock.end().catch(() => undefined);
    }
  }

  /**
   * Creates the agents' queues (job turns and task attempts) where missing. Called before the
   * transaction that sends to one (never inside it: creating a queue is DDL on other connections,
   * which would wait on the transaction's locks while it waits on them).
   *
   * @throws Error when a queue cannot be created within 60 s.
   */
  async ensureAgents(agentIds: Iterable<string>): Promise<void> {
    const names: string[] = [];
    for (const agentId of agentIds) names.push(agentQueue(JOB_TURN_QUEUE, agentId), agentQueue(TASK_ATTEMPT_QUEUE, agentId));
    await this.#ensureQueues(names);
  }

  /**
   * Queues a job's turn on its agent's queue inside the caller's transaction; false when its
   * singleton key is already queued. The agent's queue must exist (`ensureAgents`).
   */
  async enqueue(trx: Transaction<StoreDatabase>, input: { agentId: string; jobId: string; singletonKey: string }): Promise<boolean> {
    const id = await this.#boss.send(agentQueue(JOB_TURN_QUEUE, input.agentId), { jobId: input.jobId }, { singletonKey: input.singletonKey, expireInSeconds: this.#expireInSeconds, retentionDays: QUEUED_RETENTION_DAYS, db: inTransaction(trx) });
    return id !== null;
  }

  /** Claims the next job turn of one of the agents, or undefined when none is queued. */
  async fetch(agentIds: readonly string[]): Promise<JobTurnClaim | undefined> {
    const job = await this.#fetchFirst<{ jobId: string }>(agentIds.map((agentId) => agentQueue(JOB_TURN_QUEUE, agentId)));
    return job ? { id: job.id, queue: job.queue, jobId: job.data.jobId } : undefined;
  }

  /** Ends a claim for good (the job was recorded, or no longer needs a turn); in the caller's transaction when given. */
  async complete(claim: QueuedJob, trx?: Transaction<StoreDatabase>): Promise<void> {
    await this.#boss.complete(claim.queue, claim.id, {}, trx ? { db: inTransaction(trx) } : {});
  }

  /** Gives claims back: each becomes claimable again after pg-boss's retry delay (1 s). */
  async handBack(claims: readonly QueuedJob[]): Promise<void> {
    const byQueue = new Map<string, string[]>();
    for (const claim of claims) byQueue.set(claim.queue, [...(byQueue.get(claim.queue) ?? []), claim.id]);
    for (const [queue, ids] of byQueue) await this.#boss.fail(queue, ids);
  }

  /** How long a claim lives before pg-boss expires it (s). */
  get expireInSeconds(): number {
    return this.#expireInSeconds;
  }

  /**
   * Queues a task's next attempt on its agent's queue inside the caller's transaction and returns
   * the claim's id. The agent's queue must exist (`ensureAgents`).
   *
   * @throws Error when the task already has a queued attempt (its singleton key): the store's
   *   bookkeeping would be wrong.
   */
  async enqueueTask(trx: Transaction<StoreDatabase>, input: { agentId: string; runId: string; taskId: string }): Promise<string> {
    const id = await this.#boss.send(agentQueue(TASK_ATTEMPT_QUEUE, input.agentId), { runId: input.runId, taskId: input.taskId }, {
      singletonKey: `task:${input.runId}:${input.taskId}`,
      expireInSeconds: this.#expireInSeconds,
      retentionDays: QUEUED_RETENTION_DAYS,
      db: inTransaction(trx),
    });
    if (id === null) throw new Error(`task ${input.taskId} of run ${input.runId} already has a queued attempt`);
    return id;
  }

  /** Claims the next queued task attempt of one of the agents, or undefined when none is queued. */
  async fetchTask(agentIds: readonly string[]): Promise<TaskAttemptClaim | undefined> {
    const job = await this.#fetchFirst<{ runId: string; taskId: string }>(agentIds.map((agentId) => agentQueue(TASK_ATTEMPT_QUEUE, agentId)));
    return job ? { id: job.id, queue: job.queue, runId: job.data.runId, taskId: job.data.taskId } : undefined;
  }

  /**
   * Claims the next job of the old shared queue (`JOB_TURN_QUEUE` or `TASK_ATTEMPT_QUEUE`), which
   * an earlier version filled with every agent's work: the store moves each to its agent's queue.
   * Undefined when that queue never existed here or is empty.
   */
  async fetchLegacy<T>(queue: typeof JOB_TURN_QUEUE | typeof TASK_ATTEMPT_QUEUE): Promise<(QueuedJob & { data: T }) | undefined> {
    if (!this.#legacy.has(queue)) return undefined;
    const [job] = await this.#boss.fetch<T>(queue, { batchSize: 1 });
    return job ? { id: job.id, queue, data: job.data } : undefined;
  }

  /**
   * Ends task attempt claims of `agentId` for good, inside the caller's transaction (queued ones
   * are cancelled, active ones completed). A claim an earlier version made on the shared queue is
   * ended there too.
   */
  async endTasks(trx: Transaction<StoreDatabase>, agentId: string, claimIds: string[]): Promise<void> {
    if (claimIds.length === 0) return;
    const db = inTransaction(trx);
    const queues = [agentQueue(TASK_ATTEMPT_QUEUE, agentId), ...(this.#legacy.has(TASK_ATTEMPT_QUEUE) ? [TASK_ATTEMPT_QUEUE] : [])];
    for (const queue of queues) {
      // (pg-boss 10's complete() takes an id list only without options at run time, so one call per id.)
      for (const id of claimIds) await this.#boss.complete(queue, id, {}, { db });
      await this.#boss.cancel(queue, claimIds, { db });
    }
  }

  /** Fetches from the queues in turn, starting one further each call; the first job found. */
  async #fetchFirst<T>(names: readonly string[]): Promise<(QueuedJob & { data: T }) | undefined> {
    const queues = await this.#existingOf(names);
    const start = this.#turn++;
    for (let i = 0; i < queues.length; i++) {
      const queue = queues[(start + i) % queues.length]!;
      const [job] = await this.#boss.fetch<T>(queue, { batchSize: 1 });
      if (job) return { id: job.id, queue, data: job.data };
    }
    return undefined;
  }

  /**
   * The queues of `names` that exist. Fetching creates no queue: an agent's queues are made when its
   * first work is sent (`ensureAgents`), by whichever controller sends it, so a controller serving a
   * thousand agents does not create two thousand queues (pg-boss makes a table for each) before it
   * can claim anything. Names not known to exist are looked up in one query per fetch.
   */
  async #existingOf(names: readonly string[]): Promise<string[]> {
    const unknown = names.filter((name) => !this.#existing.has(name));
    if (unknown.length > 0) await this.#lookUp(unknown);
    return names.filter((name) => this.#existing.has(name));
  }

  /** Adds those of `names` that exist in pg-boss's queue table to the queues known to exist (one query). */
  async #lookUp(names: readonly string[]): Promise<void> {
    const { rows } = await this.#boss.getDb().executeSql('SELECT name FROM pgboss.queue WHERE name = ANY($1)', [names]);
    for (const row of rows as Array<{ name: string }>) this.#existing.add(row.name);
  }

  /** Stops pg-boss and closes its pool. */
  async stop(): Promise<void> {
    await this.#boss.stop({ graceful: false, wait: true, timeout: 5_000 });
  }
}
