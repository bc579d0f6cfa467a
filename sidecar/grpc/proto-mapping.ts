// Domain ↔ proto: the only module that knows both shapes.
import type { ContentPart as DomainContentPart, ToolSchema } from '../../src/index.js';
import {
  ApprovalMode,
  ExecutionMode,
  SandboxMode,
  TurnKind,
  type ApprovalPolicy as ProtoApprovalPolicy,
  type ClientReply,
  type ContentPart,
  type ToolDefinition,
  type TurnContext as ProtoTurnContext,
  type TurnResponse,
} from '../../src/gen/toolruntime/v1/sidecar.js';
import type { ApprovalPolicy, TurnContext } from '../categories/category.js';
import type { TurnSandbox } from '../categories/computer/sandbox/sandbox-policy.js';
import { safeJsonStringify } from '../turn/build-result.js';
import type { ClientReplyPayload, TurnEvent } from '../turn/turn-event.js';

/** The proto's TurnContext as the categories see it (UNSPECIFIED → 'text'). */
export function toDomainTurnContext(context: ProtoTurnContext | undefined): TurnContext {
  return {
    agentId: context?.agentId ?? '',
    turnId: context?.turnId ?? '',
    kind: context?.kind === TurnKind.TURN_KIND_WORKFLOW_TASK ? 'workflow_task' : 'text',
    enabledSkills: [...(context?.enabledSkills ?? [])],
    canSpawnJobs: context?.canSpawnJobs ?? false,
    brainEnabled: context?.brainEnabled ?? false,
    resultSchemaJson: context?.resultSchemaJson ?? '',
    labels: { ...(context?.labels ?? {}) },
    controlPlane: context?.controlPlane ?? false,
    approvalPolicy: toApprovalPolicy(context?.approvalPolicy),
    ...(context?.sandbox ? { sandbox: toTurnSandbox(context.sandbox) } : {}),
  };
}

/** The turn's sandbox tightening (UNSPECIFIED or an unknown mode → the sidecar's own). */
function toTurnSandbox(sandbox: NonNullable<ProtoTurnContext['sandbox']>): TurnSandbox {
  const mode = sandbox.mode === SandboxMode.SANDBOX_MODE_READ_ONLY ? 'read-only' : sandbox.mode === SandboxMode.SANDBOX_MODE_WORKSPACE_WRITE ? 'workspace-write' : undefined;
  return { ...(mode ? { mode } : {}), ...(sandbox.networkOff ? { networkOff: true } : {}) };
}

const approvalModes: Partial<Record<ApprovalMode, ApprovalPolicy['mode']>> = {
  [ApprovalMode.APPROVAL_MODE_DESTRUCTIVE]: 'destructive',
  [ApprovalMode.APPROVAL_MODE_NOT_READ_ONLY]: 'not_read_only',
  [ApprovalMode.APPROVAL_MODE_LISTED]: 'listed',
};

/** The proto's policy (unset, UNSPECIFIED, NONE or an unknown value → none). */
function toApprovalPolicy(policy: ProtoApprovalPolicy | undefined): ApprovalPolicy {
  return { mode: (policy && approvalModes[policy.mode]) ?? 'none', toolNames: [...(policy?.toolNames ?? [])] };
}

/** A ClientReply's payload; undefined when it carries neither kind. */
export function toClientReplyPayload(reply: ClientReply): ClientReplyPayload | undefined {
  switch (reply.reply?.$case) {
    case 'control':
      return { kind: 'control', control: reply.reply.value };
    case 'approval':
      return { kind: 'approval', approved: reply.reply.value.approved, reason: reply.reply.value.reason };
    default:
      return undefined;
  }
}

/** A collected schema as the proto's ToolDefinition. */
export function toToolDefinition(schema: ToolSchema): ToolDefinition {
  return {
    name: schema.name,
    description: schema.description,
    parametersJson: JSON.stringify(schema.parameters),
    strict: schema.strict,
    strictNote: schema.strictNote ?? '',
    namespace: schema.namespace ?? '',
    namespaceDescription: schema.namespaceDescription ?? '',
    deferLoading: schema.deferLoading,
    executionMode: schema.executionMode === 'parallel' ? ExecutionMode.EXECUTION_MODE_PARALLEL : ExecutionMode.EXECUTION_MODE_SEQUENTIAL,
    readOnly: schema.readOnly,
    destructive: schema.destructive,
    nativeTool: schema.nativeTool ?? '',
    idempotent: schema.idempotent === true,
  };
}

function toContentPart(part: DomainContentPart): ContentPart {
  switch (part.type) {
    case 'text':
      return { part: { $case: 'text', value: part.text } };
    case 'image':
      return { part: { $case: 'image', value: { data: Buffer.from(part.data), mimeType: part.mimeType } } };
    case 'json':
      return { part: { $case: 'json', value: safeJsonStringify(part.value) } };
    default:
      return { part: { $case: 'text', value: safeJsonStringify(part) } };
  }
}

/** One turn event as a TurnResponse. */
export function toTurnResponse(event: TurnEvent): TurnResponse {
  switch (event.type) {
    case 'activity-started':
      return { callId: event.callId, event: { $case: 'activityStarted', value: { label: event.label } } };
    case 'presentation':
      return {
        callId: event.callId,
        event: { $case: 'presentation', value: { kind: event.event.kind, payloadJson: safeJsonStringify(event.event.payload) } },
      };
    case 'client-request': {
      const { request } = event;
      return {
        callId: event.callId,
        event: {
          $case: 'clientRequest',
          value: {
            requestId: event.requestId,
            request: request.kind === 'control' ? { $case: 'control', value: request.control } : { $case: 'approval', value: request.approval },
          },
        },
      };
    }
    case 'result': {
      const { result } = event;
      return {
        callId: event.callId,
        event: {
          $case: 'result',
          value: {
            content: result.content.map(toContentPart),
            detailsJson: result.detailsJson,
            completedLabel: result.completedLabel,
            terminateTurn: result.terminateTurn,
            error: result.error ? { code: result.error.code, message: result.error.message } : undefined,
            repairs: result.repairs,
            durationMs: Math.min(result.durationMs, 0xffffffff),
          },
        },
      };
    }
  }
}
