/**
 * The workflow part of the control-plane store: domain types and the operations the runner and the
 * control handlers need. Every method is async and speaks only these types; store/ implements them
 * once for SQLite and PostgreSQL.
 */
import type { JSONObject } from '../../../../src/index.js';

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
  /** While running: the runner that claimed its current attempt. */
  owner?: string;
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
  /** The runner that claimed it. */
  owner?: string;
}

/** A task attempt a runner claimed: the runner runs it, then commits or ends it. */
export interface TaskClaim {
  runId: string;
  taskId: string;
  agentId: string;
  attempt: number;
  /** The claim's id: which attempt of the task this runner holds (unique per attempt). */
  claimId: string;
}

/** Which runs a runner claims tasks of: those of `runIds`, of `agentIds`, or (neither given) every run. */
export interface TaskClaimScope {
  runIds?: readonly string[];
  agentIds?: readonly string[];
}

/** The state of a task and its run after an attempt ended or committed. */
export interface AttemptSettled {
  /** The task afterwards (undefined: no such task). */
  taskState: WorkflowTaskState | undefined;
  /** The run afterwards: `succeeded` when this commit was its last task, `failed` when this failure used up the task's attempts. */
  runState: WorkflowRunState | undefined;
  /** Set when the run is no longer running: why it ended (for `failed` and `cancelled`). */
  runError?: string;
}

/** The result of `commitResult`. */
export type CommitOutcome = ({ committed: true } | { committed: false; reason: 'already_committed' | 'not_running' }) & Pick<AttemptSettled, 'runState' | 'runError'>;

/**
 * The workflow operations of the store. Each state change is one transaction.
 *
 * Work is claimed, not assigned: a task whose dependencies are committed is ready, and any runner
 * may claim its next attempt with `claimTask` (at most `maxParallel` tasks of a run queued or
 * running at once). On both databases a claim is a lease on the task's row that its runner renews;
 * one that runs out unrenewed (its runner died) is claimed again by another runner. The store
 * itself ends a run: the commit of its last task makes it `succeeded`, the failure that uses up a
 * task's attempts makes it `failed`, in the same transaction.
 */
export interface WorkflowStore {
  /**
   * Persists a new running run and its pending tasks, unless the agent already has
   * `maxRunningPerAgent` running runs (checked in the same transaction). Its first ready tasks are
   * claimable at once.
   *
   * @throws ControlPlaneError `limit_exceeded` when the agent is at its limit.
   */
  createRun(input: { agentId: string; definition: WorkflowDefinition; maxRunningPerAgent: number }): Promise<WorkflowRunRecord>;
  getRun(runId: string): Promise<WorkflowRunRecord | undefined>;
  /** Newest first; every agent's when `agentId` is absent. */
  listRuns(query: { agentId?: string; state?: WorkflowRunState; limit: number }): Promise<WorkflowRunRecord[]>;
  /**
   * Claims the next attempt of a ready task of a running run in `scope` for `owner`: the task goes
   * to running and a new attempt is logged. A task whose attempt was claimed by a runner that is gone
   * (its claim expired, or its owner is named in `takeOverFrom`) is claimed again: that attempt is
   * logged `interrupted` and does not count against max_attempts. Undefined when nothing is ready.
   */
  claimTask(input: TaskClaimScope & { owner: string; leaseMs: number; takeOverFrom?: readonly string[] }): Promise<TaskClaim | undefined>;
  /**
   * Keeps `owner`'s claims alive (extends their lease where the store has one) and returns those it
   * still holds: the attempt is still the task's current one and its run still running. A claim not
   * returned was taken over or its run ended: the runner stops that attempt.
   */
  renewClaims(input: { owner: string; leaseMs: number; claims: readonly TaskClaim[] }): Promise<TaskClaim[]>;
  /**
   * Set by a store whose claims cannot be renewed (none today: both databases renew leases on the
   * rows): how long a claim lasts (ms). A runner ends a task turn before then, or another runner
   * would take the task over from a live one.
   */
  readonly claimLifetimeMs?: number;
  /** The runners that hold the claim of some running task (to find the ones that are gone). */
  claimOwners(): Promise<string[]>;
  /**
   * Ends a claimed attempt without a commit. `failed` counts against max_attempts (the task becomes
   * claimable again, or fails at the limit, which fails the run); `interrupted` does not (claimable
   * again at once). No change when the attempt is no longer the task's current one.
   */
  endAttempt(input: { runId: string; taskId: string; attempt: number; outcome: 'failed' | 'interrupted'; error: string }): Promise<AttemptSettled>;
  /**
   * Commits a task's result: exactly once per (run, task), enforced by a unique key, and only while
   * the run is running. The tasks it makes ready become claimable; the last one succeeds the run.
   */
  commitResult(input: { runId: string; taskId: string; attempt: number; resultJson: string }): Promise<CommitOutcome>;
  /**
   * Ends a running run: pending tasks become skipped, running ones cancelled (their open attempts
   * logged `cancelled`, their claims dropped). No change when the run is not running. Returns the
   * run afterwards.
   */
  finishRun(input: { runId: string; state: Exclude<WorkflowRunState, 'running'>; error?: string }): Promise<WorkflowRunRecord | undefined>;
  /** The attempt log of one run, in start order. */
  listAttempts(runId: string): Promise<WorkflowAttemptRecord[]>;
}
