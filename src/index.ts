// The public API of the shared library: named exports only.
export { ToolRuntimeError, isToolRuntimeError, errorMessage, type ToolRuntimeErrorCode } from './errors.js';
export { type JSONValue, type JSONObject, isJSONObject } from './json.js';
export { createJsonLogger, silentLogger, type Logger, type LogLevel } from './logger.js';
export {
  type ContentPart,
  type PresentationEvent,
  type AgentToolResult,
  textContent,
  textResult,
} from './tool/tool-result.js';
export {
  type ExecutionMode,
  type ToolExecutionContext,
  type WorkerAgentTool,
  type AnyWorkerAgentTool,
} from './tool/worker-agent-tool.js';
export {
  defineWorkerTool,
  TOOL_NAME_PATTERN,
  type ZodToolDefinition,
  type JsonSchemaToolDefinition,
} from './tool/define-worker-tool.js';
export { zodToJSONSchema } from './schema/zod-to-json-schema.js';
export { truncateMiddle, type TruncatedText } from './text/truncate-middle.js';
export {
  convertToStrictJSONSchema,
  toStrictJSONSchema,
  type StrictSchemaConversion,
  type StrictSchemaOptions,
  type StrictSchemaRefusal,
  type StrictSchemaSource,
} from './schema/strict-schema.js';
export { collectToolSchemas, toolParameters, toolKey, type ToolSchema } from './schema/collect-tool-schemas.js';
export { agentToolMap } from './tool/agent-tool-map.js';
export {
  repairArguments,
  extractCodeFence,
  findBalancedEnd,
  MAX_REPAIR_DEPTH,
  type RepairStep,
  type RepairResult,
} from './arguments/repair-arguments.js';
export {
  validateToolArguments,
  DEFAULT_MAX_ARGUMENT_BYTES,
  type ValidateToolArgumentsOptions,
  type ValidateToolArgumentsResult,
  type ArgumentsError,
} from './arguments/validate-tool-arguments.js';
export { prepareStrictArguments, type StrictArgumentsResult } from './arguments/strict-zod-arguments.js';
export { compileJsonSchema, type CompiledJsonSchema } from './arguments/json-schema-validator.js';
export { formatIssues, type ArgumentIssue } from './arguments/format-issues.js';
