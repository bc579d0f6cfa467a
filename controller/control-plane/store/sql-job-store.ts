import { sql, type Selectable } from 'kysely';
import { ControlPlaneError } from '../domain/control-plane-error.js';
import type { JobRecord, JobStore, NewJob } from '../domain/jobs/job-store.js';
import { changes, first, inList, listParameter, lockKey, prepare, rows, skipLocked, type Script, type StoreContext } from './store-context.js';
import type { JobsTable } from './store-schema.js';

/** A job's row. */
export type JobRow = Selectable<JobsTable>;

/** How long a job's claim lasts when the caller names no lease: the claim expiry's default (`--claim-expiry-s`, 900 s). */
export const DEFAULT_CLAIM_EXPIRY_MS = 900_000;

/** How many agents a claim passes over when a controller racing it filled their running limit first, before it gives up until the next poll. */
const CLAIM_TRIES = 3;

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

/** Inserts a queued job row in the caller's transaction: the row is the queue, claimable once the transaction commits. */
export function* insertJobRow(context: StoreContext, job: NewJob & { scheduleId?: string }): Script<JobRecord> {
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
  return toJobRecord(row!);
}

/**
 * The background jobs part of the store, on either database. The job's row is its queue entry and
 * its claim: `claimNext` picks the oldest queued job of the runner's agents with one indexed query
 * (the `jobs_queued` partial index, the agents one list parameter; SKIP LOCKED on PostgreSQL, so
 * controllers claiming together pass over each other's rows instead of waiting), marks it running
 * with a lease (`claim_until`) that its runner renews while the turn runs. A running job whose lease
 * ran out unrenewed is claimed again. Nothing is created per agent: an agent is a value in a column.
 */
export function createSqlJobStore(context: StoreContext, options: { defaultLeaseMs?: number } = {}): JobStore {
  const { db } = context;
  const defaultLeaseMs = options.defaultLeaseMs ?? DEFAULT_CLAIM_EXPIRY_MS;
  const q = {
    // A running job whose claim ran out: its runner died (or lost the database) without handing it back.
    expired: prepare((p: { agentIds: string; now: number }) =>
      skipLocked(context, db.selectFrom('jobs').select(['job_id', 'agent_id']).where('status', '=', 'running').where('claim_until', '<=', p.now).where(inList(context, 'agent_id', p.agentIds)).orderBy('seq').limit(1)),
    ),
    // The oldest queued job of an agent below its running limit, agents that lost a race excluded.
    queued: prepare((p: { agentIds: string; maxRunning: number; excluded: string }) =>
      skipLocked(
        context,
        db
          .selectFrom('jobs as j')
          .select(['j.job_id', 'j.agent_id'])
          .where('j.status', '=', 'queued')
          .where(inList(context, 'j.agent_id', p.agentIds))
          .where(sql<boolean>`NOT (${inList(context, 'j.agent_id', p.excluded)})`)
          .where((eb) => eb(eb.selectFrom('jobs as r').select((inner) => inner.fn.countAll<number>().as('n')).whereRef('r.agent_id', '=', 'j.agent_id').where('r.status', '=', 'running'), '<', p.maxRunning))
          .orderBy('j.seq')
          .limit(1),
      ),
    ),
    running: prepare((p: { agentId: string }) => db.selectFrom('jobs').select((eb) => eb.fn.countAll<number>().as('n')).where('agent_id', '=', p.agentId).where('status', '=', 'running')),
    start: prepare((p: { now: number; owner: string; until: number; jobId: string }) =>
      db
        .updateTable('jobs')
        .set((eb) => ({ status: 'running', attempts: eb('attempts', '+', 1), started_at: p.now, owner: p.owner, claim_until: p.until }))
        .where('job_id', '=', p.jobId)
        .returningAll(),
    ),
    renew: prepare((p: { until: number; owner: string; jobIds: string }) =>
      db.updateTable('jobs').set({ claim_until: p.until }).where('owner', '=', p.owner).where('status', '=', 'running').where(inList(context, 'job_id', p.jobIds)).returning('job_id'),
    ),
  };
  const list = (values: readonly string[]) => listParameter(context, values) as string;
  const none = list([]);

  return {
    insert(job, limits) {
      return context.transaction(function* () {
        yield* lockAgentJobs(context, job.agentId);
        const n = yield* activeJobs(context, job.agentId);
        if (n >= limits.maxQueuedPerAgent) {
          throw new ControlPlaneError(
            'limit_exceeded',
            `agent ${job.agentId} already has ${n} background jobs queued or running (at most ${limits.maxQueuedPerAgent}); wait for one to finish or cancel one`,
          );
        }
        return yield* insertJobRow(context, job);
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

    async claimNext({ agentIds, maxRunningPerAgent, now, owner, leaseMs = defaultLeaseMs }) {
      if (agentIds.length === 0) return undefined;
      const agents = list(agentIds);
      const row = await context.transaction(function* (): Script<JobRow | undefined> {
        // Taken over as it is: it already counts against its agent's running limit.
        let pick = yield* first(q.expired({ agentIds: agents, now }));
        const excluded: string[] = [];
        for (let tries = 0; !pick && tries < CLAIM_TRIES; tries++) {
          const next = yield* first(q.queued({ agentIds: agents, maxRunning: maxRunningPerAgent, excluded: excluded.length > 0 ? list(excluded) : none }));
          if (!next) return undefined;
          // The count above read a snapshot; under the agent's lock (which `insert` and firings take
          // too) it is exact, so controllers claiming together never pass the limit. SQLite's
          // IMMEDIATE transaction already excludes every other writer.
          yield* lockAgentJobs(context, next.agent_id);
          if (context.dialect === 'sqlite' || (yield* first(q.running({ agentId: next.agent_id })))!.n < maxRunningPerAgent) pick = next;
          else excluded.push(next.agent_id);
        }
        return pick ? yield* first(q.start({ now, owner, until: now + leaseMs, jobId: pick.job_id })) : undefined;
      });
      return row ? toJobRecord(row) : undefined;
    },

    async renewClaims({ owner, jobIds, leaseMs, now }) {
      if (jobIds.length === 0) return [];
      const held = await context.transaction(() => rows(q.renew({ until: now + leaseMs, owner, jobIds: list(jobIds) })));
      return held.map((row) => row.job_id);
    },

    finish(jobId, ending) {
      return context.transaction(function* () {
        let update = db
          .updateTable('jobs')
          .set({ status: ending.status, final_text: ending.finalText, error: ending.error, finished_at: ending.now, claim_until: null })
          .where('job_id', '=', jobId)
          .where('status', '=', 'running');
        // A runner that lost its claim records nothing: the job is another runner's now.
        if (ending.owner !== undefined) update = update.where('owner', '=', ending.owner);
        return (yield* changes(update)) === 1;
      });
    },

    cancel(jobId, reason, now) {
      return context.transaction(function* () {
        yield* changes(db.updateTable('jobs').set({ status: 'cancelled', error: reason, finished_at: now, claim_until: null }).where('job_id', '=', jobId).where('status', 'in', ['queued', 'running']));
        const row = yield* first(db.selectFrom('jobs').selectAll().where('job_id', '=', jobId));
        return row ? toJobRecord(row) : undefined;
      });
    },

    async runningOwners(agentIds) {
      if (agentIds.length === 0) return [];
      return context.read(function* () {
        const owners = yield* rows(db.selectFrom('jobs').select('owner').distinct().where('status', '=', 'running').where('owner', 'is not', null).where(inList(context, 'agent_id', list(agentIds))));
        return owners.map((row) => row.owner!);
      });
    },

    async requeueRunning({ agentIds, owners }) {
      // Only jobs of runners known to be gone (or of none): a job another live controller runs stays
      // with it, and one whose runner died elsewhere is claimed again once its lease runs out.
      if (agentIds.length === 0) return 0;
      return context.transaction(() =>
        changes(
          db
            .updateTable('jobs')
            .set({ status: 'queued', owner: null, claim_until: null })
            .where('status', '=', 'running')
            .where(inList(context, 'agent_id', list(agentIds)))
            .where((eb) => eb.or([eb('owner', 'is', null), ...(owners.length > 0 ? [eb('owner', 'in', owners)] : [])])),
        ),
      );
    },
  };
}
