/**
 * The schedules and background jobs tables, one entry of the store's ordered migration list
 * (migrations.ts gives it its version). Times are epoch milliseconds (INTEGER); `seq` orders rows by
 * insertion.
 */
export const scheduleJobMigration: { name: string; sql: string } = {
  name: 'schedules and background jobs',
  sql: `
      CREATE TABLE jobs (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        job_id TEXT NOT NULL UNIQUE,
        agent_id TEXT NOT NULL,
        prompt TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
        final_text TEXT NOT NULL DEFAULT '',
        error TEXT NOT NULL DEFAULT '',
        can_spawn_jobs INTEGER NOT NULL,
        schedule_id TEXT,
        attempts INTEGER NOT NULL DEFAULT 0,
        -- The job runner running it (host:pid:random), while it runs.
        owner TEXT,
        created_at INTEGER NOT NULL,
        started_at INTEGER,
        finished_at INTEGER
      );
      CREATE INDEX jobs_by_agent_status ON jobs (agent_id, status, seq);
      CREATE INDEX jobs_by_status ON jobs (status, seq);
      CREATE TABLE schedules (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        schedule_id TEXT NOT NULL UNIQUE,
        agent_id TEXT NOT NULL,
        prompt TEXT NOT NULL,
        cron TEXT,
        at TEXT,
        time_zone TEXT NOT NULL,
        next_fire_at INTEGER,
        last_fired_at INTEGER,
        fired_count INTEGER NOT NULL DEFAULT 0,
        missed_count INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL,
        CHECK ((cron IS NULL) <> (at IS NULL))
      );
      CREATE INDEX schedules_by_agent ON schedules (agent_id, seq);
      CREATE INDEX schedules_by_next_fire ON schedules (next_fire_at) WHERE next_fire_at IS NOT NULL;
      -- One row per claimed firing: the primary key makes a (schedule, fire time) firing happen once.
      CREATE TABLE schedule_firings (
        schedule_id TEXT NOT NULL,
        fire_at INTEGER NOT NULL,
        job_id TEXT NOT NULL,
        missed INTEGER NOT NULL,
        claimed_at INTEGER NOT NULL,
        PRIMARY KEY (schedule_id, fire_at)
      );
    `,
};
