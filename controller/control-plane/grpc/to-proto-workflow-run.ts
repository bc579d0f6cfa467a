import { WorkflowRunState, WorkflowTaskState, type WorkflowRun } from '../../../src/gen/toolruntime/v1/control_plane.js';
import type { WorkflowRunRecord, WorkflowRunState as RunState, WorkflowTaskState as TaskState } from '../domain/workflows/workflow-store.js';

/**
 * The bytes of text (results, prompts, schemas) one WorkflowRun carries at most, so a reply stays
 * under the Turn stream's 1 MiB cap on a client reply.
 */
export const MAX_REPLY_TEXT_BYTES = 900_000;

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
 * A stored run as the proto's WorkflowRun. `withDetail: false` leaves out each task's prompt,
 * schema and committed result, so a list of many runs stays small. With detail, each task's result,
 * then prompt, then schema go in while they fit in MAX_REPLY_TEXT_BYTES (in task order); what is
 * left out is named in the task's `error`, so nobody mistakes it for empty.
 */
export function toProtoWorkflowRun(run: WorkflowRunRecord, options: { withDetail?: boolean } = {}): WorkflowRun {
  const detail = options.withDetail ?? true;
  let budget = MAX_REPLY_TEXT_BYTES;
  const fit = (text: string | undefined): boolean => {
    if (!detail || text === undefined) return false;
    const bytes = Buffer.byteLength(text);
    if (bytes > budget) return false;
    budget -= bytes;
    return true;
  };
  return {
    runId: run.runId,
    agentId: run.agentId,
    name: run.name,
    state: runStates[run.state],
    createdAt: run.createdAt,
    finishedAt: run.finishedAt ?? '',
    error: run.error ?? '',
    maxParallel: run.maxParallel,
    tasks: run.tasks.map((task) => {
      const result = fit(task.resultJson);
      const prompt = fit(task.prompt);
      const schema = fit(task.resultSchemaJson);
      const omitted = detail
        ? [task.resultJson !== undefined && !result ? 'result' : '', prompt ? '' : 'prompt', schema ? '' : 'result schema'].filter(Boolean)
        : [];
      const note = omitted.length > 0 ? `(left out of this reply to keep it under ${MAX_REPLY_TEXT_BYTES} bytes: ${omitted.join(', ')})` : '';
      return {
        taskId: task.taskId,
        state: taskStates[task.state],
        attempts: task.attempts,
        maxAttempts: task.maxAttempts,
        dependsOn: task.dependsOn,
        resultJson: result ? task.resultJson! : '',
        error: [task.error ?? '', note].filter(Boolean).join(' '),
        prompt: prompt ? task.prompt : '',
        resultSchemaJson: schema ? task.resultSchemaJson : '',
      };
    }),
  };
}
