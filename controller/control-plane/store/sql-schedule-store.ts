import type { Selectable } from 'kysely';
import { ControlPlaneError } from '../domain/control-plane-error.js';
import type { ScheduleRecord, ScheduleStore } from '../domain/schedules/schedule-store.js';
import { activeJobs, insertJobRow, lockAgentJobs } from './sql-job-store.js';
import { changes, first, forUpdate, lockKey, rows, type StoreContext } from './store-context.js';
import type { SchedulesTable } from './store-schema.js';

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
 * The schedules part of the store, on either database. A firing is claimed by inserting its
 * (schedule, fire time) row, whose primary key lets exactly one controller win, in the same
 * transaction as the job that runs it. The firing counts its agent's active jobs under the agent's
 * lock, as `JobStore.insert` and `claimNext` do, so two controllers firing two schedules of one agent
 * cannot both pass `maxActiveJobsPerAgent`.
 */
export function createSqlScheduleStore(context: StoreContext): ScheduleStore {
  const { db } = context;
  const one = (scheduleId: string) => db.selectFrom('schedules').selectAll().where('schedule_id', '=', scheduleId);
  return {
    create(schedule, limits) {
      return context.transaction(function* () {
        yield* lockKey(context, `schedules:${schedule.agentId}`);
        const { n } = (yield* first(
          db
            .selectFrom('schedules')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where('agent_id', '=', schedule.agentId)
            .where('next_fire_at', 'is not', null),
        ))!;
        if (n >= limits.maxPerAgent) {
          throw new ControlPlaneError(
            'limit_exceeded',
            `agent ${schedule.agentId} already has ${n} schedules with firings left (at most ${limits.maxPerAgent}); delete one it no longer needs first`,
          );
        }
        const row = yield* first(
          db
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
            .returningAll(),
        );
        return toScheduleRecord(row!);
      });
    },

    list(agentId, limit) {
      return context.read(function* () {
        let select = db.selectFrom('schedules').selectAll();
        if (agentId !== undefined) select = select.where('agent_id', '=', agentId);
        return (yield* rows(select.orderBy('seq').limit(limit))).map(toScheduleRecord);
      });
    },

    get(scheduleId) {
      return context.read(function* () {
        const row = yield* first(one(scheduleId));
        return row ? toScheduleRecord(row) : undefined;
      });
    },

    delete(scheduleId) {
      return context.transaction(function* () {
        const row = yield* first(db.deleteFrom('schedules').where('schedule_id', '=', scheduleId).returningAll());
        return row ? toScheduleRecord(row) : undefined;
      });
    },

    async nextDueAt(agentIds) {
      if (agentIds && agentIds.length === 0) return undefined;
      return context.read(function* () {
        let select = db
          .selectFrom('schedules')
          .select((eb) => eb.fn.min('next_fire_at').as('at'))
          .where('next_fire_at', 'is not', null);
        if (agentIds) select = select.where('agent_id', 'in', [...agentIds]);
        return (yield* first(select))?.at ?? undefined;
      });
    },

    async listDue(now, limit, agentIds) {
      if (agentIds && agentIds.length === 0) return [];
      return context.read(function* () {
        let select = db.selectFrom('schedules').selectAll().where('next_fire_at', 'is not', null).where('next_fire_at', '<=', now);
        if (agentIds) select = select.where('agent_id', 'in', [...agentIds]);
        return (yield* rows(select.orderBy('next_fire_at').limit(limit))).map(toScheduleRecord);
      });
    },

    async claimFiring(firing) {
      return context.transaction(function* () {
        const row = yield* first(forUpdate(context, one(firing.scheduleId)));
        if (!row || row.next_fire_at !== firing.fireAt) return undefined;
        yield* lockAgentJobs(context, row.agent_id);
        const full = (yield* activeJobs(context, row.agent_id)) >= firing.maxActiveJobsPerAgent;
        const claimed = yield* changes(
          db
            .insertInto('schedule_firings')
            .values({ schedule_id: firing.scheduleId, fire_at: firing.fireAt, job_id: full ? '' : firing.jobId, missed: firing.missed, claimed_at: firing.now })
            .onConflict((conflict) => conflict.columns(['schedule_id', 'fire_at']).doNothing()),
        );
        if (claimed === 0) return undefined;
        if (full) {
          // The agent's queue is full: the firing queues nothing and counts as missed; the schedule moves on.
          yield* changes(
            db
              .updateTable('schedules')
              .set((eb) => ({ next_fire_at: firing.nextFireAt ?? null, missed_count: eb('missed_count', '+', firing.missed + 1) }))
              .where('schedule_id', '=', firing.scheduleId),
          );
          return undefined;
        }
        yield* changes(
          db
            .updateTable('schedules')
            .set((eb) => ({
              next_fire_at: firing.nextFireAt ?? null,
              last_fired_at: firing.now,
              fired_count: eb('fired_count', '+', 1),
              missed_count: eb('missed_count', '+', firing.missed),
            }))
            .where('schedule_id', '=', firing.scheduleId),
        );
        // A firing's turn may start jobs: it is the agent's own text turn, only started by the clock.
        return yield* insertJobRow(context, { jobId: firing.jobId, agentId: row.agent_id, prompt: row.prompt, canSpawnJobs: true, createdAt: firing.now, scheduleId: row.schedule_id });
      });
    },
  };
}
