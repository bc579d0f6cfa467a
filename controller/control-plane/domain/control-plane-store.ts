import type { ApprovalStore } from './approvals/approval-store.js';
import type { JobStore } from './jobs/job-store.js';
import type { TurnJournalStore } from './turns/turn-journal-store.js';
import type { ScheduleStore } from './schedules/schedule-store.js';
import type { WorkflowStore } from './workflows/workflow-store.js';

/** Whether the store's database answers: `reason` says why not. */
export interface StoreHealth {
  ok: boolean;
  reason?: string;
}

/**
 * The control plane's durable state, composed of one part per domain. Every method is async and
 * speaks domain types only (no SQL, no driver types): the domain defines what it keeps and asks,
 * and store/ implements it once for the embedded SQLite file and for PostgreSQL, which callers
 * cannot tell apart. Every state change is one transaction.
 */
export interface ControlPlaneStore {
  readonly workflows: WorkflowStore;
  readonly schedules: ScheduleStore;
  readonly jobs: JobStore;
  readonly approvals: ApprovalStore;
  /** Turn journals: what a job turn, a task attempt or a session did, so it resumes after a crash. */
  readonly turns: TurnJournalStore;
  /** Where the store lives, for logs (a file path, a redacted URL). */
  readonly location: string;
  /**
   * Where the store has a server it can lose (PostgreSQL): calls `listener` with the database's
   * health at once and at each change (a probe runs every few seconds and after each connection
   * error); returns the function that stops calling it. Absent for the embedded SQLite file.
   */
  watchHealth?(listener: (health: StoreHealth) => void): () => void;
  /** Closes the store; later calls fail. Idempotent. */
  close(): Promise<void>;
}
