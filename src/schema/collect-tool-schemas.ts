import type { z } from 'zod';
import { ToolRuntimeError } from '../errors.js';
import type { JSONObject } from '../json.js';
import type { ExecutionMode, NativeToolKind, WorkerAgentTool } from '../tool/worker-agent-tool.js';
import { toStrictJSONSchema } from './strict-schema.js';
import { toolKey } from '../tool/tool-key.js';
import { zodToJSONSchema } from './zod-to-json-schema.js';

/** One tool's definition as the model (and the wire) sees it: plain data, no functions. */
export interface ToolSchema {
  name: string;
  description: string;
  /** The JSON Schema of the parameters: the raw `jsonSchema` itself when given. */
  parameters: JSONObject;
  strict: boolean;
  /** Why a tool that would be strict is sent non-strict; absent otherwise. */
  strictNote?: string;
  namespace?: string;
  namespaceDescription?: string;
  deferLoading: boolean;
  executionMode: ExecutionMode;
  readOnly: boolean;
  destructive: boolean;
  /** WorkerAgentTool.isIdempotent; absent when false. */
  idempotent?: boolean;
  /** The provider tool this tool executes (WorkerAgentTool.nativeTool); absent for most. */
  nativeTool?: NativeToolKind;
}

// In its own module so that code which only names tools (the catalogs) does not load zod with this one.
export { toolKey } from '../tool/tool-key.js';

// Tools are rebuilt every turn but their Zod schemas are usually module constants: caching on both
// keeps a repeated assembly at a couple of WeakMap lookups per tool.
const byTool = new WeakMap<WorkerAgentTool, JSONObject>();
const byZodSchema = new WeakMap<z.ZodType, { plain?: JSONObject; strict?: JSONObject }>();

/**
 * The JSON Schema that goes on the wire for one tool: the raw `jsonSchema` unchanged (whatever
 * `strict` says: it is the owner's contract); else `zodToJSONSchema(schema)`, passed through
 * `toStrictJSONSchema` when the tool is strict. Cached per tool object and per Zod schema.
 *
 * @throws ToolRuntimeError `invalid_definition` when the tool has neither schema, its Zod schema
 *   cannot be converted to a root object schema, or (strict) has a part strict mode cannot represent.
 */
export function toolParameters(tool: WorkerAgentTool): JSONObject {
  const cached = byTool.get(tool);
  if (cached) return cached;
  let parameters: JSONObject;
  if (tool.jsonSchema !== undefined) {
    parameters = tool.jsonSchema;
  } else if (tool.schema !== undefined) {
    let entry = byZodSchema.get(tool.schema);
    if (!entry) byZodSchema.set(tool.schema, (entry = {}));
    if (tool.strict) {
      try {
        entry.strict ??= toStrictJSONSchema(entry.plain ?? zodToJSONSchema(tool.schema));
      } catch (error) {
        throw new ToolRuntimeError('invalid_definition', `tool ${JSON.stringify(tool.name)}: ${(error as Error).message}`, { cause: error });
      }
      parameters = entry.strict;
    } else {
      entry.plain ??= zodToJSONSchema(tool.schema);
      parameters = entry.plain;
    }
  } else {
    throw new ToolRuntimeError('invalid_definition', `tool ${JSON.stringify(tool.name)} has neither a Zod schema nor a jsonSchema`);
  }
  byTool.set(tool, parameters);
  return parameters;
}

/**
 * One plain definition per tool, in the tools' order.
 *
 * @throws ToolRuntimeError `duplicate_tool` when two tools share a namespace and name;
 *   `invalid_definition` as `toolParameters` does.
 */
export function collectToolSchemas(tools: readonly WorkerAgentTool[]): ToolSchema[] {
  const seen = new Set<string>();
  const schemas: ToolSchema[] = [];
  for (const tool of tools) {
    const key = toolKey(tool.name, tool.namespace);
    if (seen.has(key)) throw duplicateToolError(key);
    seen.add(key);
    const schema: ToolSchema = {
      name: tool.name,
      description: tool.description,
      parameters: toolParameters(tool),
      strict: tool.strict,
      deferLoading: tool.deferLoading,
      executionMode: tool.executionMode,
      readOnly: tool.isReadOnly,
      destructive: tool.isDestructive,
    };
    if (tool.strictNote !== undefined && tool.strictNote !== '') schema.strictNote = tool.strictNote;
    if (tool.namespace !== undefined) schema.namespace = tool.namespace;
    if (tool.namespaceDescription !== undefined) schema.namespaceDescription = tool.namespaceDescription;
    if (tool.nativeTool !== undefined) schema.nativeTool = tool.nativeTool;
    if (tool.isIdempotent) schema.idempotent = true;
    schemas.push(schema);
  }
  return schemas;
}

/** The error for two tools under one key, shared with `agentToolMap`. */
export function duplicateToolError(key: string): ToolRuntimeError {
  return new ToolRuntimeError(
    'duplicate_tool',
    `two tools are named ${JSON.stringify(key)}: a tool's namespace and name must be unique within a turn`,
  );
}
