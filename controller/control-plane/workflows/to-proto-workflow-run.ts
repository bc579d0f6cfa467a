import { WorkflowRunState, WorkflowTaskState, type WorkflowRun } from '../../../src/gen/toolruntime/v1/control_plane.js';
import type { WorkflowRunRecord, WorkflowRunState as RunState, WorkflowTaskState as TaskState } from '../store/workflow-store.js';

const runStates: Record<RunState, WorkflowRunState> = {
  running: WorkflowRunState.WORKFLOW_RUN_STATE_RUNNING,
  succeeded: WorkflowRunState.WORKFLOW_RUN_STATE_SUCCEEDED,
  failed: WorkflowRunState.WORKFLOW_RUN_STATE_FAILED,
  cancelled: WorkflowRunState.WORKFLOW_RUN_STATE_CANCELLED,
};

const taskStates: Record<TaskState, WorkflowTaskState> = {
  pending: WorkflowTaskState.WORKFLOW_TASK_STATE_PENDING,
  running: WorkflowTaskState.WORKFLOW_TASK_STATE_RUNNING,
  committed: WorkflowTaskState.WORKFLOW_TASK_STATE_COMMITTED,
  failed: WorkflowTaskState.WORKFLOW_TASK_STATE_FAILED,
  skipped: WorkflowTaskState.WORKFLOW_TASK_STATE_SKIPPED,
  cancelled: WorkflowTaskState.WORKFLOW_TASK_STATE_CANCELLED,
};

/**
 * A stored run as the proto's WorkflowRun. `withDetail: false` leaves out each task's prompt and
 * schema (lists stay small); committed results are always there.
 */
export function toProtoWorkflowRun(run: WorkflowRunRecord, options: { withDetail?: boolean } = {}): WorkflowRun {
  const detail = options.withDetail ?? true;
  return {
    runId: run.runId,
    agentId: run.agentId,
    name: run.name,
    state: runStates[run.state],
    createdAt: run.createdAt,
    finishedAt: run.finishedAt ?? '',
    error: run.error ?? '',
    maxParallel: run.maxParallel,
    tasks: run.tasks.map((task) => ({
      taskId: task.taskId,
      state: taskStates[task.state],
      attempts: task.attempts,
      maxAttempts: task.maxAttempts,
      dependsOn: task.dependsOn,
      resultJson: task.resultJson ?? '',
      error: task.error ?? '',
      prompt: detail ? task.prompt : '',
      resultSchemaJson: detail ? task.resultSchemaJson : '',
    })),
  };
}
