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
