import type { CallErrorCode, CallRequest } from './turn-event.js';

/**
 * Bounds on the fields of what a client sends on a Turn stream, checked on receipt. A gRPC message
 * may be as large as `--max-message-bytes` (16 MiB), so without these a 9 MiB tool name would be
 * held, logged and quoted back in full. Model-made values (call ids, tool names) are far shorter:
 * OpenAI's function names are at most 64 characters and its call ids a few dozen.
 */
export const REQUEST_LIMITS = {
  /** `CallTool.call_id`, `CancelCall.call_id`. */
  callIdBytes: 512,
  /** `CallTool.name`. */
  toolNameBytes: 256,
  /** `CallTool.namespace`. */
  namespaceBytes: 256,
  /** `CancelCall.reason`: longer reasons are cut, not refused. */
  cancelReasonChars: 1_000,
  /**
   * `CallTool.traceparent` / `tracestate` and the Turn stream's trace metadata (W3C: 55 characters,
   * and at most 32 list members). Read only with telemetry on; a value over this is ignored, as W3C
   * says of a malformed header, not refused.
   */
  traceHeaderBytes: 1_024,
  /** `ClientReply.request_id`: the sidecar makes these, so anything longer matches nothing. */
  requestIdBytes: 256,
  /** `ApprovalDecision.reason`: cut, not refused (it reaches the model). */
  approvalReasonChars: 4_000,
  /** A `ControlReply`, encoded: what a control-plane answer may weigh. */
  controlReplyBytes: 1024 * 1024,
  /** `TurnContext.agent_id`, `turn_id`. */
  contextIdBytes: 512,
  /** `TurnContext.labels`: entries, and each key and value. */
  labels: 64,
  labelBytes: 1_024,
  /** `TurnContext.enabled_skills`, `ApprovalPolicy.tool_names`: entries, and each name. */
  listEntries: 1_024,
  listEntryBytes: 513,
  /** `TurnContext.result_schema_json`. */
  resultSchemaBytes: 1024 * 1024,
} as const;

/** How many characters of an oversized value a message quotes. */
const QUOTED_CHARS = 64;

/**
 * `text` as JSON, or its first 64 characters and how long it was: messages about an oversized
 * value never carry the value itself.
 */
export function quotePrefix(text: string, maxChars = QUOTED_CHARS): string {
  if (text.length <= maxChars) return JSON.stringify(text);
  return `${JSON.stringify(text.slice(0, maxChars))}… (${text.length} characters)`;
}

/** The UTF-8 size of `text` when it is over `maxBytes`, else 0 (counting only when it could be). */
export function bytesOver(text: string, maxBytes: number): number {
  if (text.length * 3 <= maxBytes) return 0;
  const bytes = Buffer.byteLength(text, 'utf8');
  return bytes > maxBytes ? bytes : 0;
}

/** `text` cut to `maxChars`, saying how much was cut. */
export function cutText(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  return `${text.slice(0, maxChars)}… [${text.length - maxChars} characters cut]`;
}

/** Why a call is refused before anything else looks at it. */
export interface CallRefusal {
  code: Extract<CallErrorCode, 'invalid_arguments' | 'unknown_tool'>;
  message: string;
}

/**
 * Checks a call's fields against `REQUEST_LIMITS`: an oversized call id is refused with
 * `invalid_arguments`, an oversized name or namespace with `unknown_tool` (no tool has one), each
 * message quoting a short prefix. Arguments are bounded by the validator (`arguments_too_large`).
 * Returns `undefined` for a call within bounds. Never throws.
 */
export function checkCallRequest(request: CallRequest): CallRefusal | undefined {
  const idBytes = bytesOver(request.callId, REQUEST_LIMITS.callIdBytes);
  if (idBytes > 0) {
    return {
      code: 'invalid_arguments',
      message: `call_id is ${idBytes} bytes, over the limit of ${REQUEST_LIMITS.callIdBytes} (it starts ${quotePrefix(request.callId)}); the call was not run.`,
    };
  }
  const nameBytes = bytesOver(request.name, REQUEST_LIMITS.toolNameBytes);
  if (nameBytes > 0) {
    return {
      code: 'unknown_tool',
      message: `there is no tool named ${quotePrefix(request.name)}: the name is ${nameBytes} bytes, over the limit of ${REQUEST_LIMITS.toolNameBytes}; call one of the tools you were given.`,
    };
  }
  const namespaceBytes = bytesOver(request.namespace, REQUEST_LIMITS.namespaceBytes);
  if (namespaceBytes > 0) {
    return {
      code: 'unknown_tool',
      message: `there is no tool namespace ${quotePrefix(request.namespace)}: it is ${namespaceBytes} bytes, over the limit of ${REQUEST_LIMITS.namespaceBytes}; call one of the tools you were given.`,
    };
  }
  return undefined;
}

/** A cancel's reason, cut to `REQUEST_LIMITS.cancelReasonChars`. */
export function boundCancelReason(reason: string | undefined): string | undefined {
  return reason === undefined ? undefined : cutText(reason, REQUEST_LIMITS.cancelReasonChars);
}

/**
 * Checks the fields of a reverse-request reply: an oversized `request_id` cannot match a request
 * the sidecar made, so the reply is to be ignored (the message says why, for the log); an approval
 * reason is cut; a control reply's encoded size (`controlReplyBytes`, measured by the caller, who
 * holds the proto) must be within `maxControlReplyBytes` (default `REQUEST_LIMITS.controlReplyBytes`,
 * the sidecar's default `--max-client-message-bytes`). Returns why the reply is refused, or `undefined`.
 */
export function checkClientReply(reply: { requestId: string; controlReplyBytes?: number }, maxControlReplyBytes = REQUEST_LIMITS.controlReplyBytes): string | undefined {
  const idBytes = bytesOver(reply.requestId, REQUEST_LIMITS.requestIdBytes);
  if (idBytes > 0) return `reply request_id is ${idBytes} bytes, over the limit of ${REQUEST_LIMITS.requestIdBytes} (it starts ${quotePrefix(reply.requestId)})`;
  if (reply.controlReplyBytes !== undefined && reply.controlReplyBytes > maxControlReplyBytes) {
    return `the control reply is ${reply.controlReplyBytes} bytes, over the limit of ${maxControlReplyBytes}`;
  }
  return undefined;
}

/** An approval decision's reason, cut to `REQUEST_LIMITS.approvalReasonChars`. */
export function boundApprovalReason(reason: string): string {
  return cutText(reason, REQUEST_LIMITS.approvalReasonChars);
}
