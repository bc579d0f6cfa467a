/**
 * The SQLite schema as an ordered list of versioned migrations. A migration is never edited once
 * released: a change is a new entry at the end, with the next version. `openSqliteStore` applies the
 * ones newer than the database's `user_version`, each in its own transaction.
 */
import { scheduleJobMigration } from './schedule-job-migrations.js';

export interface SqliteMigration {
  version: number;
  name: string;
  sql: string;
}

export const migrations: readonly SqliteMigration[] = [
  {
    version: 1,
    name: 'workflows',
    sql: `
      CREATE TABLE workflow_runs (
        run_id TEXT PRIMARY KEY,
        agent_id TEXT NOT NULL,
        name TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('running', 'succeeded', 'failed', 'cancelled')),
        max_parallel INTEGER NOT NULL,
        error TEXT,
        created_at TEXT NOT NULL,
        finished_at TEXT,
        owner TEXT,
        lease_until INTEGER
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
      -- Exactly one committed result per (run, task): the primary key refuses a second.
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
  { version: 2, ...scheduleJobMigration },
  {
    // Times are epoch ms.
    version: 3,
    name: 'approvals',
    sql: `
      CREATE TABLE approvals (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        approval_id TEXT NOT NULL UNIQUE,
        agent_id TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        call_id TEXT NOT NULL,
        tool_name TEXT NOT NULL,
        namespace TEXT NOT NULL,
        label TEXT NOT NULL,
        parameters_json TEXT NOT NULL,
        read_only INTEGER NOT NULL,
        destructive INTEGER NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'expired')),
        reason TEXT NOT NULL DEFAULT '',
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        decided_at INTEGER
      );
      CREATE INDEX approvals_by_agent ON approvals (agent_id, seq);
      CREATE INDEX approvals_pending ON approvals (status, expires_at);
    `,
  },
  {
    // Task attempts are claimed, not assigned: the claim of a task's current attempt lives on the
    // task (its owner, the lease's end, the claim's id), and each attempt records who ran it.
    version: 4,
    name: 'workflow task claims',
    sql: `
      ALTER TABLE workflow_tasks ADD COLUMN claim_owner TEXT;
      ALTER TABLE workflow_tasks ADD COLUMN claim_until INTEGER;
      ALTER TABLE workflow_tasks ADD COLUMN claim_id TEXT;
      ALTER TABLE workflow_attempts ADD COLUMN owner TEXT;
      CREATE INDEX workflow_tasks_by_state ON workflow_tasks (state, run_id);
      CREATE INDEX workflow_tasks_by_run_state ON workflow_tasks (run_id, state, position);
    `,
  },
  {
    // workflow_runs.owner and lease_until were written by no release: a run was never leased, its
    // tasks are (claim_owner, claim_until on workflow_tasks). The same version on PostgreSQL also
    // drops its workflow_tasks.claim_until, which pg-boss's expiry made redundant then (schema 6 brings it back).
    version: 5,
    name: 'drop the unused run lease columns',
    sql: `
      ALTER TABLE workflow_runs DROP COLUMN owner;
      ALTER TABLE workflow_runs DROP COLUMN lease_until;
    `,
  },
  {
    // A job's claim is a lease on its row, as a task's is: claim_until, renewed by its live runner;
    // a running job whose lease ran out unrenewed is claimed again. Jobs running now keep a lease of
    // the old claim expiry's default (15 min). The same version on PostgreSQL moves its claims off
    // pg-boss onto the rows.
    version: 6,
    name: 'claims on the rows',
    sql: `
      ALTER TABLE jobs ADD COLUMN claim_until INTEGER;
      UPDATE jobs SET claim_until = CAST(unixepoch('subsec') * 1000 AS INTEGER) + 900000 WHERE status = 'running';
      CREATE INDEX jobs_queued ON jobs (seq) WHERE status = 'queued';
      CREATE INDEX jobs_claims ON jobs (claim_until) WHERE status = 'running';
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
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );
      CREATE INDEX turn_journals_by_kind ON turn_journals (kind, agent_id, updated_at);
      CREATE TABLE turn_journal_entries (
        journal_id TEXT NOT NULL REFERENCES turn_journals (journal_id),
        seq INTEGER NOT NULL,
        kind TEXT NOT NULL,
        data_json TEXT NOT NULL,
        items_json TEXT NOT NULL,
        created_at INTEGER NOT NULL,
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
