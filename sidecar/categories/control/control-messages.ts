// The tools' one door to generated code. Control-plane messages are domain types: the control
// tools (schedule_*, job_*, workflow_*) build requests and read replies, so they name the messages
// of control_plane.proto, and only those, through this module. The rule
// `control-messages-only-control-plane` (.dependency-cruiser.cjs) keeps it to that file; no other
// tool module may import src/gen (`tools-see-no-transport`), so the sidecar protocol and grpc-js
// stay out of every tool.
export {
  jobStateToJSON,
  workflowRunStateToJSON,
  workflowTaskStateToJSON,
  type ControlReply,
  type ControlRequest,
  type Job,
  type Schedule,
  type WorkflowRun,
} from '../../../src/gen/toolruntime/v1/control_plane.js';
