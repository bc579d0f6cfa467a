/**
 * The workflow part of the control-plane store: domain types and the operations the runner and the
 * control handlers need. Every method is async and speaks only these types, so a PostgreSQL
 * implementation can follow with no caller change.
 */
import type { JSONObject } from '../../../src/index.js';

export type WorkflowRunState = 'running' | 'succeeded' | 'failed' | 'cancelled';
export type WorkflowTaskState = 'pending' | 'running' | 'committed' | 'failed' | 'skipped' | 'cancelled';

/** One task of a validated definition. */
export interface WorkflowTaskDefinition {
  id: string;
  prompt: string;
  /** The task's result schema, a JSON Schema object that compiles. */
  resultSchema: JSONObject;
  dependsOn: string[];
  maxAttempts: number;
}

/** A validated workflow definition (see validateWorkflowDefinition). */
export interface WorkflowDefinition {
  name: string;
  tasks: WorkflowTaskDefinition[];
  maxParallel: number;
}

/** One task of a stored run. */
export interface WorkflowTaskRecord {
  taskId: string;
  state: WorkflowTaskState;
  /** Attempts started so far (an interrupted one included). */
  attempts: number;
  /** Attempts that failed (an interrupted one not included); the task fails at `maxAttempts`. */
  failedAttempts: number;
  maxAttempts: number;
  dependsOn: string[];
  prompt: string;
  /** The result schema exactly as persisted at start: the one a commit is validated against. */
  resultSchemaJson: string;
  /** The committed result as JSON text, once committed. */
  resultJson?: string;
  /** Why the last attempt failed. */
  error?: string;
}

/** A stored workflow run with its tasks in definition order. */
export interface WorkflowRunRecord {
  runId: string;
  agentId: string;
  name: string;
  state: WorkflowRunState;
  maxParallel: number;
  tasks: WorkflowTaskRecord[];
  /** RFC 3339, UTC. */
  createdAt: string;
  finishedAt?: string;
  error?: string;
  /** The runner that holds the run's lease, if any. */
  owner?: string;
  /** Epoch ms until which `owner` holds it. */
  leaseUntil?: number;
}

/** One attempt of one task, as logged. */
export interface WorkflowAttemptRecord {
  taskId: string;
  attempt: number;
  startedAt: string;
  finishedAt?: string;
  /** Absent while the attempt runs. */
  outcome?: 'committed' | 'failed' | 'interrupted' | 'cancelled';
  error?: string;
}

/** The result of `commitResult`. */
export type CommitOutcome = { committed: true } | { committed: false; reason: 'already_committed' | 'not_running' };

/** The workflow operations of the store. Each state change is one transaction. */
export interface WorkflowStore {
  /**
   * Persists a new running run and its pending tasks, unless the agent already has
   * `maxRunningPerAgent` running runs (checked in the same transaction).
   *
   * @throws ControlPlaneError `limit_exceeded` when the agent is at its limit.
   */
  createRun(input: {
    agentId: string;
    definition: WorkflowDefinition;
    maxRunningPerAgent: number;
    /** Holds the run for this runner from the start (the lease lasts `leaseMs`). */
    owner?: string;
    leaseMs?: number;
  }): Promise<WorkflowRunRecord>;
  getRun(runId: string): Promise<WorkflowRunRecord | undefined>;
  /** Newest first; every agent's when `agentId` is absent. */
  listRuns(query: { agentId?: string; state?: WorkflowRunState; limit: number }): Promise<WorkflowRunRecord[]>;
  /**
   * Takes the lease of running runs that are free (no owner, a lease that ran out, or an owner named
   * in `takeOverFrom`; never its own), or only `runId` when given. Tasks a former owner left running go back to
   * pending and their open attempt is logged `interrupted` (it does not count against max_attempts).
   * Returns the ids taken.
   */
  claimRuns(input: { owner: string; leaseMs: number; runId?: string; takeOverFrom?: string[] }): Promise<string[]>;
  /** Extends the lease of the owner's runs; returns the ids it still holds. */
  renewLeases(input: { owner: string; leaseMs: number; runIds: string[] }): Promise<string[]>;
  /** Gives a run's lease up (the run stays as it is, for another runner to claim). */
  releaseRun(input: { owner: string; runId: string }): Promise<void>;
  /**
   * Moves a pending task of a running run to running and logs a new attempt.
   * Returns the attempt number, or undefined when the run or task is not in a state to start.
   */
  startAttempt(input: { runId: string; taskId: string }): Promise<number | undefined>;
  /**
   * Ends a running attempt without a commit. `failed` counts against max_attempts (the task goes
   * back to pending, or to failed at the limit); `interrupted` does not (back to pending).
   * Returns the task's state afterwards.
   */
  endAttempt(input: {
    runId: string;
    taskId: string;
    attempt: number;
    outcome: 'failed' | 'interrupted';
    error: string;
  }): Promise<WorkflowTaskState | undefined>;
  /**
   * Commits a task's result: exactly once per (run, task), enforced by a unique key, and only while
   * the run is running.
   */
  commitResult(input: { runId: string; taskId: string; attempt: number; resultJson: string }): Promise<CommitOutcome>;
  /**
   * Ends a running run: pending tasks become skipped, running ones cancelled (their open attempts
   * logged `cancelled`). No change when the run is not running. Returns the run afterwards.
   */
  finishRun(input: { runId: string; state: Exclude<WorkflowRunState, 'running'>; error?: string }): Promise<WorkflowRunRecord | undefined>;
  /** The attempt log of one run, in start order. */
  listAttempts(runId: string): Promise<WorkflowAttemptRecord[]>;
}
