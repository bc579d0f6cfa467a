import { errorMessage } from '../../../src/index.js';
import type { ControlReply, ControlRequest } from '../../../src/gen/toolruntime/v1/control_plane.js';
import { ControlPlaneError, isControlPlaneError } from '../domain/control-plane-error.js';
import type { ControlPlaneStore } from '../domain/control-plane-store.js';
import { workflowControlHandlers } from './workflow-control-handlers.js';
import { scheduleJobControlHandlers } from './schedule-job-control-handlers.js';
import { defaultWorkflowLimits, type WorkflowLimits } from '../domain/workflows/validate-workflow-definition.js';
import type { ControlContext, ControlHandler, ControlHandlers, ControlHooks } from './control-handler.js';

export type { ControlContext, ControlHandler, ControlHandlers, ControlHooks, WorkflowRunnerHook } from './control-handler.js';

/** The dispatch table: each domain adds its handlers here, one line each. */
const handlers: ControlHandlers = {
  ...workflowControlHandlers,
  ...scheduleJobControlHandlers,
};

/** Options of `answerControlRequest`. */
export interface AnswerControlRequestOptions {
  store: ControlPlaneStore;
  /**
   * The agent the request acts for. On a Turn stream, the turn's agent: an empty `agent_id` in the
   * request means this agent, and another agent is refused with `permission_denied`. Absent for
   * an operator (ControlPlaneService), who names the agent in the request.
   */
  agentId?: string;
  request: ControlRequest;
  hooks?: ControlHooks;
  limits?: WorkflowLimits;
}

/**
 * Answers one control request. Never throws: a refusal or a failure becomes a ControlError (code
 * and a message the model or operator can act on). Requests for which no handler is registered
 * yet get `unavailable`.
 */
export async function answerControlRequest(options: AnswerControlRequestOptions): Promise<ControlReply> {
  const { request } = options.request;
  try {
    if (!request) throw new ControlPlaneError('invalid_request', 'the control request names no operation');
    const value = { ...request.value };
    if (options.agentId !== undefined) {
      if (value.agentId !== '' && value.agentId !== options.agentId) {
        throw new ControlPlaneError('permission_denied', `this turn acts for agent "${options.agentId}" and cannot act for agent "${value.agentId}"; leave agent_id empty`);
      }
      value.agentId = options.agentId;
    }
    const handler = handlers[request.$case] as ControlHandler<typeof request.$case> | undefined;
    if (!handler) throw new ControlPlaneError('unavailable', `the control plane does not offer ${request.$case} yet`);
    const context: ControlContext = { store: options.store, hooks: options.hooks ?? {}, limits: options.limits ?? defaultWorkflowLimits };
    return { reply: await handler(value as never, context) };
  } catch (error) {
    return { reply: { $case: 'error', value: toControlError(error) } };
  }
}

/** A thrown error as the ControlError a client gets. */
export function toControlError(error: unknown): { code: string; message: string } {
  if (isControlPlaneError(error)) return { code: error.controlCode, message: error.message };
  return { code: 'internal', message: `the control plane failed: ${errorMessage(error).split('\n')[0]}` };
}
