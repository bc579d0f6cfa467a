import type { Selectable } from 'kysely';
import { ControlPlaneError } from '../domain/control-plane-error.js';
import type { JobRecord, JobStore, NewJob } from '../domain/jobs/job-store.js';
import { changes, first, lockKey, rows, type Script, type StoreContext } from './store-context.js';
import type { JobsTable } from './store-schema.js';

/** A job's row. */
export type JobRow = Selectable<JobsTable>;

/**
 * How a job's turn is claimed: the part of the job store each database does its own way. SQLite
 * (sqlite/lease-claims.ts): by the row alone. PostgreSQL (postgres/pg-boss-store-claims.ts): each
 * queued turn is a pg-boss job on its agent's queue, claimed with SKIP LOCKED and expired by pg-boss
 * when its controller dies.
 */
export interface JobClaims {
  /** Before a transaction that queues turns of these agents (PostgreSQL creates their queues). */
  ensureAgents(agentIds: Iterable<string>): Promise<void>;
  /** In the transaction that inserted a queued job: makes its turn claimable, once per `singletonKey`. */
  queued(job: { agentId: string; jobId: string }, singletonKey: string): Script<void>;
  /** Claims the oldest claimable job (see `JobStore.claimNext`): its row, already marked running. */
  claimNext(options: Parameters<JobStore['claimNext']>[0]): Promise<JobRow | undefined>;
  /** After a job's turn was recorded: ends this process's claim on it. */
  finished(jobId: string): Promise<void>;
  /** At close: hands back every claim this process still holds, so another controller runs those jobs at once. */
  close(): Promise<void>;
}

/** A job row as a record. */
export function toJobRecord(row: JobRow): JobRecord {
  return {
    jobId: row.job_id,
    agentId: row.agent_id,
    prompt: row.prompt,
    status: row.status,
    finalText: row.final_text,
    error: row.error,
    // A BOOLEAN on PostgreSQL, 0 or 1 on SQLite.
    canSpawnJobs: Boolean(row.can_spawn_jobs),
    ...(row.schedule_id !== null ? { scheduleId: row.schedule_id } : {}),
    attempts: row.attempts,
    createdAt: row.created_at,
    ...(row.started_at !== null ? { startedAt: row.started_at } : {}),
    ...(row.finished_at !== null ? { finishedAt: row.finished_at } : {}),
  };
}

/** Serialises one agent's job bookkeeping across controllers for the rest of the transaction. */
export const lockAgentJobs = (context: StoreContext, agentId: string) => lockKey(context, `jobs:${agentId}`);

/** The agent's jobs queued or running. */
export function* activeJobs(context: StoreContext, agentId: string): Script<number> {
  const row = yield* first(
    context.db
      .selectFrom('jobs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('agent_id', '=', agentId)
      .where('status', 'in', ['queued', 'running']),
  );
  return row!.n;
}

/**
 * Inserts a queued job row in the caller's transaction and makes its turn claimable (keyed by
 * `singletonKey`, by default the job). The caller made sure the agent's queue exists.
 */
export function* insertJobRow(context: StoreContext, claims: JobClaims, job: NewJob & { scheduleId?: string }, singletonKey = `job:${job.jobId}`): Script<JobRecord> {
  const row = yield* first(
    context.db
      .insertInto('jobs')
      .values({
        job_id: job.jobId,
        agent_id: job.agentId,
        prompt: job.prompt,
        status: 'queued',
        can_spawn_jobs: job.canSpawnJobs,
        schedule_id: job.scheduleId ?? null,
        created_at: job.createdAt,
        started_at: null,
        finished_at: null,
      })
      .returningAll(),
  );
  yield* claims.queued(job, singletonKey);
  return toJobRecord(row!);
}

/** The background jobs part of the store, on either database; how a turn is claimed is the `claims`' own. */
export function createSqlJobStore(context: StoreContext, claims: JobClaims): JobStore {
  const { db } = context;
  return {
    async insert(job, limits) {
      await claims.ensureAgents([job.agentId]);
      return context.transaction(function* () {
        yield* lockAgentJobs(context, job.agentId);
        const n = yield* activeJobs(context, job.agentId);
        if (n >= limits.maxQueuedPerAgent) {
          throw new ControlPlaneError(
            'limit_exceeded',
            `agent ${job.agentId} already has ${n} background jobs queued or running (at most ${limits.maxQueuedPerAgent}); wait for one to finish or cancel one`,
          );
        }
        return yield* insertJobRow(context, claims, job);
      });
    },

    get(jobId) {
      return context.read(function* () {
        const row = yield* first(db.selectFrom('jobs').selectAll().where('job_id', '=', jobId));
        return row ? toJobRecord(row) : undefined;
      });
    },

    list(agentId, limit) {
      return context.read(function* () {
        let select = db.selectFrom('jobs').selectAll();
        if (agentId !== undefined) select = select.where('agent_id', '=', agentId);
        return (yield* rows(select.orderBy('seq', 'desc').limit(limit))).map(toJobRecord);
      });
    },

    async claimNext(options) {
      const row = await claims.claimNext(options);
      return row ? toJobRecord(row) : undefined;
    },

    async finish(jobId, ending) {
      const updated = await context.transaction(() =>
        changes(
          db
            .updateTable('jobs')
            .set({ status: ending.status, final_text: ending.finalText, error: ending.error, finished_at: ending.now })
            .where('job_id', '=', jobId)
            .where('status', '=', 'running'),
        ),
      );
      await claims.finished(jobId);
      return updated === 1;
    },

    cancel(jobId, reason, now) {
      return context.transaction(function* () {
        yield* changes(db.updateTable('jobs').set({ status: 'cancelled', error: reason, finished_at: now }).where('job_id', '=', jobId).where('status', 'in', ['queued', 'running']));
        const row = yield* first(db.selectFrom('jobs').selectAll().where('job_id', '=', jobId));
        return row ? toJobRecord(row) : undefined;
      });
    },

    async runningOwners(agentIds) {
      if (agentIds.length === 0) return [];
      return context.read(function* () {
        const owners = yield* rows(db.selectFrom('jobs').select('owner').distinct().where('status', '=', 'running').where('owner', 'is not', null).where('agent_id', 'in', agentIds));
        return owners.map((row) => row.owner!);
      });
    },

    async requeueRunning({ agentIds, owners }) {
      // Only jobs of runners known to be gone (or of none): a job another live controller runs stays
      // with it. On PostgreSQL the turn itself is claimed again through pg-boss once the dead
      // runner's claim expired (or at once when it was handed back).
      if (agentIds.length === 0) return 0;
      return context.transaction(() =>
        changes(
          db
            .updateTable('jobs')
            .set({ status: 'queued', owner: null })
            .where('status', '=', 'running')
            .where('agent_id', 'in', agentIds)
            .where((eb) => eb.or([eb('owner', 'is', null), ...(owners.length > 0 ? [eb('owner', 'in', owners)] : [])])),
        ),
      );
    },
  };
}
