/**
 * The sidecar client's domain types: what the proto carries, decoded into plain objects
 * (`parameters` parsed, enums as strings, JSON payloads parsed).
 */
import type { TurnTrace } from '../telemetry/turn-trace.js';
import type { JSONObject } from '../../src/index.js';
import type { ControlReply, ControlRequest } from '../../src/gen/toolruntime/v1/control_plane.js';

export type { ControlReply, ControlRequest } from '../../src/gen/toolruntime/v1/control_plane.js';

/**
 * Which calls the sidecar asks approval for before they run: `none` (the default), `destructive`,
 * `not_read_only`, or `listed` (the tools in `toolNames`, `namespace.name` for a namespaced one).
 */
export interface ApprovalPolicyInput {
  mode: 'none' | 'destructive' | 'not_read_only' | 'listed';
  toolNames?: string[];
}

/** Which catalog a turn is assembled from. */
export type TurnKindName = 'text' | 'workflow_task';

/** The context sent in OpenTurn. Everything but the ids is optional. */
export interface TurnContextInput {
  agentId: string;
  turnId: string;
  kind?: TurnKindName;
  enabledSkills?: string[];
  canSpawnJobs?: boolean;
  brainEnabled?: boolean;
  /** For workflow task turns: the result schema as JSON text. */
  resultSchemaJson?: string;
  labels?: Record<string, string>;
  /**
   * This client answers control requests (give `onClientRequest` when opening the turn): the
   * sidecar then offers the schedule, background job and workflow tools.
   */
  controlPlane?: boolean;
  /** Which calls need this client's approval; none when absent. */
  approvalPolicy?: ApprovalPolicyInput;
  /**
   * Tightens the sidecar's sandbox for this turn's processes (never loosens it: the stricter of
   * this and the sidecar's `--sandbox`/`--network` applies). The sidecar's own when absent.
   */
  sandbox?: { mode?: 'read-only' | 'workspace-write'; networkOff?: boolean };
}

/** A validated call waiting for approval, as the sidecar describes it. */
export interface ApprovalRequestInfo {
  toolName: string;
  namespace?: string;
  /** The call's activity label. */
  label: string;
  /** The validated parameters, parsed (the raw text when it is not JSON). */
  parameters: unknown;
  readOnly: boolean;
  destructive: boolean;
}

/** A question the sidecar asks on behalf of one of the turn's calls. */
export type ClientRequestEvent = { callId: string; requestId: string } & (
  | { kind: 'control'; control: ControlRequest }
  | { kind: 'approval'; approval: ApprovalRequestInfo }
);

/** The answer to a ClientRequestEvent, of the same kind. */
export type ClientReplyPayload = { kind: 'control'; control: ControlReply } | { kind: 'approval'; approved: boolean; reason?: string };

/**
 * Answers the sidecar's reverse requests. `signal` aborts when the call ends (its cancel or
 * deadline) or the turn's stream ends: stop asking then. A handler that throws answers a control
 * request with ControlError `internal` and an approval with a denial.
 */
export type ClientRequestHandler = (request: ClientRequestEvent, signal: AbortSignal) => Promise<ClientReplyPayload>;

/** An approval request of one call. */
export type ApprovalRequestEvent = Extract<ClientRequestEvent, { kind: 'approval' }>;

/** A decision on one call; `reason` is shown to the model when denied. */
export interface ApprovalDecision {
  approved: boolean;
  reason?: string;
}

/**
 * Decides whether a validated call may run (the library API of approvals). `signal` aborts when the
 * call ends meanwhile (cancel, deadline) or the turn's stream ends. Throwing denies the call.
 */
export type ApproveCallback = (request: ApprovalRequestEvent, signal: AbortSignal) => Promise<ApprovalDecision>;

/** One tool of the turn's tool set, as the model should see it. */
export interface ToolDefinition {
  name: string;
  description: string;
  /** The parameters' JSON Schema, parsed from `parameters_json`. */
  parameters: JSONObject;
  /** The schema text exactly as the sidecar sent it. */
  parametersJson: string;
  strict: boolean;
  /** Why a tool that would be strict was sent non-strict (a runtime schema strict mode cannot represent). */
  strictNote?: string;
  /** The namespace, or undefined when the tool has none. */
  namespace?: string;
  namespaceDescription?: string;
  deferLoading: boolean;
  /** UNSPECIFIED from the wire is treated as sequential, as the proto says. */
  executionMode: 'parallel' | 'sequential';
  readOnly: boolean;
  destructive: boolean;
  /**
   * The provider tool this tool executes (`apply_patch`, `shell`): the loop may offer the provider's
   * tool instead and send its calls here (see controller/loop/native-tools.ts). Absent for most.
   */
  nativeTool?: 'apply_patch' | 'shell';
  /** The tool declares that running it again changes nothing more (WorkerAgentTool.isIdempotent). */
  idempotent?: boolean;
}

/** One part of a call result's content. */
export type CallContentPart =
  | { type: 'text'; text: string }
  | { type: 'image'; data: Uint8Array; mimeType: string }
  /** A JSON value, as the text the sidecar sent. */
  | { type: 'json'; json: string };

/** What ends a call. */
export interface CallResult {
  callId: string;
  content: CallContentPart[];
  /** Parsed `details_json` (on first read); undefined when empty or unparseable. */
  details?: unknown;
  completedLabel: string;
  terminateTurn: boolean;
  /** Set when the call failed; `sidecar_unavailable` when the stream died before the result. */
  error?: { code: string; message: string };
  repairs: string[];
  durationMs: number;
}

/** The events of one call, in the order the sidecar sends them. */
export type CallEvent =
  | { type: 'activity-started'; callId: string; label: string }
  | { type: 'presentation'; callId: string; kind: string; payload: unknown }
  | { type: 'result'; callId: string; result: CallResult };

/** What `turn.call` sends. */
export interface CallRequest {
  callId: string;
  name: string;
  namespace?: string;
  /** The model's raw arguments text: the sidecar repairs and validates it. */
  argumentsJson: string;
  /** 0 or absent: the sidecar's default. */
  deadlineMs?: number;
  /** W3C trace context of the span dispatching this call (CallTool.traceparent/tracestate). */
  traceparent?: string;
  tracestate?: string;
}

/** A call in flight: iterate its events (ends after the result), or await `result`. */
export interface CallHandle extends AsyncIterable<CallEvent> {
  readonly callId: string;
  /** Resolves with the call's one result; never rejects. */
  readonly result: Promise<CallResult>;
}

/**
 * The part of a turn the agent loop needs. `SidecarTurn` implements it over gRPC; unit tests may
 * implement it in process.
 */
export interface ToolTurn {
  readonly tools: ToolDefinition[];
  readonly instructions: string;
  /** Starts a call; aborting `signal` cancels it (its result then has code `aborted`). */
  call(request: CallRequest, options?: { signal?: AbortSignal }): CallHandle;
  /** Set once the stream failed (the sidecar died or the connection broke). */
  readonly failure: Error | undefined;
  /** How many calls the sidecar accepts in flight; a client queues beyond it (absent: no limit known). */
  readonly maxCallsInFlight?: number;
  /** The turn's trace, begun when its stream opened (only with tracing on). */
  readonly trace?: TurnTrace;
}

/** A result for a call that never reached (or never came back from) the sidecar. */
export function errorResult(callId: string, code: string, message: string): CallResult {
  return {
    callId,
    content: [{ type: 'text', text: message }],
    completedLabel: '',
    terminateTurn: false,
    error: { code, message },
    repairs: [],
    durationMs: 0,
  };
}
