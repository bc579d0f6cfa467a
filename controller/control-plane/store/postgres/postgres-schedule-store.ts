import { sql, type Selectable } from 'kysely';
import { ControlPlaneError } from '../../control-plane-error.js';
import type { ScheduleRecord, ScheduleStore } from '../schedule-store.js';
import type { PostgresStoreContext } from './open-postgres-store.js';
import type { SchedulesTable } from './postgres-schema.js';
import { insertPostgresJobRow } from './postgres-job-store.js';
import type { PgBossJobClaims } from './pg-boss-job-claims.js';

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
export function createPostgresScheduleStore(context: PostgresStoreContext, claims: PgBossJobClaims): ScheduleStore {
  const { db } = context;
  return {
    create(schedule, limits) {
      return db.transaction().execute(async (trx) => {
        await sql`SELECT pg_advisory_xact_lock(hashtext(${`schedules:${schedule.agentId}`}))`.execute(trx);
        const { n } = await trx
          .selectFrom('schedules')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('agent_id', '=', schedule.agentId)
          .executeTakeFirstOrThrow();
        if (n >= limits.maxPerAgent) {
          throw new ControlPlaneError(
            'limit_exceeded',
            `agent ${schedule.agentId} already has ${n} schedules (at most ${limits.maxPerAgent}); delete one it no longer needs first`,
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

    async nextDueAt() {
      const row = await db
        .selectFrom('schedules')
        .select((eb) => eb.fn.min('next_fire_at').as('at'))
        .where('next_fire_at', 'is not', null)
        .executeTakeFirst();
      return row?.at ?? undefined;
    },

    async listDue(now, limit) {
      const rows = await db
        .selectFrom('schedules')
        .selectAll()
        .where('next_fire_at', 'is not', null)
        .where('next_fire_at', '<=', now)
        .orderBy('next_fire_at')
        .limit(limit)
        .execute();
      return rows.map(toScheduleRecord);
    },

    claimFiring(firing) {
      return db.transaction().execute(async (trx) => {
        const row = await trx.selectFrom('schedules').selectAll().where('schedule_id', '=', firing.scheduleId).forUpdate().executeTakeFirst();
        if (!row || row.next_fire_at !== firing.fireAt) return undefined;
        const claimed = await trx
          .insertInto('schedule_firings')
          .values({ schedule_id: firing.scheduleId, fire_at: firing.fireAt, job_id: firing.jobId, missed: firing.missed, claimed_at: firing.now })
          .onConflict((conflict) => conflict.columns(['schedule_id', 'fire_at']).doNothing())
          .returning('job_id')
          .executeTakeFirst();
        if (!claimed) return undefined;
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
