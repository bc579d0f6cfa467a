import { sql, type Selectable, type Transaction } from 'kysely';
import { ControlPlaneError } from '../../control-plane-error.js';
import type { JobRecord, JobStore, NewJob } from '../job-store.js';
import type { PostgresStoreContext } from './open-postgres-store.js';
import type { JobsTable, PostgresDatabase } from './postgres-schema.js';

/** A job row as a record. */
export function toPostgresJobRecord(row: Selectable<JobsTable>): JobRecord {
  return {
    jobId: row.job_id,
    agentId: row.agent_id,
    prompt: row.prompt,
    status: row.status,
    finalText: row.final_text,
    error: row.error,
    canSpawnJobs: row.can_spawn_jobs,
    ...(row.schedule_id !== null ? { scheduleId: row.schedule_id } : {}),
    attempts: row.attempts,
    createdAt: row.created_at,
    ...(row.started_at !== null ? { startedAt: row.started_at } : {}),
    ...(row.finished_at !== null ? { finishedAt: row.finished_at } : {}),
  };
}

/** Inserts a queued job row inside the caller's transaction and returns it. */
export async function insertPostgresJobRow(trx: Transaction<PostgresDatabase>, job: NewJob & { scheduleId?: string }): Promise<JobRecord> {
  const row = await trx
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
    .returningAll()
    .executeTakeFirstOrThrow();
  return toPostgresJobRecord(row);
}

/** Serialises one agent's job bookkeeping across controllers for the rest of the transaction. */
async function lockAgentJobs(trx: Transaction<PostgresDatabase>, agentId: string): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(hashtext(${`jobs:${agentId}`}))`.execute(trx);
}

async function countJobs(trx: Transaction<PostgresDatabase>, agentId: string, statuses: Array<JobsTable['status']>): Promise<number> {
  const { n } = await trx
    .selectFrom('jobs')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('agent_id', '=', agentId)
    .where('status', 'in', statuses)
    .executeTakeFirstOrThrow();
  return n;
}

/**
 * The background jobs part of the PostgreSQL store. Claims take the oldest eligible row with
 * `FOR UPDATE SKIP LOCKED`, so controllers claiming together never take the same job.
 */
export function createPostgresJobStore(context: PostgresStoreContext): JobStore {
  const { db } = context;
  const tx = <T>(work: (trx: Transaction<PostgresDatabase>) => Promise<T>) => db.transaction().execute(work);
  return {
    insert(job, limits) {
      return tx(async (trx) => {
        await lockAgentJobs(trx, job.agentId);
        const n = await countJobs(trx, job.agentId, ['queued', 'running']);
        if (n >= limits.maxQueuedPerAgent) {
          throw new ControlPlaneError(
            'limit_exceeded',
            `agent ${job.agentId} already has ${n} background jobs queued or running (at most ${limits.maxQueuedPerAgent}); wait for one to finish or cancel one`,
          );
        }
        return insertPostgresJobRow(trx, job);
      });
    },

    async get(jobId) {
      const row = await db.selectFrom('jobs').selectAll().where('job_id', '=', jobId).executeTakeFirst();
      return row ? toPostgresJobRecord(row) : undefined;
    },

    async list(agentId, limit) {
      let select = db.selectFrom('jobs').selectAll();
      if (agentId !== undefined) select = select.where('agent_id', '=', agentId);
      return (await select.orderBy('seq', 'desc').limit(limit).execute()).map(toPostgresJobRecord);
    },

    async claimNext({ agentIds, maxRunningPerAgent, now }) {
      if (agentIds.length === 0) return undefined;
      return tx(async (trx) => {
        const candidate = await trx
          .selectFrom('jobs as q')
          .selectAll()
          .where('q.status', '=', 'queued')
          .where('q.agent_id', 'in', agentIds)
          .where((eb) =>
            eb(
              eb.selectFrom('jobs as r').select((inner) => inner.fn.countAll<number>().as('n')).whereRef('r.agent_id', '=', 'q.agent_id').where('r.status', '=', 'running'),
              '<',
              maxRunningPerAgent,
            ),
          )
          .orderBy('q.seq')
          .limit(1)
          .forUpdate()
          .skipLocked()
          .executeTakeFirst();
        if (!candidate) return undefined;
        // The count above may be stale under concurrent claims for the same agent: check it again under the agent's lock.
        await lockAgentJobs(trx, candidate.agent_id);
        if ((await countJobs(trx, candidate.agent_id, ['running'])) >= maxRunningPerAgent) return undefined;
        const row = await trx
          .updateTable('jobs')
          .set((eb) => ({ status: 'running', attempts: eb('attempts', '+', 1), started_at: now }))
          .where('job_id', '=', candidate.job_id)
          .returningAll()
          .executeTakeFirstOrThrow();
        return toPostgresJobRecord(row);
      });
    },

    async finish(jobId, ending) {
      const result = await db
        .updateTable('jobs')
        .set({ status: ending.status, final_text: ending.finalText, error: ending.error, finished_at: ending.now })
        .where('job_id', '=', jobId)
        .where('status', '=', 'running')
        .executeTakeFirst();
      return result.numUpdatedRows === 1n;
    },

    cancel(jobId, reason, now) {
      return tx(async (trx) => {
        await trx
          .updateTable('jobs')
          .set({ status: 'cancelled', error: reason, finished_at: now })
          .where('job_id', '=', jobId)
          .where('status', 'in', ['queued', 'running'])
          .execute();
        const row = await trx.selectFrom('jobs').selectAll().where('job_id', '=', jobId).executeTakeFirst();
        return row ? toPostgresJobRecord(row) : undefined;
      });
    },

    async requeueRunning(agentIds) {
      if (agentIds.length === 0) return 0;
      const result = await db.updateTable('jobs').set({ status: 'queued' }).where('status', '=', 'running').where('agent_id', 'in', agentIds).executeTakeFirst();
      return Number(result.numUpdatedRows);
    },
  };
}
