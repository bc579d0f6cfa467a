/** Conversions between the generated proto types and the client's domain types. */
import { isJSONObject, ToolRuntimeError } from '../../src/index.js';
import {
  ApprovalMode,
  ExecutionMode,
  SandboxMode,
  TurnKind,
  type ContentPart as ProtoContentPart,
  type ToolDefinition as ProtoToolDefinition,
  type ToolResult as ProtoToolResult,
  type TurnContext as ProtoTurnContext,
} from '../../src/gen/toolruntime/v1/sidecar.js';
import type { CallContentPart, CallResult, ToolDefinition, TurnContextInput } from './sidecar-types.js';

/**
 * Decodes one proto ToolDefinition, parsing its parameters.
 *
 * @throws ToolRuntimeError `internal` when `parameters_json` is not a JSON object (a sidecar bug).
 */
export function toolDefinitionFromProto(tool: ProtoToolDefinition): ToolDefinition {
  let parameters: unknown;
  try {
    parameters = JSON.parse(tool.parametersJson);
  } catch (error) {
    throw new ToolRuntimeError('internal', `tool "${tool.name}" has unparseable parameters_json`, { cause: error });
  }
  if (!isJSONObject(parameters)) {
    throw new ToolRuntimeError('internal', `tool "${tool.name}" has parameters_json that is not a JSON object`);
  }
  return {
    name: tool.name,
    description: tool.description,
    parameters,
    parametersJson: tool.parametersJson,
    strict: tool.strict,
    ...(tool.strictNote ? { strictNote: tool.strictNote } : {}),
    ...(tool.namespace ? { namespace: tool.namespace, namespaceDescription: tool.namespaceDescription } : {}),
    deferLoading: tool.deferLoading,
    executionMode: tool.executionMode === ExecutionMode.EXECUTION_MODE_PARALLEL ? 'parallel' : 'sequential',
    readOnly: tool.readOnly,
    destructive: tool.destructive,
    ...(tool.idempotent ? { idempotent: true } : {}),
    ...(tool.nativeTool === 'apply_patch' || tool.nativeTool === 'shell' ? { nativeTool: tool.nativeTool } : {}),
  };
}

const approvalModes: Record<NonNullable<TurnContextInput['approvalPolicy']>['mode'], ApprovalMode> = {
  none: ApprovalMode.APPROVAL_MODE_NONE,
  destructive: ApprovalMode.APPROVAL_MODE_DESTRUCTIVE,
  not_read_only: ApprovalMode.APPROVAL_MODE_NOT_READ_ONLY,
  listed: ApprovalMode.APPROVAL_MODE_LISTED,
};

/** Encodes the turn context for OpenTurn. */
export function turnContextToProto(context: TurnContextInput): ProtoTurnContext {
  return {
    agentId: context.agentId,
    turnId: context.turnId,
    kind: context.kind === 'workflow_task' ? TurnKind.TURN_KIND_WORKFLOW_TASK : TurnKind.TURN_KIND_TEXT,
    enabledSkills: context.enabledSkills ?? [],
    canSpawnJobs: context.canSpawnJobs ?? false,
    brainEnabled: context.brainEnabled ?? false,
    controlPlane: context.controlPlane ?? false,
    approvalPolicy: context.approvalPolicy
      ? { mode: approvalModes[context.approvalPolicy.mode], toolNames: context.approvalPolicy.toolNames ?? [] }
      : undefined,
    resultSchemaJson: context.resultSchemaJson ?? '',
    labels: context.labels ?? {},
    sandbox: context.sandbox
      ? {
          mode:
            context.sandbox.mode === 'read-only'
              ? SandboxMode.SANDBOX_MODE_READ_ONLY
              : context.sandbox.mode === 'workspace-write'
                ? SandboxMode.SANDBOX_MODE_WORKSPACE_WRITE
                : SandboxMode.SANDBOX_MODE_UNSPECIFIED,
          networkOff: context.sandbox.networkOff ?? false,
        }
      : undefined,
  };
}

function contentPartFromProto(part: ProtoContentPart): CallContentPart {
  switch (part.part?.$case) {
    case 'image':
      return { type: 'image', data: part.part.value.data, mimeType: part.part.value.mimeType };
    case 'json':
      return { type: 'json', json: part.part.value };
    case 'text':
      return { type: 'text', text: part.part.value };
    default:
      return { type: 'text', text: '' };
  }
}

function parseJson(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * Decodes one proto ToolResult. `details` is parsed on first read, not here: the loop never reads
 * it (the model sees `content`), and a tool's details can be large (a file listing, a page).
 */
export function callResultFromProto(callId: string, result: ProtoToolResult): CallResult {
  const decoded: CallResult = {
    callId,
    content: result.content.map(contentPartFromProto),
    completedLabel: result.completedLabel,
    terminateTurn: result.terminateTurn,
    ...(result.error ? { error: { code: result.error.code, message: result.error.message } } : {}),
    repairs: result.repairs,
    durationMs: result.durationMs,
  };
  const detailsJson = result.detailsJson;
  if (detailsJson) {
    let parsed: { value: unknown } | undefined;
    Object.defineProperty(decoded, 'details', {
      enumerable: true,
      configurable: true,
      get: () => (parsed ??= { value: parseJson(detailsJson) }).value,
      set: (value: unknown) => {
        parsed = { value };
      },
    });
  }
  return decoded;
}

/** Parses a presentation payload; the raw text when it is not JSON. */
export function presentationPayload(payloadJson: string): unknown {
  if (!payloadJson) return null;
  try {
    return JSON.parse(payloadJson);
  } catch {
    return payloadJson;
  }
}
