import type { ControlHandlers } from './control-handler.js';
import { ControlPlaneError } from '../domain/control-plane-error.js';
import type { WorkflowRunRecord } from '../domain/workflows/workflow-store.js';
import { toProtoWorkflowRun } from './to-proto-workflow-run.js';
import { validateWorkflowDefinition } from '../domain/workflows/validate-workflow-definition.js';
import { fromProtoDefinition } from './from-proto-workflow-definition.js';

const DEFAULT_LIST_LIMIT = 50;
const MAX_LIST_LIMIT = 200;

/** The run, if it exists and `agentId` (when set) owns it; another agent's run looks absent. */
async function findRun(store: Parameters<NonNullable<ControlHandlers['showWorkflow']>>[1]['store'], runId: string, agentId: string): Promise<WorkflowRunRecord> {
  if (runId.trim() === '') throw new ControlPlaneError('invalid_request', 'run_id is required; workflow_list shows the runs');
  const run = await store.workflows.getRun(runId);
  if (!run || (agentId !== '' && run.agentId !== agentId)) {
    throw new ControlPlaneError('not_found', `no workflow run "${runId}" for this agent; workflow_list shows the runs`);
  }
  return run;
}

/** The handlers of the four workflow operations (start, show, list, cancel). */
export const workflowControlHandlers: ControlHandlers = {
  async startWorkflow(value, context) {
    if (value.agentId === '') throw new ControlPlaneError('invalid_request', 'agent_id is required to start a workflow');
    const definition = validateWorkflowDefinition(fromProtoDefinition(value.definition), context.limits);
    const runner = context.hooks.workflowRunner;
    const run = await context.store.workflows.createRun({ agentId: value.agentId, definition, maxRunningPerAgent: context.limits.maxRunningPerAgent });
    runner?.adopt(run.runId);
    return { $case: 'startWorkflow', value: { run: toProtoWorkflowRun(run) } };
  },
  async showWorkflow(value, context) {
    const run = await findRun(context.store, value.runId, value.agentId);
    return { $case: 'showWorkflow', value: { run: toProtoWorkflowRun(run) } };
  },
  async listWorkflows(value, context) {
    const limit = Math.min(value.limit || DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT);
    const runs = await context.store.workflows.listRuns({ ...(value.agentId !== '' ? { agentId: value.agentId } : {}), limit });
    return { $case: 'listWorkflows', value: { runs: runs.map((run) => toProtoWorkflowRun(run, { withDetail: false })) } };
  },
  async cancelWorkflow(value, context) {
    const found = await findRun(context.store, value.runId, value.agentId);
    if (found.state !== 'running') {
      throw new ControlPlaneError('invalid_request', `workflow run "${found.runId}" already ${found.state}; only a running workflow can be cancelled`);
    }
    const reason = value.reason.trim() || 'cancelled by request';
    const run = await context.store.workflows.finishRun({ runId: found.runId, state: 'cancelled', error: reason });
    // Abort its running task turns at once when they run in this process; a runner elsewhere sees
    // the run end at its next claim renewal.
    context.hooks.workflowRunner?.cancelled(found.runId, reason);
    return { $case: 'cancelWorkflow', value: { run: toProtoWorkflowRun(run ?? found) } };
  },
};
