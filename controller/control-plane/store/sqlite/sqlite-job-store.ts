import type { Database } from 'better-sqlite3';
import { ControlPlaneError } from '../../domain/control-plane-error.js';
import type { JobRecord, JobStatus, JobStore, NewJob } from '../job-store.js';

interface JobRow {
  job_id: string;
  agent_id: string;
  prompt: string;
  status: JobStatus;
  final_text: string;
  error: string;
  can_spawn_jobs: number;
  schedule_id: string | null;
  attempts: number;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
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
    canSpawnJobs: row.can_spawn_jobs === 1,
    ...(row.schedule_id !== null ? { scheduleId: row.schedule_id } : {}),
    attempts: row.attempts,
    createdAt: row.created_at,
    ...(row.started_at !== null ? { startedAt: row.started_at } : {}),
    ...(row.finished_at !== null ? { finishedAt: row.finished_at } : {}),
  };
}

/** A function that inserts a queued job row (inside the caller's transaction) and returns it. */
export function jobInserter(db: Database): (job: NewJob & { scheduleId?: string }) => JobRecord {
  const insert = db.prepare(
    `INSERT INTO jobs (job_id, agent_id, prompt, status, can_spawn_jobs, schedule_id, created_at)
     VALUES (?, ?, ?, 'queued', ?, ?, ?)`,
  );
  const select = db.prepare('SELECT * FROM jobs WHERE job_id = ?');
  return (job) => {
    insert.run(job.jobId, job.agentId, job.prompt, job.canSpawnJobs ? 1 : 0, job.scheduleId ?? null, job.createdAt);
    return toJobRecord(select.get(job.jobId) as JobRow);
  };
}

/** The background jobs part of the SQLite store, over an open database that has the jobs table. */
export function createSqliteJobStore(db: Database): JobStore {
  const selectOne = db.prepare('SELECT * FROM jobs WHERE job_id = ?');
  const insertJobRow = jobInserter(db);
  const active = db.prepare("SELECT COUNT(*) AS n FROM jobs WHERE agent_id = ? AND status IN ('queued', 'running')");
  const insert = db.transaction((job: NewJob, maxQueued: number) => {
    const { n } = active.get(job.agentId) as { n: number };
    if (n >= maxQueued) {
      throw new ControlPlaneError(
        'limit_exceeded',
        `agent ${job.agentId} already has ${n} background jobs queued or running (at most ${maxQueued}); wait for one to finish or cancel one`,
      );
    }
    return insertJobRow(job);
  });
  const claimNext = db.transaction((agentIds: string[], maxRunning: number, now: number, owner: string): JobRecord | undefined => {
    if (agentIds.length === 0) return undefined;
    const placeholders = agentIds.map(() => '?').join(', ');
    const row = db
      .prepare(
        `SELECT q.* FROM jobs q
         WHERE q.status = 'queued' AND q.agent_id IN (${placeholders})
           AND (SELECT COUNT(*) FROM jobs r WHERE r.agent_id = q.agent_id AND r.status = 'running') < ?
         ORDER BY q.seq LIMIT 1`,
      )
      .get(...agentIds, maxRunning) as JobRow | undefined;
    if (!row) return undefined;
    db.prepare("UPDATE jobs SET status = 'running', attempts = attempts + 1, started_at = ?, owner = ? WHERE job_id = ?").run(now, owner, row.job_id);
    return toJobRecord(selectOne.get(row.job_id) as JobRow);
  });
  // Lists travel as one JSON array parameter, so the statements are prepared once.
  const runningOwners = db.prepare(
    "SELECT DISTINCT owner FROM jobs WHERE status = 'running' AND owner IS NOT NULL AND agent_id IN (SELECT value FROM json_each(?))",
  );
  const requeue = db.prepare(
    `UPDATE jobs SET status = 'queued', owner = NULL WHERE status = 'running' AND agent_id IN (SELECT value FROM json_each(?))
       AND (owner IS NULL OR owner IN (SELECT value FROM json_each(?)))`,
  );
  const finish = db.prepare(
    "UPDATE jobs SET status = ?, final_text = ?, error = ?, finished_at = ? WHERE job_id = ? AND status = 'running'",
  );
  const cancel = db.transaction((jobId: string, reason: string, now: number) => {
    db.prepare(
      "UPDATE jobs SET status = 'cancelled', error = ?, finished_at = ? WHERE job_id = ? AND status IN ('queued', 'running')",
    ).run(reason, now, jobId);
    const row = selectOne.get(jobId) as JobRow | undefined;
    return row ? toJobRecord(row) : undefined;
  });
  return {
    async insert(job, limits) {
      return insert.immediate(job, limits.maxQueuedPerAgent);
    },
    async get(jobId) {
      const row = selectOne.get(jobId) as JobRow | undefined;
      return row ? toJobRecord(row) : undefined;
    },
    async list(agentId, limit) {
      const rows = (
        agentId === undefined
          ? db.prepare('SELECT * FROM jobs ORDER BY seq DESC LIMIT ?').all(limit)
          : db.prepare('SELECT * FROM jobs WHERE agent_id = ? ORDER BY seq DESC LIMIT ?').all(agentId, limit)
      ) as JobRow[];
      return rows.map(toJobRecord);
    },
    async claimNext({ agentIds, maxRunningPerAgent, now, owner }) {
      return claimNext.immediate(agentIds, maxRunningPerAgent, now, owner);
    },
    async finish(jobId, ending) {
      return finish.run(ending.status, ending.finalText, ending.error, ending.now, jobId).changes === 1;
    },
    async cancel(jobId, reason, now) {
      return cancel.immediate(jobId, reason, now);
    },
    async runningOwners(agentIds) {
      const rows = runningOwners.all(JSON.stringify(agentIds)) as Array<{ owner: string }>;
      return rows.map((row) => row.owner);
    },
    async requeueRunning({ agentIds, owners }) {
      return requeue.run(JSON.stringify(agentIds), JSON.stringify(owners)).changes;
    },
  };
}
