/**
 * The store's tables as Kysely sees them, on both databases: one interface per table, column names
 * as in the SQL. Run and attempt times are ISO text; other times are epoch milliseconds (BIGINT on
 * PostgreSQL, read back as numbers). Booleans are BOOLEAN on PostgreSQL and 0/1 on SQLite: read them
 * with `Boolean()`. `seq` orders rows by insertion (on SQLite's workflow tables the rowid does: see
 * `insertionOrder`).
 */
import type { ColumnType, Generated } from 'kysely';

// workflow_runs and workflow_attempts have `seq` on PostgreSQL only: see `insertionOrder`.
export interface WorkflowRunsTable {
  run_id: string;
  agent_id: string;
  name: string;
  state: 'running' | 'succeeded' | 'failed' | 'cancelled';
  max_parallel: number;
  error: string | null;
  created_at: string;
  finished_at: string | null;
}

export interface WorkflowTasksTable {
  run_id: string;
  task_id: string;
  position: number;
  prompt: string;
  result_schema_json: string;
  depends_on_json: string;
  max_attempts: number;
  state: 'pending' | 'running' | 'committed' | 'failed' | 'skipped' | 'cancelled';
  attempts: ColumnType<number, number | undefined, number>;
  failed_attempts: ColumnType<number, number | undefined, number>;
  error: string | null;
  claim_owner: ColumnType<string | null, string | null | undefined, string | null>;
  claim_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** When the claim of a running task runs out unless its runner renews it (epoch ms). */
  claim_until: ColumnType<number | null, number | null | undefined, number | null>;
}

export interface WorkflowResultsTable {
  run_id: string;
  task_id: string;
  attempt: number;
  result_json: string;
  committed_at: string;
}

export interface WorkflowAttemptsTable {
  run_id: string;
  task_id: string;
  attempt: number;
  started_at: string;
  finished_at: string | null;
  outcome: 'committed' | 'failed' | 'interrupted' | 'cancelled' | null;
  error: string | null;
  owner: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface JobsTable {
  seq: Generated<number>;
  job_id: string;
  agent_id: string;
  prompt: string;
  status: 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled';
  final_text: ColumnType<string, string | undefined, string>;
  error: ColumnType<string, string | undefined, string>;
  can_spawn_jobs: boolean;
  schedule_id: string | null;
  attempts: ColumnType<number, number | undefined, number>;
  owner: ColumnType<string | null, string | null | undefined, string | null>;
  /** When the claim of a running job runs out unless its runner renews it (epoch ms). */
  claim_until: ColumnType<number | null, number | null | undefined, number | null>;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
}

export interface SchedulesTable {
  seq: Generated<number>;
  schedule_id: string;
  agent_id: string;
  prompt: string;
  cron: string | null;
  at: string | null;
  time_zone: string;
  next_fire_at: number | null;
  last_fired_at: number | null;
  fired_count: ColumnType<number, number | undefined, number>;
  missed_count: ColumnType<number, number | undefined, number>;
  created_at: number;
}

export interface ScheduleFiringsTable {
  schedule_id: string;
  fire_at: number;
  job_id: string;
  missed: number;
  claimed_at: number;
}

export interface ApprovalsTable {
  seq: Generated<number>;
  approval_id: string;
  agent_id: string;
  turn_id: string;
  call_id: string;
  tool_name: string;
  namespace: string;
  label: string;
  parameters_json: string;
  read_only: boolean;
  destructive: boolean;
  status: 'pending' | 'approved' | 'denied' | 'expired';
  reason: ColumnType<string, string | undefined, string>;
  created_at: number;
  expires_at: number;
  decided_at: number | null;
}

/** A turn journal's header (schema 7): one row per job turn, task, or session. */
export interface TurnJournalsTable {
  journal_id: string;
  kind: 'job' | 'task' | 'session';
  agent_id: string;
  title: string;
  entries: number;
  turns: number;
  last_status: string;
  created_at: number;
  updated_at: number;
}

/** One journal entry: small JSON metadata inline, its items by hash (a JSON array of hashes). */
export interface TurnJournalEntriesTable {
  journal_id: string;
  seq: number;
  kind: string;
  data_json: string;
  items_json: string;
  created_at: number;
}

/** Journal items by content: the hash of `body` (SHA-256, base64url), stored once across journals. */
export interface TurnItemsTable {
  hash: string;
  body: string;
  bytes: number;
}

export interface SchemaMigrationsTable {
  version: number;
  name: string;
  applied_at: string;
}

/** Every table of the store. */
export interface StoreDatabase {
  workflow_runs: WorkflowRunsTable;
  workflow_tasks: WorkflowTasksTable;
  workflow_results: WorkflowResultsTable;
  workflow_attempts: WorkflowAttemptsTable;
  jobs: JobsTable;
  schedules: SchedulesTable;
  schedule_firings: ScheduleFiringsTable;
  approvals: ApprovalsTable;
  turn_journals: TurnJournalsTable;
  turn_journal_entries: TurnJournalEntriesTable;
  turn_items: TurnItemsTable;
  tools_runtime_schema_migrations: SchemaMigrationsTable;
}

/** SQLite's tables: the same as PostgreSQL's since both keep claims on the rows (schema 6). */
export type SqliteDatabase = StoreDatabase;
