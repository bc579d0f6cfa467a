import type { z } from 'zod';
import { ToolRuntimeError } from '../errors.js';
import { isJSONObject, type JSONObject } from '../json.js';
import { toStrictJSONSchema } from '../schema/strict-schema.js';
import { zodToJSONSchema } from '../schema/zod-to-json-schema.js';
import type { AgentToolResult } from './tool-result.js';
import type { ExecutionMode, NativeToolKind, ToolExecutionContext, WorkerAgentTool } from './worker-agent-tool.js';

/** The provider tools a tool may stand for (WorkerAgentTool.nativeTool). */
export const NATIVE_TOOL_KINDS: readonly NativeToolKind[] = ['apply_patch', 'shell'];

/** The pattern providers accept for tool (and namespace) names. */
export const TOOL_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;

interface DefinitionBase<TParams> {
  name: string;
  description: string;
  strict?: boolean;
  /**
   * Why a tool that would be strict goes out with `strict: false` (a runtime schema strict mode
   * cannot represent); carried in the tool's definition for the controller and its logs.
   */
  strictNote?: string;
  namespace?: string;
  namespaceDescription?: string;
  deferLoading?: boolean;
  /** The JSON Schema of the value the tool returns as its `json` content part (see WorkerAgentTool). */
  outputSchema?: JSONObject;
  /** Defaults to `sequential`. */
  executionMode?: ExecutionMode;
  isReadOnly?: boolean;
  isDestructive?: boolean;
  /** Defaults to the tool's name. */
  describeActivity?: (params: TParams) => string;
  describeCompletedActivity?: (params: TParams, result: AgentToolResult) => string;
  /** See WorkerAgentTool.isIdempotent. */
  isIdempotent?: boolean;
  /** See WorkerAgentTool.nativeTool. */
  nativeTool?: NativeToolKind;
  /** See WorkerAgentTool.alwaysAsks. */
  alwaysAsks?: (params: TParams) => boolean;
  execute: (params: TParams, context: ToolExecutionContext) => Promise<AgentToolResult>;
}

/** A tool whose params come from a Zod schema (optionally sent to the model as a raw schema). */
export interface ZodToolDefinition<S extends z.ZodType> extends DefinitionBase<z.output<S>> {
  schema: S;
  /** When given, sent to the model instead of the schema generated from `schema`. */
  jsonSchema?: JSONObject;
}

/** A tool described by a raw JSON Schema only (validated with ajv). */
export interface JsonSchemaToolDefinition<TParams = Record<string, unknown>> extends DefinitionBase<TParams> {
  schema?: undefined;
  jsonSchema: JSONObject;
}

/**
 * Checks a tool definition and returns the WorkerAgentTool, with `params` inferred from the Zod
 * schema for `execute` and the labels.
 *
 * @throws ToolRuntimeError `invalid_definition` on a name outside `^[a-zA-Z0-9_-]{1,64}$` (tool or
 *   namespace), an empty description, neither `schema` nor `jsonSchema`, or a root that is not an
 *   object; and for a `strict` tool whose Zod schema (with no raw `jsonSchema`) has a part strict mode
 *   cannot represent (a tuple, a record, an object with extra keys...), naming the path, the
 *   construct and a way out (see `toStrictJSONSchema`).
 */
export function defineWorkerTool<S extends z.ZodType>(definition: ZodToolDefinition<S>): WorkerAgentTool<z.output<S>>;
export function defineWorkerTool<TParams = Record<string, unknown>>(
  definition: JsonSchemaToolDefinition<TParams>,
): WorkerAgentTool<TParams>;
export function defineWorkerTool(
  definition: ZodToolDefinition<z.ZodType> | JsonSchemaToolDefinition<unknown>,
): WorkerAgentTool<unknown> {
  const invalid = (message: string) => new ToolRuntimeError('invalid_definition', `tool ${JSON.stringify(definition.name)}: ${message}`);
  if (typeof definition.name !== 'string' || !TOOL_NAME_PATTERN.test(definition.name)) {
    throw invalid('the name must match ^[a-zA-Z0-9_-]{1,64}$');
  }
  if (typeof definition.description !== 'string' || definition.description.trim() === '') {
    throw invalid('the description must not be empty');
  }
  if (definition.namespace !== undefined && !TOOL_NAME_PATTERN.test(definition.namespace)) {
    throw invalid('the namespace must match ^[a-zA-Z0-9_-]{1,64}$');
  }
  if (definition.nativeTool !== undefined && !NATIVE_TOOL_KINDS.includes(definition.nativeTool)) {
    throw invalid(`nativeTool must be one of ${NATIVE_TOOL_KINDS.join(', ')}`);
  }
  if (definition.schema === undefined && definition.jsonSchema === undefined) {
    throw invalid('give a Zod `schema` or a raw `jsonSchema`');
  }
  if (definition.jsonSchema !== undefined) {
    if (!isJSONObject(definition.jsonSchema) || definition.jsonSchema.type !== 'object') {
      throw invalid('function tool parameters must use a root object schema');
    }
  }
  if (definition.schema !== undefined) {
    try {
      const jsonSchema = zodToJSONSchema(definition.schema);
      // Refused here, at definition time, rather than at the first turn that offers the tool.
      if (definition.strict === true && definition.jsonSchema === undefined) toStrictJSONSchema(jsonSchema);
    } catch (error) {
      throw invalid((error as Error).message);
    }
  }
  const name = definition.name;
  return {
    name,
    description: definition.description,
    schema: definition.schema,
    jsonSchema: definition.jsonSchema,
    strict: definition.strict ?? false,
    strictNote: definition.strictNote,
    namespace: definition.namespace,
    namespaceDescription: definition.namespaceDescription,
    deferLoading: definition.deferLoading ?? false,
    ...(definition.outputSchema !== undefined ? { outputSchema: definition.outputSchema } : {}),
    executionMode: definition.executionMode ?? 'sequential',
    isReadOnly: definition.isReadOnly ?? false,
    isDestructive: definition.isDestructive ?? false,
    ...(definition.isIdempotent ? { isIdempotent: true } : {}),
    describeActivity: definition.describeActivity ?? (() => name),
    describeCompletedActivity: definition.describeCompletedActivity,
    ...(definition.alwaysAsks ? { alwaysAsks: definition.alwaysAsks } : {}),
    ...(definition.nativeTool ? { nativeTool: definition.nativeTool } : {}),
    execute: definition.execute,
  };
}
