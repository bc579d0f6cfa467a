// The public API of the shared library, and the package's main entry (`tools-runtime`): named
// exports only. Defining tools, converting their schemas, repairing and validating a model's
// arguments. Internals (the repair ladder's steps, the ajv cache, the tool map) are imported from
// their own modules by the code and tests that need them; `tools-runtime/sidecar` hosts tools and
// `tools-runtime/controller` drives sidecars.
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
  type NativeToolKind,
  type ToolExecutionContext,
  type WorkerAgentTool,
  type AnyWorkerAgentTool,
} from './tool/worker-agent-tool.js';
export {
  defineWorkerTool,
  TOOL_NAME_PATTERN,
  NATIVE_TOOL_KINDS,
  type ZodToolDefinition,
  type JsonSchemaToolDefinition,
} from './tool/define-worker-tool.js';
export { zodToJSONSchema } from './schema/zod-to-json-schema.js';
export { truncateMiddle, type TruncatedText } from './text/truncate-middle.js';
export { headOf, tailOf } from './text/cut-text.js';
export {
  convertToStrictJSONSchema,
  toStrictJSONSchema,
  type StrictSchemaConversion,
  type StrictSchemaOptions,
  type StrictSchemaRefusal,
  type StrictSchemaSource,
} from './schema/strict-schema.js';
export { collectToolSchemas, type ToolSchema } from './schema/collect-tool-schemas.js';
export { repairArguments, type RepairStep, type RepairResult } from './arguments/repair-arguments.js';
export {
  validateToolArguments,
  DEFAULT_MAX_ARGUMENT_BYTES,
  type ValidateToolArgumentsOptions,
  type ValidateToolArgumentsResult,
  type ArgumentsError,
} from './arguments/validate-tool-arguments.js';
