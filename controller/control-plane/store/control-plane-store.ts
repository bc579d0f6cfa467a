import type { ApprovalStore } from './approval-store.js';
import type { JobStore } from './job-store.js';
import type { ScheduleStore } from './schedule-store.js';
import type { WorkflowStore } from './workflow-store.js';

/**
 * The control plane's durable state, composed of one part per domain. Every method is async and
 * speaks domain types only (no SQL, no driver types), so the embedded SQLite store and a later
 * PostgreSQL one are interchangeable. Every state change is one transaction.
 */
export interface ControlPlaneStore {
  readonly workflows: WorkflowStore;
  readonly schedules: ScheduleStore;
  readonly jobs: JobStore;
  readonly approvals: ApprovalStore;
  /** Where the store lives, for logs (a file path, a redacted URL). */
  readonly location: string;
  /** Closes the store; later calls fail. Idempotent. */
  close(): Promise<void>;
}
