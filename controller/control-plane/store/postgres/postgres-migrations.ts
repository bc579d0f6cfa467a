/**
 * The PostgreSQL schema as an ordered list of versioned migrations, the counterpart of
 * ../sqlite/migrations.ts (same tables, same keys, same versions). A migration is never edited once
 * released: a change is a new entry at the end. `openPostgresStore` applies the ones newer than the
 * highest row of `tools_runtime_schema_migrations`, under an advisory lock so that controllers
 * starting together migrate once.
 */
export interface PostgresMigration {
  version: number;
  name: string;
  sql: string;
}

export const postgresMigrations: readonly PostgresMigration[] = [
  {
    version: 1,
    name: 'workflows',
    sql: `
      CREATE TABLE workflow_runs (
        seq BIGSERIAL NOT NULL UNIQUE,
        run_id TEXT PRIMARY KEY,
        agent_id TEXT NOT NULL,
        name TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('running', 'succeeded', 'failed', 'cancelled')),
        max_parallel INTEGER NOT NULL,
        error TEXT,
        created_at TEXT NOT NULL,
        finished_at TEXT,
        owner TEXT,
        lease_until BIGINT
      );
      CREATE INDEX workflow_runs_by_agent ON workflow_runs (agent_id, created_at);
      CREATE INDEX workflow_runs_by_state ON workflow_runs (state);
      CREATE TABLE workflow_tasks (
        run_id TEXT NOT NULL REFERENCES workflow_runs (run_id),
        task_id TEXT NOT NULL,
        position INTEGER NOT NULL,
        prompt TEXT NOT NULL,
        result_schema_json TEXT NOT NULL,
        depends_on_json TEXT NOT NULL,
        max_attempts INTEGER NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('pending', 'running', 'committed', 'failed', 'skipped', 'cancelled')),
        attempts INTEGER NOT NULL DEFAULT 0,
        failed_attempts INTEGER NOT NULL DEFAULT 0,
        error TEXT,
        PRIMARY KEY (run_id, task_id)
      );
      -- Exactly one committed result per (run, task), whichever controller finishes: the key refuses a second.
      CREATE TABLE workflow_results (
        run_id TEXT NOT NULL,
        task_id TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        result_json TEXT NOT NULL,
        committed_at TEXT NOT NULL,
        PRIMARY KEY (run_id, task_id),
        FOREIGN KEY (run_id, task_id) REFERENCES workflow_tasks (run_id, task_id)
      );
      CREATE TABLE workflow_attempts (
        seq BIGSERIAL NOT NULL UNIQUE,
        run_id TEXT NOT NULL,
        task_id TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        started_at TEXT NOT NULL,
        finished_at TEXT,
        outcome TEXT CHECK (outcome IN ('committed', 'failed', 'interrupted', 'cancelled')),
        error TEXT,
        PRIMARY KEY (run_id, task_id, attempt),
        FOREIGN KEY (run_id, task_id) REFERENCES workflow_tasks (run_id, task_id)
      );
    `,
  },
  {
    version: 2,
    name: 'schedules and background jobs',
    sql: `
      CREATE TABLE jobs (
        seq BIGSERIAL PRIMARY KEY,
        job_id TEXT NOT NULL UNIQUE,
        agent_id TEXT NOT NULL,
        prompt TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
        final_text TEXT NOT NULL DEFAULT '',
        error TEXT NOT NULL DEFAULT '',
        can_spawn_jobs BOOLEAN NOT NULL,
        schedule_id TEXT,
        attempts INTEGER NOT NULL DEFAULT 0,
        -- The job runner running it (host:pid:random), while it runs.
        owner TEXT,
        created_at BIGINT NOT NULL,
        started_at BIGINT,
        finished_at BIGINT
      );
      CREATE INDEX jobs_by_agent_status ON jobs (agent_id, status, seq);
      CREATE INDEX jobs_by_status ON jobs (status, seq);
      CREATE TABLE schedules (
        seq BIGSERIAL PRIMARY KEY,
        schedule_id TEXT NOT NULL UNIQUE,
        agent_id TEXT NOT NULL,
        prompt TEXT NOT NULL,
        cron TEXT,
        at TEXT,
        time_zone TEXT NOT NULL,
        next_fire_at BIGINT,
        last_fired_at BIGINT,
        fired_count INTEGER NOT NULL DEFAULT 0,
        missed_count INTEGER NOT NULL DEFAULT 0,
        created_at BIGINT NOT NULL,
        CHECK ((cron IS NULL) <> (at IS NULL))
      );
      CREATE INDEX schedules_by_agent ON schedules (agent_id, seq);
      CREATE INDEX schedules_by_next_fire ON schedules (next_fire_at) WHERE next_fire_at IS NOT NULL;
      -- One row per claimed firing: a (schedule, fire time) firing happens once across every controller.
      CREATE TABLE schedule_firings (
        schedule_id TEXT NOT NULL,
        fire_at BIGINT NOT NULL,
        job_id TEXT NOT NULL,
        missed INTEGER NOT NULL,
        claimed_at BIGINT NOT NULL,
        PRIMARY KEY (schedule_id, fire_at)
      );
    `,
  },
  {
    version: 3,
    name: 'approvals',
    sql: `
      CREATE TABLE approvals (
        seq BIGSERIAL PRIMARY KEY,
        approval_id TEXT NOT NULL UNIQUE,
        agent_id TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        call_id TEXT NOT NULL,
        tool_name TEXT NOT NULL,
        namespace TEXT NOT NULL,
        label TEXT NOT NULL,
        parameters_json TEXT NOT NULL,
        read_only BOOLEAN NOT NULL,
        destructive BOOLEAN NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'expired')),
        reason TEXT NOT NULL DEFAULT '',
        created_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL,
        decided_at BIGINT
      );
      CREATE INDEX approvals_by_agent ON approvals (agent_id, seq);
      CREATE INDEX approvals_pending ON approvals (status, expires_at);
    `,
  },
  {
    // Task attempts are pg-boss jobs: claim_id is the pg-boss job of the task's queued or running
    // attempt (a pending task with a claim_id is queued), claim_owner the controller running it and
    // claim_until when pg-boss expires that claim; each attempt records who ran it.
    version: 4,
    name: 'workflow task claims',
    sql: `
      ALTER TABLE workflow_tasks ADD COLUMN claim_owner TEXT;
      ALTER TABLE workflow_tasks ADD COLUMN claim_until BIGINT;
      ALTER TABLE workflow_tasks ADD COLUMN claim_id TEXT;
      ALTER TABLE workflow_attempts ADD COLUMN owner TEXT;
      CREATE INDEX workflow_tasks_by_state ON workflow_tasks (state, run_id);
      CREATE INDEX workflow_tasks_by_run_state ON workflow_tasks (run_id, state, position);
    `,
  },
  {
    // Columns no release read: workflow_runs.owner and lease_until (a run was never leased: its
    // tasks' attempts are claimed) and workflow_tasks.claim_until (written, but pg-boss's expiry is
    // what ends a claim here). A controller of an earlier release still names them in its writes:
    // upgrade every controller sharing the database together (docs/operating.md).
    version: 5,
    name: 'drop the unused run lease columns',
    sql: `
      ALTER TABLE workflow_runs DROP COLUMN owner, DROP COLUMN lease_until;
      ALTER TABLE workflow_tasks DROP COLUMN claim_until;
    `,
  },
  {
    // Claims move from pg-boss (a table per agent's queue) to the store's own rows: a claim is a
    // lease on the job's or the task's row (owner, claim_until), renewed by its live runner and
    // found with one indexed SKIP LOCKED query. Work already claimed keeps a lease as long as the
    // old claim expiry's default (15 min), so a controller of the earlier release still running it
    // is not overtaken. Pending tasks forget their pg-boss claim: the row is the queue now. Where
    // pg-boss's schema is there (a database of the earlier release), its queued jobs of this
    // program are completed, and a trigger completes any that an earlier controller still running
    // during a rolling upgrade sends or retries later: its rows are claimed by the new controllers,
    // so no old controller can fetch and run them a second time (docs/postgres-claims.md).
    version: 6,
    name: 'claims on the rows',
    sql: `
      ALTER TABLE jobs ADD COLUMN claim_until BIGINT;
      UPDATE jobs SET claim_until = (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT + 900000 WHERE status = 'running';
      CREATE INDEX jobs_queued ON jobs (seq) WHERE status = 'queued';
      CREATE INDEX jobs_claims ON jobs (claim_until) WHERE status = 'running';
      ALTER TABLE workflow_tasks ADD COLUMN claim_until BIGINT;
      UPDATE workflow_tasks SET claim_until = (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT + 900000 WHERE state = 'running';
      UPDATE workflow_tasks SET claim_id = NULL WHERE state = 'pending' AND claim_id IS NOT NULL;
      CREATE INDEX workflow_tasks_pending ON workflow_tasks (run_id, position) WHERE state = 'pending';
      CREATE INDEX workflow_tasks_claims ON workflow_tasks (claim_until) WHERE state = 'running';
      CREATE INDEX workflow_runs_running ON workflow_runs (created_at, seq) WHERE state = 'running';
      CREATE FUNCTION tools_runtime_retire_pgboss_job() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        NEW.state := 'completed';
        RETURN NEW;
      END
      $fn$;
      DO $do$
      BEGIN
        IF to_regclass('pgboss.job') IS NOT NULL THEN
          UPDATE pgboss.job SET state = 'completed', completed_on = now() WHERE name LIKE 'tools-runtime-%' AND state IN ('created', 'retry');
          CREATE TRIGGER tools_runtime_retire_pgboss_job BEFORE INSERT OR UPDATE OF state ON pgboss.job FOR EACH ROW
            WHEN (NEW.name LIKE 'tools-runtime-%' AND NEW.state::text IN ('created', 'retry'))
            EXECUTE FUNCTION tools_runtime_retire_pgboss_job();
        END IF;
      END
      $do$;
    `,
  },
  {
    // Turn journals (docs/reliability.md): a header per job turn, task or session, its entries in
    // order (metadata inline, items by hash), and the items once each by content, so a conversation's
    // history is never stored again per model call.
    version: 7,
    name: 'turn journals',
    sql: `
      CREATE TABLE turn_journals (
        journal_id TEXT PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('job', 'task', 'session')),
        agent_id TEXT NOT NULL,
        title TEXT NOT NULL,
        entries INTEGER NOT NULL DEFAULT 0,
        turns INTEGER NOT NULL DEFAULT 0,
        last_status TEXT NOT NULL DEFAULT '',
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL
      );
      CREATE INDEX turn_journals_by_kind ON turn_journals (kind, agent_id, updated_at);
      CREATE TABLE turn_journal_entries (
        journal_id TEXT NOT NULL REFERENCES turn_journals (journal_id),
        seq INTEGER NOT NULL,
        kind TEXT NOT NULL,
        data_json TEXT NOT NULL,
        items_json TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (journal_id, seq)
      );
      CREATE TABLE turn_items (
        hash TEXT PRIMARY KEY,
        body TEXT NOT NULL,
        bytes INTEGER NOT NULL
      );
    `,
  },
];
