import { sql, type Selectable } from 'kysely';
import { ControlPlaneError } from '../control-plane-error.js';
import type { ScheduleRecord, ScheduleStore } from './schedule-store.js';
import type { PostgresStoreContext } from './store-context.js';
import type { SchedulesTable } from './store-schema.js';
import { insertPostgresJobRow } from './sql-job-store.js';
import type { PgBossClaims } from './postgres/pg-boss-claims.js';

function toScheduleRecord(row: Selectable<SchedulesTable>): ScheduleRecord {
  return {
    scheduleId: row.schedule_id,
    agentId: row.agent_id,
    prompt: row.prompt,
    ...(row.cron !== null ? { cron: row.cron } : {}),
    ...(row.at !== null ? { at: row.at } : {}),
    timeZone: row.time_zone,
    ...(row.next_fire_at !== null ? { nextFireAt: row.next_fire_at } : {}),
    ...(row.last_fired_at !== null ? { lastFiredAt: row.last_fired_at } : {}),
    firedCount: row.fired_count,
    missedCount: row.missed_count,
    createdAt: row.created_at,
  };
}

/**
 * The schedules part of the PostgreSQL store. A firing is claimed by inserting its (schedule, fire
 * time) row, whose primary key lets exactly one controller win, in the same transaction as the job
 * that runs it and that job's pg-boss job (a singleton keyed by the same pair).
 */
export function createPostgresScheduleStore(context: PostgresStoreContext, claims: PgBossClaims): ScheduleStore {
  const { db } = context;
  return {
    create(schedule, limits) {
      return db.transaction().execute(async (trx) => {
        await sql`SELECT pg_advisory_xact_lock(hashtext(${`schedules:${schedule.agentId}`}))`.execute(trx);
        const { n } = await trx
          .selectFrom('schedules')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('agent_id', '=', schedule.agentId)
          .where('next_fire_at', 'is not', null)
          .executeTakeFirstOrThrow();
        if (n >= limits.maxPerAgent) {
          throw new ControlPlaneError(
            'limit_exceeded',
            `agent ${schedule.agentId} already has ${n} schedules with firings left (at most ${limits.maxPerAgent}); delete one it no longer needs first`,
          );
        }
        const row = await trx
          .insertInto('schedules')
          .values({
            schedule_id: schedule.scheduleId,
            agent_id: schedule.agentId,
            prompt: schedule.prompt,
            cron: schedule.cron ?? null,
            at: schedule.at ?? null,
            time_zone: schedule.timeZone,
            next_fire_at: schedule.nextFireAt,
            last_fired_at: null,
            created_at: schedule.createdAt,
          })
          .returningAll()
          .executeTakeFirstOrThrow();
        return toScheduleRecord(row);
      });
    },

    async list(agentId, limit) {
      let select = db.selectFrom('schedules').selectAll();
      if (agentId !== undefined) select = select.where('agent_id', '=', agentId);
      return (await select.orderBy('seq').limit(limit).execute()).map(toScheduleRecord);
    },

    async get(scheduleId) {
      const row = await db.selectFrom('schedules').selectAll().where('schedule_id', '=', scheduleId).executeTakeFirst();
      return row ? toScheduleRecord(row) : undefined;
    },

    async delete(scheduleId) {
      const row = await db.deleteFrom('schedules').where('schedule_id', '=', scheduleId).returningAll().executeTakeFirst();
      return row ? toScheduleRecord(row) : undefined;
    },

    async nextDueAt(agentIds) {
      if (agentIds && agentIds.length === 0) return undefined;
      let select = db
        .selectFrom('schedules')
        .select((eb) => eb.fn.min('next_fire_at').as('at'))
        .where('next_fire_at', 'is not', null);
      if (agentIds) select = select.where('agent_id', 'in', [...agentIds]);
      return (await select.executeTakeFirst())?.at ?? undefined;
    },

    async listDue(now, limit, agentIds) {
      if (agentIds && agentIds.length === 0) return [];
      let select = db.selectFrom('schedules').selectAll().where('next_fire_at', 'is not', null).where('next_fire_at', '<=', now);
      if (agentIds) select = select.where('agent_id', 'in', [...agentIds]);
      return (await select.orderBy('next_fire_at').limit(limit).execute()).map(toScheduleRecord);
    },

    async claimFiring(firing) {
      // The firing may queue a job turn on the schedule's agent's queue: created before the transaction.
      const schedule = await db.selectFrom('schedules').select('agent_id').where('schedule_id', '=', firing.scheduleId).executeTakeFirst();
      if (!schedule) return undefined;
      await claims.ensureAgents([schedule.agent_id]);
      return db.transaction().execute(async (trx) => {
        const row = await trx.selectFrom('schedules').selectAll().where('schedule_id', '=', firing.scheduleId).forUpdate().executeTakeFirst();
        if (!row || row.next_fire_at !== firing.fireAt) return undefined;
        const { n } = await trx
          .selectFrom('jobs')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('agent_id', '=', row.agent_id)
          .where('status', 'in', ['queued', 'running'])
          .executeTakeFirstOrThrow();
        const full = n >= firing.maxActiveJobsPerAgent;
        const claimed = await trx
          .insertInto('schedule_firings')
          .values({ schedule_id: firing.scheduleId, fire_at: firing.fireAt, job_id: full ? '' : firing.jobId, missed: firing.missed, claimed_at: firing.now })
          .onConflict((conflict) => conflict.columns(['schedule_id', 'fire_at']).doNothing())
          .returning('job_id')
          .executeTakeFirst();
        if (!claimed) return undefined;
        if (full) {
          // The agent's queue is full: the firing queues nothing and counts as missed; the schedule moves on.
          await trx
            .updateTable('schedules')
            .set((eb) => ({ next_fire_at: firing.nextFireAt ?? null, missed_count: eb('missed_count', '+', firing.missed + 1) }))
            .where('schedule_id', '=', firing.scheduleId)
            .execute();
          return undefined;
        }
        await trx
          .updateTable('schedules')
          .set((eb) => ({
            next_fire_at: firing.nextFireAt ?? null,
            last_fired_at: firing.now,
            fired_count: eb('fired_count', '+', 1),
            missed_count: eb('missed_count', '+', firing.missed),
          }))
          .where('schedule_id', '=', firing.scheduleId)
          .execute();
        // A firing's turn may start jobs: it is the agent's own text turn, only started by the clock.
        // The firing's turn is a singleton pg-boss job keyed by (schedule, fire time).
        return insertPostgresJobRow(
          trx,
          claims,
          { jobId: firing.jobId, agentId: row.agent_id, prompt: row.prompt, canSpawnJobs: true, createdAt: firing.now, scheduleId: row.schedule_id },
          `firing:${row.schedule_id}@${firing.fireAt}`,
        );
      });
    },
  };
}
