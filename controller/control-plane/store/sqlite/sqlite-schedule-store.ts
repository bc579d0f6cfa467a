import type { Database } from 'better-sqlite3';
import { ControlPlaneError } from '../../domain/control-plane-error.js';
import type { FiringClaim, NewSchedule, ScheduleRecord, ScheduleStore } from '../schedule-store.js';
import type { JobRecord } from '../job-store.js';
import { jobInserter } from './sqlite-job-store.js';

interface ScheduleRow {
  schedule_id: string;
  agent_id: string;
  prompt: string;
  cron: string | null;
  at: string | null;
  time_zone: string;
  next_fire_at: number | null;
  last_fired_at: number | null;
  fired_count: number;
  missed_count: number;
  created_at: number;
}

function toScheduleRecord(row: ScheduleRow): ScheduleRecord {
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

/** The schedules part of the SQLite store, over an open database that has the schedules and jobs tables. */
export function createSqliteScheduleStore(db: Database): ScheduleStore {
  const selectOne = db.prepare('SELECT * FROM schedules WHERE schedule_id = ?');
  const create = db.transaction((schedule: NewSchedule, maxPerAgent: number) => {
    const { n } = db.prepare('SELECT COUNT(*) AS n FROM schedules WHERE agent_id = ? AND next_fire_at IS NOT NULL').get(schedule.agentId) as { n: number };
    if (n >= maxPerAgent) {
      throw new ControlPlaneError(
        'limit_exceeded',
        `agent ${schedule.agentId} already has ${n} schedules with firings left (at most ${maxPerAgent}); delete one it no longer needs first`,
      );
    }
    db.prepare(
      `INSERT INTO schedules (schedule_id, agent_id, prompt, cron, at, time_zone, next_fire_at, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(schedule.scheduleId, schedule.agentId, schedule.prompt, schedule.cron ?? null, schedule.at ?? null, schedule.timeZone, schedule.nextFireAt, schedule.createdAt);
    return toScheduleRecord(selectOne.get(schedule.scheduleId) as ScheduleRow);
  });
  const remove = db.transaction((scheduleId: string) => {
    const row = selectOne.get(scheduleId) as ScheduleRow | undefined;
    if (!row) return undefined;
    db.prepare('DELETE FROM schedules WHERE schedule_id = ?').run(scheduleId);
    return toScheduleRecord(row);
  });
  const insertJobRow = jobInserter(db);
  const insertFiring = db.prepare('INSERT OR IGNORE INTO schedule_firings (schedule_id, fire_at, job_id, missed, claimed_at) VALUES (?, ?, ?, ?, ?)');
  const advance = db.prepare(
    `UPDATE schedules SET next_fire_at = ?, last_fired_at = ?, fired_count = fired_count + 1, missed_count = missed_count + ?
     WHERE schedule_id = ?`,
  );
  const activeJobs = db.prepare("SELECT COUNT(*) AS n FROM jobs WHERE agent_id = ? AND status IN ('queued', 'running')");
  const skip = db.prepare('UPDATE schedules SET next_fire_at = ?, missed_count = missed_count + ? WHERE schedule_id = ?');
  const claim = db.transaction((firing: FiringClaim): JobRecord | undefined => {
    const row = selectOne.get(firing.scheduleId) as ScheduleRow | undefined;
    if (!row || row.next_fire_at !== firing.fireAt) return undefined;
    const { n } = activeJobs.get(row.agent_id) as { n: number };
    const full = n >= firing.maxActiveJobsPerAgent;
    const claimed = insertFiring.run(firing.scheduleId, firing.fireAt, full ? '' : firing.jobId, firing.missed, firing.now);
    if (claimed.changes === 0) return undefined;
    if (full) {
      skip.run(firing.nextFireAt ?? null, firing.missed + 1, firing.scheduleId);
      return undefined;
    }
    advance.run(firing.nextFireAt ?? null, firing.now, firing.missed, firing.scheduleId);
    // A firing's turn may start jobs: it is the agent's own text turn, only started by the clock.
    return insertJobRow({
      jobId: firing.jobId,
      agentId: row.agent_id,
      prompt: row.prompt,
      canSpawnJobs: true,
      createdAt: firing.now,
      scheduleId: row.schedule_id,
    });
  });
  // Agent filters travel as one JSON array parameter, so the statements are prepared once.
  const due = db.prepare('SELECT * FROM schedules WHERE next_fire_at IS NOT NULL AND next_fire_at <= ? ORDER BY next_fire_at LIMIT ?');
  const dueOf = db.prepare(
    'SELECT * FROM schedules WHERE next_fire_at IS NOT NULL AND next_fire_at <= ? AND agent_id IN (SELECT value FROM json_each(?)) ORDER BY next_fire_at LIMIT ?',
  );
  const earliest = db.prepare('SELECT MIN(next_fire_at) AS at FROM schedules WHERE next_fire_at IS NOT NULL');
  const earliestOf = db.prepare('SELECT MIN(next_fire_at) AS at FROM schedules WHERE next_fire_at IS NOT NULL AND agent_id IN (SELECT value FROM json_each(?))');
  return {
    async create(schedule, limits) {
      return create.immediate(schedule, limits.maxPerAgent);
    },
    async list(agentId, limit) {
      const rows = (
        agentId === undefined
          ? db.prepare('SELECT * FROM schedules ORDER BY seq LIMIT ?').all(limit)
          : db.prepare('SELECT * FROM schedules WHERE agent_id = ? ORDER BY seq LIMIT ?').all(agentId, limit)
      ) as ScheduleRow[];
      return rows.map(toScheduleRecord);
    },
    async get(scheduleId) {
      const row = selectOne.get(scheduleId) as ScheduleRow | undefined;
      return row ? toScheduleRecord(row) : undefined;
    },
    async delete(scheduleId) {
      return remove.immediate(scheduleId);
    },
    async nextDueAt(agentIds) {
      const row = (agentIds ? earliestOf.get(JSON.stringify(agentIds)) : earliest.get()) as { at: number | null };
      return row.at ?? undefined;
    },
    async listDue(now, limit, agentIds) {
      const rows = (agentIds ? dueOf.all(now, JSON.stringify(agentIds), limit) : due.all(now, limit)) as ScheduleRow[];
      return rows.map(toScheduleRecord);
    },
    async claimFiring(firing) {
      return claim.immediate(firing);
    },
  };
}
