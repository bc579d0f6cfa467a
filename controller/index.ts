// The package's `tools-runtime/controller` entry: driving sidecars from your own program (named
// exports only). The CLIs are `tools-runtime` (npm start's turn) and `tools-runtime-controller`.
export { createSidecarClient, type SidecarClient, type SidecarClientOptions } from './sidecar-client/create-sidecar-client.js';
export type { OpenTurnOptions, SidecarTurn, SidecarTurnTimeouts } from './sidecar-client/sidecar-turn.js';
export { spawnSidecar, type SpawnedSidecar } from './sidecar-client/spawn-sidecar.js';
export type {
  ApprovalDecision,
  ApprovalPolicyInput,
  ApprovalRequestEvent,
  ApproveCallback,
  CallContentPart,
  CallEvent,
  CallHandle,
  CallRequest,
  CallResult,
  ClientReplyPayload,
  ClientRequestEvent,
  ClientRequestHandler,
  ToolDefinition,
  ToolTurn,
  TurnContextInput,
  TurnKindName,
} from './sidecar-client/sidecar-types.js';
export { runTurn, DEFAULT_BASE_INSTRUCTIONS, type RunTurnOptions, type TurnOutcome } from './loop/run-turn.js';
export { runTaskTurn, type RunTaskTurnOptions, type TaskTurnOutcome } from './loop/run-task-turn.js';
export type { TurnEvent, TurnStatus } from './loop/turn-events.js';
export { createOpenAIResponsesModel, type OpenAIResponsesModelOptions } from './model/openai-responses-model.js';
export type { ModelRequest, ModelResponse, ModelUsage, ResponseItem, ResponsesModel } from './model/responses-model.js';
export { startEmbeddedModel, EMBEDDED_MODEL_NAME, type EmbeddedModel } from './model/embedded-model.js';
