import type { ContentPart, PresentationEvent, ToolRuntimeErrorCode } from '../../src/index.js';
import type { ControlReply, ControlRequest } from '../../src/gen/toolruntime/v1/control_plane.js';

/** The error codes a call's result can carry (the proto's ToolError.code): a part of the one family. */
export type CallErrorCode = Extract<
  ToolRuntimeErrorCode,
  | 'invalid_arguments'
  | 'arguments_too_large'
  | 'unknown_tool'
  | 'duplicate_call_id'
  | 'tool_failed'
  | 'timeout'
  | 'aborted'
  | 'too_many_calls'
  | 'internal'
  | 'denied'
  | 'sandbox_unavailable'
  | 'sandbox_denied'
  // Command sessions (sessions/session-tools.ts): each a distinct answer the model acts on.
  | 'session_not_found'
  | 'session_ended'
  | 'session_limit_reached'
  | 'input_too_large'
>;

/** How one call ended, as the client sees it. */
export interface CallResult {
  /** What the model sees; on an error, a text part with the model-facing message. */
  content: ContentPart[];
  /** The details as JSON text; empty when the tool gave none. */
  detailsJson: string;
  completedLabel: string;
  terminateTurn: boolean;
  error?: { code: CallErrorCode; message: string };
  /** The repair steps applied to the arguments, in order. */
  repairs: string[];
  /** Time the tool ran, scheduling wait excluded. */
  durationMs: number;
}

/** What a turn session streams out, tagged by call id. */
export type TurnEvent =
  | { type: 'activity-started'; callId: string; label: string }
  | { type: 'presentation'; callId: string; event: PresentationEvent }
  | { type: 'result'; callId: string; result: CallResult }
  | { type: 'client-request'; callId: string; requestId: string; request: ClientRequestPayload };

/** What the sidecar asks a call's approval for: the validated call, as the client shows it. */
export interface ApprovalRequestInfo {
  toolName: string;
  /** Empty when the tool has no namespace. */
  namespace: string;
  /** The call's activity label. */
  label: string;
  /** The validated parameters as JSON text. */
  parametersJson: string;
  readOnly: boolean;
  destructive: boolean;
}

/** A question the sidecar asks the client on behalf of a call (the proto's ClientRequest). */
export type ClientRequestPayload = { kind: 'control'; control: ControlRequest } | { kind: 'approval'; approval: ApprovalRequestInfo };

/** The client's answer (the proto's ClientReply). */
export type ClientReplyPayload = { kind: 'control'; control: ControlReply } | { kind: 'approval'; approved: boolean; reason: string };

/** One call as a client asks for it (decoded from the proto's CallTool). */
export interface CallRequest {
  callId: string;
  name: string;
  /** Empty when the tool has no namespace. */
  namespace: string;
  argumentsJson: string;
  /** 0 means the sidecar's default. */
  deadlineMs: number;
  /** W3C trace context of the client's span for this call (empty or absent: none). */
  traceparent?: string;
  tracestate?: string;
}
