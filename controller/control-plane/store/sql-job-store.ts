import { sql, type Selectable, type Transaction } from 'kysely';
import { ControlPlaneError } from '../control-plane-error.js';
import type { JobRecord, JobStore, NewJob } from './job-store.js';
import type { PostgresStoreContext } from './store-context.js';
import { JOB_TURN_QUEUE, type JobTurnClaim, type PgBossClaims, type QueuedJob } from './postgres/pg-boss-claims.js';
import type { JobsTable, PostgresDatabase } from './store-schema.js';

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

/**
 * Inserts a queued job row inside the caller's transaction, queues its turn as a pg-boss job on its
 * agent's queue in the same transaction (keyed by `singletonKey`, default the job id) and returns
 * the row. The caller made sure the agent's queue exists (`claims.ensureAgents`, before the transaction).
 */
export async function insertPostgresJobRow(
  trx: Transaction<PostgresDatabase>,
  claims: PgBossClaims,
  job: NewJob & { scheduleId?: string },
  singletonKey = `job:${job.jobId}`,
): Promise<JobRecord> {
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
  if (!(await claims.enqueue(trx, { agentId: job.agentId, jobId: job.jobId, singletonKey }))) {
    throw new ControlPlaneError('internal', `the turn of ${singletonKey} is already queued`);
  }
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

/** How many claims one `claimNext` looks at before it gives up for now. */
const FETCHES_PER_CLAIM = 16;

/** The job store plus what the PostgreSQL store needs at close. */
export interface PostgresJobStore extends JobStore {
  /** Hands every claim this process still holds back to pg-boss, so another controller runs those jobs at once. */
  handBackAll(): Promise<number>;
}

/**
 * The background jobs part of the PostgreSQL store. A job's turn is a pg-boss job: `claimNext`
 * claims through pg-boss (SKIP LOCKED, so controllers claiming together never take the same job),
 * `finish` completes the claim, and a claim held by a controller that died expires in pg-boss and
 * is claimed again elsewhere.
 */
export function createPostgresJobStore(context: PostgresStoreContext, claims: PgBossClaims): PostgresJobStore {
  const { db } = context;
  /** The claims this process holds, by job id. */
  const held = new Map<string, QueuedJob>();
  const tx = <T>(work: (trx: Transaction<PostgresDatabase>) => Promise<T>) => db.transaction().execute(work);
  /**
   * Moves job turns an earlier version queued on the one shared queue to their agents' queues (a
   * few per claim, so a controller's first claims after an upgrade drain it). A turn that version's
   * controller still runs stays active there until it ends or expires, then moves.
   */
  const moveLegacyTurns = async () => {
    for (let moves = 0; moves < FETCHES_PER_CLAIM; moves++) {
      const old = await claims.fetchLegacy<{ jobId: string }>(JOB_TURN_QUEUE);
      if (!old) return;
      try {
        const agent = await db.selectFrom('jobs').select('agent_id').where('job_id', '=', old.data.jobId).executeTakeFirst();
        if (agent) await claims.ensureAgents([agent.agent_id]);
        await tx(async (trx) => {
          const row = await trx.selectFrom('jobs').select(['agent_id', 'status']).where('job_id', '=', old.data.jobId).forUpdate().executeTakeFirst();
          // A turn already queued on the agent's queue under this key needs no second one (send says false).
          if (row && (row.status === 'queued' || row.status === 'running')) await claims.enqueue(trx, { agentId: row.agent_id, jobId: old.data.jobId, singletonKey: `job:${old.data.jobId}` });
          await claims.complete(old, trx);
        });
      } catch (error) {
        await claims.handBack([old]).catch(() => undefined);
        throw error;
      }
    }
  };

  return {
    async insert(job, limits) {
      await claims.ensureAgents([job.agentId]);
      return tx(async (trx) => {
        await lockAgentJobs(trx, job.agentId);
        const n = await countJobs(trx, job.agentId, ['queued', 'running']);
        if (n >= limits.maxQueuedPerAgent) {
          throw new ControlPlaneError(
            'limit_exceeded',
            `agent ${job.agentId} already has ${n} background jobs queued or running (at most ${limits.maxQueuedPerAgent}); wait for one to finish or cancel one`,
          );
        }
        return insertPostgresJobRow(trx, claims, job);
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

    async claimNext({ agentIds, maxRunningPerAgent, now, owner }) {
      if (agentIds.length === 0) return undefined;
      const agents = new Set(agentIds);
      // Only the queues of this controller's agents: it never fetches a turn it would hand back.
      await claims.ensureAgents(agents);
      await moveLegacyTurns();
      const notNow: JobTurnClaim[] = [];
      try {
        for (let fetches = 0; fetches < FETCHES_PER_CLAIM; fetches++) {
          const claim = await claims.fetch(agentIds);
          if (!claim) return undefined;
          const taken = await tx(async (trx) => {
            const row = await trx.selectFrom('jobs').selectAll().where('job_id', '=', claim.jobId).forUpdate().executeTakeFirst();
            // Finished or cancelled meanwhile (or deleted): the turn is not needed any more.
            if (!row || (row.status !== 'queued' && row.status !== 'running')) return 'done' as const;
            if (!agents.has(row.agent_id)) return 'not-here' as const;
            // A `running` row claimed again is one whose controller died: its claim expired.
            await lockAgentJobs(trx, row.agent_id);
            const { n } = await trx
              .selectFrom('jobs')
              .select((eb) => eb.fn.countAll<number>().as('n'))
              .where('agent_id', '=', row.agent_id)
              .where('status', '=', 'running')
              .where('job_id', '!=', row.job_id)
              .executeTakeFirstOrThrow();
            if (n >= maxRunningPerAgent) return 'not-here' as const;
            return trx
              .updateTable('jobs')
              .set((eb) => ({ status: 'running', attempts: eb('attempts', '+', 1), started_at: now, owner }))
              .where('job_id', '=', row.job_id)
              .returningAll()
              .executeTakeFirstOrThrow();
          }).catch(async (error: unknown) => {
            // The turn was claimed outside this transaction: hand it back (in `finally`), or it would
            // stay claimed by nobody until pg-boss expires it (--claim-expiry-s, 900 s by default).
            notNow.push(claim);
            throw error;
          });
          if (taken === 'done') await claims.complete(claim);
          else if (taken === 'not-here') notNow.push(claim);
          else {
            held.set(taken.job_id, claim);
            return toPostgresJobRecord(taken);
          }
        }
        return undefined;
      } finally {
        // Handed back after the loop, so this call does not fetch them again; another controller (or a later call) will.
        await claims.handBack(notNow);
      }
    },

    async handBackAll() {
      const ids = [...held.values()];
      held.clear();
      await claims.handBack(ids);
      return ids.length;
    },

    async finish(jobId, ending) {
      const result = await db
        .updateTable('jobs')
        .set({ status: ending.status, final_text: ending.finalText, error: ending.error, finished_at: ending.now })
        .where('job_id', '=', jobId)
        .where('status', '=', 'running')
        .executeTakeFirst();
      const claim = held.get(jobId);
      if (claim !== undefined) {
        held.delete(jobId);
        await claims.complete(claim);
      }
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

    async runningOwners(agentIds) {
      if (agentIds.length === 0) return [];
      const rows = await db.selectFrom('jobs').select('owner').distinct().where('status', '=', 'running').where('owner', 'is not', null).where('agent_id', 'in', agentIds).execute();
      return rows.map((row) => row.owner!);
    },

    async requeueRunning({ agentIds, owners }) {
      // Only jobs of runners known to be gone (or of none): a job another live controller runs
      // stays with it. The turn itself is claimed again through pg-boss once the dead runner's
      // claim expired (or at once when it was handed back).
      if (agentIds.length === 0) return 0;
      const result = await db
        .updateTable('jobs')
        .set({ status: 'queued', owner: null })
        .where('status', '=', 'running')
        .where('agent_id', 'in', agentIds)
        .where((eb) => eb.or([eb('owner', 'is', null), ...(owners.length > 0 ? [eb('owner', 'in', owners)] : [])]))
        .executeTakeFirst();
      return Number(result.numUpdatedRows);
    },
  };
}
