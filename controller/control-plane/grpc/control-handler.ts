// What a control handler is and gets, apart from the dispatcher (answer-control-request.ts): the
// handler modules name these types and the dispatcher imports the handlers, so naming them in the
// dispatcher made a circle.
import type { ControlReply, ControlRequest } from '../../../src/gen/toolruntime/v1/control_plane.js';
import type { ScheduleJobHooks } from './schedule-job-hooks.js';
import type { ControlPlaneStore } from '../domain/control-plane-store.js';
import type { WorkflowLimits } from '../domain/workflows/validate-workflow-definition.js';
import type { WorkflowRunnerHook } from '../domain/workflows/workflow-runner.js';

export type { WorkflowRunnerHook } from '../domain/workflows/workflow-runner.js';

/** What the handlers may call besides the store. Every member is optional. */
export interface ControlHooks {
  workflowRunner?: WorkflowRunnerHook;
  schedulesAndJobs?: ScheduleJobHooks;
}

/** What a handler gets besides its request. */
export interface ControlContext {
  store: ControlPlaneStore;
  hooks: ControlHooks;
  limits: WorkflowLimits;
}

type RequestCase = NonNullable<ControlRequest['request']>;
type ReplyCase = NonNullable<ControlReply['reply']>;

/** One operation's handler. Its value's `agent_id` is already the agent it acts for. */
export type ControlHandler<C extends RequestCase['$case']> = (
  value: Extract<RequestCase, { $case: C }>['value'],
  context: ControlContext,
) => Promise<ReplyCase>;

/** Handlers by request case. */
export type ControlHandlers = { [C in RequestCase['$case']]?: ControlHandler<C> };
